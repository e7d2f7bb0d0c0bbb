// scheduler/tile_bounded and scheduler/demanded_domains: bounded sums given the rectangular
// domains tiles need, and values computed only where they are read.
#include <doctest/doctest.h>

#include "scheduler/demanded_domains.h"
#include "scheduler/tile_bounded.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
using kiln::test::check_order;
using kiln::test::cpu_cut_options;
using kiln::test::gpu_cut_options;
using kiln::test::plan_of;

TEST_CASE("tile_bounded: bounded contractions get a rectangular domain for block tiles") {
  const CutOptions opt = gpu_cut_options();
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 5}, {"D", 4}};
  // In f32 there is no fused kernel: the scores (j <= r on the element: summed over the box,
  // then the identity put back by an epilogue) and the weighted sum (j <= r on the summed j: a
  // select on the term) become block-tiled contractions; the row max and sum keep their
  // bounds (one thread walks each row's triangle).
  KernelPlan att = plan_of("ops/nn.toml:causal_attention", sizes, DType::f32, {}, true);
  const size_t before = att.kernels[0].statements.size();
  CHECK(tile_bounded_contractions(att) == 2);
  const std::vector<Statement>& st = att.kernels[0].statements;
  REQUIRE(st.size() == before + 1);
  int bounded = 0, epilogues = 0, selects = 0;
  for (size_t p = 0; p < st.size(); ++p) {
    CHECK(st[p].name == "S" + std::to_string(p));
    bounded += !st[p].domain.empty();
    if (st[p].kind == Statement::Kind::assign && st[p].value->op == Op::where && p > 0 &&
        st[p - 1].kind == Statement::Kind::reduce_update && st[p - 1].buffer == st[p].buffer)
      ++epilogues;
    if (st[p].kind == Statement::Kind::reduce_update && st[p].value->op == Op::where) ++selects;
  }
  CHECK(bounded == 2);
  CHECK(epilogues == 1);
  CHECK(selects == 1);
  CHECK(cut_kernels(att, opt).kernels == 3);
  check_order(att);
  // The fused kernel of f16 keeps its bounds (it skips the key blocks outside them itself), and
  // a prefix sum is no contraction to tile.
  KernelPlan half = plan_of("ops/nn.toml:causal_attention", sizes, DType::f16, {}, true);
  CHECK(tile_bounded_contractions(half) == 0);
  KernelPlan prefix = plan_of("ops/reduce.toml:prefix_sum_bounded", {{"N", 7}});
  CHECK(tile_bounded_contractions(prefix) == 0);
}

TEST_CASE(
    "tile_bounded: on the CPU the bounded sums a register tile takes get a rectangular domain") {
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 5}, {"D", 4}};
  // The scores (lanes j, summed d) and P·V (lanes d, summed j under j <= r) take register tiles
  // once rectangular; the row max and sum (no lanes to tile) keep their bounds.
  KernelPlan att = plan_of("ops/nn.toml:causal_attention", sizes);
  CHECK(tile_bounded_contractions(att, BoundedTiles::cpu_registers) == 2);
  int bounded = 0;
  for (const Statement& st : att.kernels[0].statements)
    bounded += !st.domain.empty();
  CHECK(bounded == 2);
  KernelPlan prefix = plan_of("ops/reduce.toml:prefix_sum_bounded", {{"N", 7}});
  CHECK(tile_bounded_contractions(prefix, BoundedTiles::cpu_registers) == 0);

  // Where every reader reads the scores inside their bound (the row max, and the exponentials
  // once demanded_domains gave them the bound), no epilogue puts the identity back outside it:
  // the box statement records the bound as the points that are read.
  KernelPlan read = plan_of("ops/nn.toml:causal_attention", sizes);
  const size_t before = read.kernels[0].statements.size();
  REQUIRE(restrict_demanded_domains(read) == 1);
  CHECK(tile_bounded_contractions(read, BoundedTiles::cpu_registers) == 2);
  CHECK(read.kernels[0].statements.size() == before);
  int needed = 0, epilogues = 0;
  for (const Statement& st : read.kernels[0].statements) {
    needed += !st.needed.empty();
    epilogues += st.kind == Statement::Kind::assign && st.value->op == Op::where;
  }
  CHECK(needed == 1);
  CHECK(epilogues == 0);
}

/** The statement of `plan` that writes buffer `b` by assignment, or null. */
const Statement* assigns(const KernelPlan& plan, int b) {
  for (const Kernel& k : plan.kernels)
    for (const Statement& s : k.statements)
      if (s.buffer == b && s.kind == Statement::Kind::assign) return &s;
  return nullptr;
}

TEST_CASE("demanded_domains: a value read only inside one bound is computed inside it") {
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 5}, {"D", 4}};
  // Causal attention's exponentials: elementwise over the square, read by the row sum and by
  // P·V under j <= i only. They take that bound (in their own iterators).
  KernelPlan att = plan_of("ops/nn.toml:causal_attention", sizes);
  const Statement* exp_before = nullptr;
  for (const Statement& s : att.kernels[0].statements)
    if (s.kind == Statement::Kind::assign && s.value && s.value->op == Op::exp2) exp_before = &s;
  REQUIRE(exp_before);
  CHECK(exp_before->domain.empty());
  const int e = exp_before->buffer;
  CHECK(restrict_demanded_domains(att) == 1);
  const Statement* exp = assigns(att, e);
  REQUIRE(exp);
  REQUIRE(exp->domain.size() == 1);
  // The row max's bound (j <= i), whose iterators are the exponentials' too.
  for (const Statement& s : att.kernels[0].statements)
    if (s.kind == Statement::Kind::reduce_update && s.reduce == ReduceKind::max) {
      REQUIRE(s.domain.size() == 1);
      CHECK(exp->domain[0] == s.domain[0]);
    }
  // Run again, nothing more to do: the writer has its bound.
  CHECK(restrict_demanded_domains(att) == 0);
  // The cut and the rectangular P·V that follow keep the plan in order.
  tile_bounded_contractions(att, BoundedTiles::cpu_registers);
  cut_kernels(att, cpu_cut_options());
  check_order(att);

  // Unbounded readers (plain attention), a bounded and an unbounded reader of one value, and an
  // output read inside a bound are left as they are.
  KernelPlan plain =
      plan_of("ops/nn.toml:attention", {{"B", 1}, {"H", 2}, {"L", 5}, {"S", 6}, {"D", 4}});
  CHECK(restrict_demanded_domains(plain) == 0);
  const SizeBindings nm = {{"N", 6}, {"M", 3}};
  KernelPlan mixed = plan_of("tests/regressions/demanded_domains.toml:bounded_and_whole", nm);
  CHECK(restrict_demanded_domains(mixed) == 0);
  KernelPlan two = plan_of("tests/regressions/demanded_domains.toml:two_bounds", nm);
  CHECK(restrict_demanded_domains(two) == 0);
  KernelPlan one = plan_of("tests/regressions/demanded_domains.toml:one_bound", nm);
  CHECK(restrict_demanded_domains(one) == 1);
}
