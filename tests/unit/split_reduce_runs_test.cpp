// scheduler/split_reduce_runs: a reduce over axes in separate runs of the memory it reads (a
// batch norm's sums over b and p, the channel between them) becomes one reduce per run,
// innermost first, computing the same values; reduces over one run stay. On the GPU the
// partial sums then run a block per (c, b) row, cut from the sums over b.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/split_reduce_runs.h"
#include "tests/support/harness.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/** The axes of every reduce of `g`, in order. */
std::vector<std::vector<int>> reduce_axes(const Graph& g) {
  std::vector<std::vector<int>> out;
  for (const Node& n : g.nodes)
    if (n.op == Op::reduce) out.push_back(n.axes);
  return out;
}

}  // namespace

TEST_CASE("split_reduce_runs: a batch norm's statistics are summed a run at a time") {
  test::Run r = test::lowered("tests/regressions/user_kernels.toml:batch_norm_train",
                              {{"B", 3}, {"C", 4}, {"P", 5}});
  Graph g = r.graph;
  // mean and var: sum(x[b, c, p], b, p) reads x as [C, B, P], reduced over positions 1 and 2,
  // which are x's dimensions 0 and 2 with the channel between them.
  REQUIRE(reduce_axes(g) == std::vector<std::vector<int>>{{1, 2}, {1, 2}});
  CHECK(split_reduce_runs(g) == 2);
  CHECK(verify(g).empty());
  // Each: over p (the innermost run) first, then over b.
  CHECK(reduce_axes(g) == std::vector<std::vector<int>>{{2}, {1}, {2}, {1}});
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], r.outputs[0].f, 1e-5, 1e-5);
  CHECK(split_reduce_runs(g) == 0);  // done once
}

TEST_CASE("split_reduce_runs: reductions over one run of memory stay as they are") {
  // Rows, a middle axis, a group norm's groups (one run once reshaped), and sums over
  // trailing axes that are contiguous in memory.
  for (const char* target : {"ops/nn.toml:layernorm", "ops/nn.toml:softmax",
                             "tests/regressions/user_kernels.toml:softmax_dim1",
                             "tests/regressions/user_kernels.toml:group_norm",
                             "tests/regressions/user_kernels.toml:layernorm_channels_first"}) {
    CAPTURE(target);
    // (A batch of rows: one row alone is a sum to one value, split in slices, below.)
    test::Run r = test::lowered(target, {{"N", 6}, {"B", 2}, {"C", 4}, {"P", 5}}, {3});
    Graph g = r.graph;
    CHECK(split_reduce_runs(g) == 0);
  }
  fs::path spec = fs::temp_directory_path() / "kiln_split_reduce_runs.toml";
  std::ofstream(spec) << R"([trailing]
in    = { x = "f32[B, C, P]" }
out   = { y = "f32[B]" }
body  = """
y[b] = sum(x[b, c, p], c, p)
"""

[outer_and_inner]
in    = { x = "f32[B, C, P]" }
out   = { y = "f32[C]" }
body  = """
y = reshape(sum(x, axis=[0, 2]), [C])
"""
)";
  test::Run trailing = test::lowered(spec.string() + ":trailing", {{"B", 2}, {"C", 3}, {"P", 4}});
  Graph t = trailing.graph;
  CHECK(split_reduce_runs(t) == 0);
  // Axes 0 and 2 of x itself, no view between: split too.
  test::Run both =
      test::lowered(spec.string() + ":outer_and_inner", {{"B", 2}, {"C", 3}, {"P", 4}});
  fs::remove(spec);
  Graph o = both.graph;
  CHECK(split_reduce_runs(o) == 1);
  CHECK(verify(o).empty());
  std::vector<Tensor> got = interpret(o, both.sizes, both.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], both.outputs[0].f, 1e-5, 1e-5);
}

TEST_CASE("split_reduce_runs: a whole tensor reduced to one value sums its rows first") {
  fs::path spec = fs::temp_directory_path() / "kiln_split_reduce_runs_total.toml";
  std::ofstream(spec) << R"([total]
in    = { x = "f32[M, N]" }
out   = { y = "f32[]" }
body  = """
y = reshape(sum(x * x, axis=[0, 1]), [])
"""
)";
  test::Run r = test::lowered(spec.string() + ":total", {{"M", 5}, {"N", 7}});
  fs::remove(spec);
  Graph g = r.graph;
  REQUIRE(reduce_axes(g) == std::vector<std::vector<int>>{{0, 1}});
  CHECK(split_reduce_runs(g) == 1);
  CHECK(verify(g).empty());
  CHECK(reduce_axes(g) == std::vector<std::vector<int>>{{1}, {0}});
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], r.outputs[0].f, 1e-5, 1e-5);
}

TEST_CASE("split_reduce_runs: a long sum to one value over one axis runs in slices") {
  // A loss over a flattened tensor: one reduce over its one axis, on one GPU block before.
  fs::path spec = fs::temp_directory_path() / "kiln_split_reduce_runs_slices.toml";
  std::ofstream(spec) << R"([flat]
in    = { x = "f32[M, N]" }
out   = { y = "f32[]" }
body  = """
d = reshape(x, [-1])
y = reshape(sum(d * d, axis=0), [])
"""

[peak]
in    = { x = "f32[N]" }
out   = { y = "f32[]" }
body  = """
y = max(x, axis=0)
"""

[short]
in    = { x = "f32[100]" }
out   = { y = "f32[]" }
body  = """
y = sum(x, axis=0)
"""
)";
  // 5 · 1700 terms: three slices of 4096, the last one partial (masked to zero past the end).
  test::Run r = test::lowered(spec.string() + ":flat", {{"M", 5}, {"N", 1700}});
  Graph g = r.graph;
  REQUIRE(reduce_axes(g) == std::vector<std::vector<int>>{{0}});
  CHECK(split_reduce_runs(g) == 1);
  CHECK(verify(g).empty());
  CHECK(reduce_axes(g) == std::vector<std::vector<int>>{{1}, {0}});
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], r.outputs[0].f, 1e-5, 1e-5);
  // A maximum (the masked points would read as zero) and a sum known to be short stay.
  test::Run peak = test::lowered(spec.string() + ":peak", {{"N", 9000}});
  Graph p = peak.graph;
  CHECK(split_reduce_runs(p) == 0);
  test::Run small = test::lowered(spec.string() + ":short", {});
  fs::remove(spec);
  Graph q = small.graph;
  CHECK(split_reduce_runs(q) == 0);
}

TEST_CASE("split_reduce_runs: on the GPU the partial sums get a kernel, a block per row") {
  KernelPlan plan = test::plan_of("tests/regressions/user_kernels.toml:batch_norm_train",
                                  {{"B", 3}, {"C", 4}, {"P", 5}}, DType::f32, {}, true);
  cut_kernels(plan, test::gpu_cut_options());
  test::check_order(plan);
  // Partial sums over p per (c, b); their sum over b with the mean; the same for the variance;
  // the normalisation.
  REQUIRE(plan.kernels.size() == 5);
  for (int k : {0, 2}) {
    const Kernel& partial = plan.kernels[k];
    REQUIRE(partial.statements.size() == 2);
    CHECK(partial.statements[1].kind == Statement::Kind::reduce_update);
    CHECK(partial.statements[1].extents.size() == 3);  // (c, b) rows of p
    CHECK(partial.statements[1].index.at(1) == IntExpr::var("i1"));
  }
  for (int k : {1, 3}) {
    const Statement& column = plan.kernels[k].statements.at(1);
    CHECK(column.kind == Statement::Kind::reduce_update);
    REQUIRE(column.extents.size() >= 2);  // over b, per c (a unit dimension after them)
    CHECK(column.extents[1] == IntExpr::var("B"));
    for (const IntExpr& e : column.index)
      CHECK(e != IntExpr::var("i1"));
  }
}
