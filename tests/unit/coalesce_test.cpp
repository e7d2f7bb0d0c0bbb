// scheduler/coalesce_dims: size-1 dimensions leave the domains, dimensions that every access walks
// together merge into one, and nothing else changes; softmax over 40 batch dimensions gets the
// loop nest of softmax over one.
#include <doctest/doctest.h>

#include <string>

#include "backends/backend.h"
#include "driver/pipeline.h"
#include "dsl/lower.h"
#include "ir/limits.h"
#include "scheduler/build_statements.h"
#include "scheduler/coalesce_dims.h"
#include "tests/support/kernel_builder.h"

namespace kiln {

namespace {

using test::depth;
using test::it;
using test::KernelBuilder;
using test::load;

const IntExpr M = IntExpr::var("M"), N = IntExpr::var("N"), B = IntExpr::var("B");

int count_loops(const LoopNode& n) {
  int count = n.kind == LoopNode::Kind::loop;
  for (const auto& c : n.body)
    count += count_loops(*c);
  return count;
}

/** softmax of ops/nn.toml with `batch` dimensions for its `...`, each of size 1 when
 *  `specialize_ones`, scheduled by the whole pipeline. */
LoweredProgram softmax(int batch, bool specialize_ones) {
  Library lib;
  const SpecFile& f = lib.load("ops/nn.toml");
  const Composite* c = nullptr;
  for (const auto& x : f.composites)
    if (x->name == "softmax") c = x.get();
  REQUIRE(c);
  LowerOptions opt;
  opt.batch_rank = batch;
  if (specialize_ones)
    for (int k = 0; k < batch; ++k)
      opt.fixed_sizes["batch" + std::to_string(k)] = 1;
  return lower_program(lower_composite(lib, *c, opt), backend_for("c"), CompileOptions{});
}

}  // namespace

TEST_CASE("coalesce: a softmax chain over [B0, B1, B2, N] runs over [B0 * B1 * B2, N]") {
  IntExpr b0 = IntExpr::var("B0"), b1 = IntExpr::var("B1"), b2 = IntExpr::var("B2");
  KernelBuilder p;
  int x = p.buffer({b0, b1, b2, N}), m = p.buffer({b0, b1, b2, 1}), y = p.buffer({b0, b1, b2, N});
  p.stmt(Statement::Kind::reduce_init, {b0, b1, b2}, m, {it(0), it(1), it(2), 0});
  p.stmt(Statement::Kind::reduce_update, {b0, b1, b2, N}, m, {it(0), it(1), it(2), 0},
         load(x, {it(0), it(1), it(2), it(3)}));
  p.stmt(Statement::Kind::assign, {b0, b1, b2, N}, y, {it(0), it(1), it(2), it(3)},
         load(m, {it(0), it(1), it(2), 0}));
  CoalesceCount n = coalesce_dims(p.plan);
  CHECK(n.dropped == 0);
  CHECK(n.merged == 6);
  CHECK(p.at(0).extents == Shape{b0 * b1 * b2});
  CHECK(p.at(0).index == std::vector<IntExpr>{0, 0, it(0), 0});
  CHECK(p.at(1).extents == Shape{b0 * b1 * b2, N});
  CHECK(p.at(1).value->index == std::vector<IntExpr>{0, 0, it(0), it(1)});
  CHECK(p.at(2).extents == Shape{b0 * b1 * b2, N});
  CHECK(p.at(2).index == std::vector<IntExpr>{0, 0, it(0), it(1)});
  CHECK(p.at(2).value->index == std::vector<IntExpr>{0, 0, it(0), 0});
}

TEST_CASE("coalesce: each kernel addresses a buffer it only reads in its own form") {
  // Kernel 0 writes t[b, i, j] from a transpose (no dimensions merge there); kernel 1 reduces t's
  // rows. isl sees one kernel at a time, so kernel 1 runs over [B * I, J] while kernel 0 keeps
  // [B, I, J] (attention: the scores come from Q·Kᵀ, whose key operand moves along neither b·i).
  IntExpr b = IntExpr::var("B"), i = IntExpr::var("I"), j = IntExpr::var("J");
  KernelBuilder p;
  int x = p.buffer({b, j, i}), t = p.buffer({b, i, j}), m = p.buffer({b, i, 1});
  p.stmt(Statement::Kind::assign, {b, i, j}, t, {it(0), it(1), it(2)},
         load(x, {it(0), it(2), it(1)}));
  p.plan.kernels.emplace_back();
  p.plan.kernels[1].buffers = {t, m};
  std::swap(p.plan.kernels[0].statements, p.plan.kernels[1].statements);
  p.stmt(Statement::Kind::reduce_init, {b, i}, m, {it(0), it(1), 0});
  p.stmt(Statement::Kind::reduce_update, {b, i, j}, m, {it(0), it(1), 0},
         load(t, {it(0), it(1), it(2)}))
      .reduce = ReduceKind::max;
  std::swap(p.plan.kernels[0].statements, p.plan.kernels[1].statements);
  CoalesceCount n = coalesce_dims(p.plan);
  CHECK(n.merged == 2);
  const Kernel &writer = p.plan.kernels[0], &reader = p.plan.kernels[1];
  CHECK(writer.statements.at(0).extents == Shape{b, i, j});
  CHECK(writer.statements.at(0).index == std::vector<IntExpr>{it(0), it(1), it(2)});
  CHECK(reader.statements.at(0).extents == Shape{b * i});
  CHECK(reader.statements.at(1).extents == Shape{b * i, j});
  CHECK(reader.statements.at(1).value->index == std::vector<IntExpr>{0, it(0), it(1)});
  CHECK(reader.statements.at(1).index == std::vector<IntExpr>{0, it(0), 0});
}

TEST_CASE("coalesce: size-1 dimensions are dropped and their iterators become 0") {
  KernelBuilder p;
  int x = p.buffer({1, N, 1}), y = p.buffer({1, N, 1});
  auto masked = std::make_shared<ScalarExpr>(*load(x, {it(0), it(1), it(2)}));
  masked->mask.push_back({it(1) - it(0), N});
  p.stmt(Statement::Kind::assign, {1, N, 1}, y, {it(0), it(1), it(2)}, masked);
  CoalesceCount n = coalesce_dims(p.plan);
  CHECK(n.dropped == 2);
  CHECK(p.at(0).extents == Shape{N});
  CHECK(p.at(0).index == std::vector<IntExpr>{0, it(0), 0});
  CHECK(p.at(0).value->index == std::vector<IntExpr>{0, it(0), 0});
  CHECK(p.at(0).value->mask.at(0).expr == it(0));
}

TEST_CASE("coalesce: dimensions on either side of a size-1 dimension merge") {
  // [M, 1, N] specialised from [M, B, N] with B = 1: M and N merge across the unit position.
  KernelBuilder p;
  int x = p.buffer({M, 1, N}), y = p.buffer({M, 1, N});
  p.stmt(Statement::Kind::assign, {M, 1, N}, y, {it(0), it(1), it(2)},
         load(x, {it(0), it(1), it(2)}));
  CoalesceCount n = coalesce_dims(p.plan);
  CHECK(n.dropped == 1);
  CHECK(n.merged == 1);
  CHECK(p.at(0).extents == Shape{M * N});
  CHECK(p.at(0).index == std::vector<IntExpr>{0, 0, it(0)});
  CHECK(p.at(0).value->index == std::vector<IntExpr>{0, 0, it(0)});
}

TEST_CASE("coalesce: transposes, broadcasts, masks and extern buffers keep their dimensions") {
  SUBCASE("a written buffer read transposed") {
    KernelBuilder p;
    int x = p.buffer({M, N}), t = p.buffer({M, N}), y = p.buffer({N, M});
    p.stmt(Statement::Kind::assign, {M, N}, t, {it(0), it(1)}, load(x, {it(0), it(1)}));
    p.stmt(Statement::Kind::assign, {N, M}, y, {it(0), it(1)}, load(t, {it(1), it(0)}));
    CHECK(coalesce_dims(p.plan).merged == 0);
    CHECK(p.at(0).extents == Shape{M, N});
    CHECK(p.at(1).extents == Shape{N, M});
  }
  SUBCASE("a broadcast of one of the two dimensions") {
    KernelBuilder p;
    int x = p.buffer({N}), y = p.buffer({M, N});
    p.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, load(x, {it(1)}));
    CHECK(coalesce_dims(p.plan).merged == 0);
  }
  SUBCASE("a mask on an iterator") {
    KernelBuilder p;
    int x = p.buffer({M, N}), y = p.buffer({M, N});
    auto masked = std::make_shared<ScalarExpr>(*load(x, {it(0), it(1)}));
    masked->mask.push_back({it(1), M});
    p.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, masked);
    CHECK(coalesce_dims(p.plan).merged == 0);
  }
  SUBCASE("the result of an extern call") {
    KernelBuilder p;
    int a = p.buffer({M, N}), t = p.buffer({M, N}), y = p.buffer({M, N});
    Statement& call = p.stmt(Statement::Kind::call, {}, t, {});
    call.routine = "gemm";
    call.args = {a, a};
    p.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, load(t, {it(0), it(1)}));
    CHECK(coalesce_dims(p.plan).merged == 0);
    CHECK(p.at(1).extents == Shape{M, N});
  }
  SUBCASE("one statement reads a written buffer in another form") {
    KernelBuilder p;
    int x = p.buffer({B, M, N}), t = p.buffer({B, M, N}), y = p.buffer({B, M, N});
    p.stmt(Statement::Kind::assign, {B, M, N}, t, {it(0), it(1), it(2)},
           load(x, {it(0), it(1), it(2)}));
    p.stmt(Statement::Kind::assign, {B, M, N}, y, {it(0), it(1), it(2)},
           load(t, {it(0), it(1), 0}));
    // t's positions 1 and 2 are read as (i1, 0): only B and M merge, in both statements.
    CHECK(coalesce_dims(p.plan).merged == 2);
    CHECK(p.at(0).extents == Shape{B * M, N});
    CHECK(p.at(1).extents == Shape{B * M, N});
    CHECK(p.at(1).value->index == std::vector<IntExpr>{0, it(0), 0});
  }
}

TEST_CASE("coalesce: softmax over 40 batch dimensions has the loop nest of softmax over one") {
  LoweredProgram one = softmax(1, false), many = softmax(40, false);
  REQUIRE(one.nests.size() == 1);
  REQUIRE(many.nests.size() == 1);
  CHECK(count_loops(*many.nests[0].root) == count_loops(*one.nests[0].root));
  // rows, the sum's blocks (promote_accumulators.h), the strips prefetching the next row
  // (prefetch_rows.h), N
  CHECK(depth(*many.nests[0].root) == 4);
  for (const Statement& s : many.plan.kernels[0].statements)
    CHECK(s.extents.size() <= 2);

  // Specialised to size 1, the 40 batch dimensions disappear: the nest of softmax without batch.
  LoweredProgram none = softmax(0, false), ones = softmax(40, true);
  CHECK(count_loops(*ones.nests[0].root) == count_loops(*none.nests[0].root));
  CHECK(depth(*ones.nests[0].root) == 2);
}

}  // namespace kiln

namespace kiln {

TEST_CASE("limits: the scheduler refuses a buffer of more than kMaxRank dimensions") {
  for (int rank : {kMaxRank, kMaxRank + 1}) {
    Graph g;
    g.outputs.push_back({"y", g.input("x", DType::f32, Shape(rank, IntExpr(2)), false)});
    CAPTURE(rank);
    if (rank <= kMaxRank)
      CHECK_NOTHROW(build_statements(g));
    else
      CHECK_THROWS_WITH_AS(build_statements(g), doctest::Contains("above the limit of 64"),
                           std::runtime_error);
  }
}

}  // namespace kiln
