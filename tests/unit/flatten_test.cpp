// scheduler/flatten_statements: contiguous elementwise statements become one loop; anything that
// is not a row-major walk of whole buffers of the domain's shape stays as it is.
#include <doctest/doctest.h>

#include "scheduler/build_statements.h"
#include "scheduler/flatten_statements.h"

namespace kiln {

namespace {

const IntExpr M = IntExpr::var("M"), N = IntExpr::var("N");

Graph two_inputs(NodeId& x, NodeId& y) {
  Graph g;
  g.size_vars = {"M", "N"};
  x = g.input("x", DType::f32, {M, N}, false);
  y = g.input("y", DType::f32, {M, N}, false);
  return g;
}

}  // namespace

TEST_CASE("flatten: an elementwise statement over whole buffers becomes one loop") {
  NodeId x, y;
  Graph g = two_inputs(x, y);
  g.outputs.push_back({"z", g.unary(Op::exp2, g.binary(Op::add, x, y))});
  KernelPlan p = build_statements(g);
  CHECK(flatten_statements(p) == 1);
  const Statement& s = p.kernels[0].statements[0];
  REQUIRE(s.extents.size() == 1);
  CHECK(s.extents[0] == M * N);
  CHECK(s.index == std::vector<IntExpr>{IntExpr(0), IntExpr::var("i0")});
}

TEST_CASE("flatten: broadcasts, transposes, masks, iterators and reductions stay") {
  SUBCASE("a broadcast load reads x[i0, 0]") {
    Graph g;
    g.size_vars = {"M", "N"};
    NodeId c = g.input("c", DType::f32, {M, IntExpr(1)}, false);
    NodeId x = g.input("x", DType::f32, {M, N}, false);
    g.outputs.push_back({"z", g.binary(Op::add, x, g.view(c, views::expand({M, 1}, {M, N})))});
    KernelPlan p = build_statements(g);
    CHECK(flatten_statements(p) == 0);
  }
  SUBCASE("a transposed load") {
    Graph g;
    g.size_vars = {"N"};
    NodeId x = g.input("x", DType::f32, {N, N}, false);
    g.outputs.push_back({"z", g.binary(Op::add, x, g.view(x, views::permute({N, N}, {1, 0})))});
    KernelPlan p = build_statements(g);
    CHECK(flatten_statements(p) == 0);
  }
  SUBCASE("a padded (masked) load") {
    Graph g;
    g.size_vars = {"M", "N"};
    NodeId x = g.input("x", DType::f32, {M, N}, false);
    g.outputs.push_back({"z", g.view(x, views::pad({M, N}, 1, IntExpr(1), IntExpr(1)))});
    KernelPlan p = build_statements(g);
    CHECK(flatten_statements(p) == 0);
  }
  SUBCASE("an index value (iota)") {
    Graph g;
    g.size_vars = {"M", "N"};
    g.outputs.push_back({"z", g.index(DType::i64, {M, N}, 1)});
    KernelPlan p = build_statements(g);
    CHECK(flatten_statements(p) == 0);
  }
  SUBCASE("a reduction, and the statement reading its result") {
    NodeId x, y;
    Graph g = two_inputs(x, y);
    NodeId r = g.reduce(ReduceKind::sum, x, {1});
    g.outputs.push_back({"z", g.binary(Op::add, y, g.view(r, views::expand({M, 1}, {M, N})))});
    KernelPlan p = build_statements(g);
    CHECK(flatten_statements(p) == 0);
  }
}

}  // namespace kiln
