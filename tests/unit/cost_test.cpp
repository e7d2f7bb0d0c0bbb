// The cost model of ir/cost.h: flops and compulsory bytes of a matmul (2·M·N·K, as primitives
// and as an extern gemm), an elementwise add with a broadcast operand, and softmax.
#include <doctest/doctest.h>

#include "driver/config.h"
#include "driver/pipeline.h"
#include "dsl/lower.h"
#include "ir/cost.h"

using namespace kiln;

namespace {

/** Composite `name` of ops/nn.toml, lowered (f32, no batch) and simplified as under
 *  `--config config`. */
Graph simplified(const std::string& name, int batch_rank, const std::string& config = "") {
  Library lib;
  const SpecFile& f = lib.load("ops/nn.toml");
  const Composite* c = f.find(name);
  REQUIRE(c);
  LowerOptions lopt;
  lopt.batch_rank = batch_rank;
  CompileOptions opt;
  if (!config.empty()) {
    auto eq = config.find('=');
    opt.config[config.substr(0, eq)] = config.substr(eq + 1);
  }
  apply_config(opt);
  return plan_program(lower_composite(lib, *c, lopt), opt).graph;
}

bool has_op(const Graph& g, Op op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return true;
  return false;
}

}  // namespace

TEST_CASE("cost: matmul is 2·M·N·K flops and reads a and b, writes y") {
  const int64_t M = 17, K = 33, N = 9;
  std::map<std::string, int64_t> sizes{{"M", M}, {"K", K}, {"N", N}};
  Graph g = simplified("matmul", 0);
  CHECK(has_op(g, Op::reduce));
  GraphCost c = graph_cost(g, sizes);
  CHECK(c.flops == 2 * M * N * K);
  CHECK(c.bytes == 4 * (M * K + K * N + M * N));
  // The same composite as one BLAS call counts the same.
  Graph blas = simplified("matmul", 0, "BLAS=openblas");
  REQUIRE(has_op(blas, Op::extern_call));
  GraphCost cb = graph_cost(blas, sizes);
  CHECK(cb.flops == 2 * M * N * K);
  CHECK(cb.bytes == c.bytes);
}

TEST_CASE("cost: an elementwise add counts one flop per element and each input once") {
  const IntExpr M = IntExpr::var("M"), N = IntExpr::var("N");
  Graph g;
  g.name = "add_bias";
  g.size_vars = {"M", "N"};
  NodeId x = g.input("x", DType::f32, {M, N}, false);
  NodeId b = g.input("b", DType::f64, {IntExpr(1), N}, false);
  NodeId wide = g.cast(g.view(b, views::expand({IntExpr(1), N}, {M, N})), DType::f32);
  g.outputs = {{"y", g.binary(Op::add, x, wide)}};
  GraphCost c = graph_cost(g, {{"M", 6}, {"N", 10}});
  CHECK(c.flops == 60);                        // the add; the view and the cast count nothing
  CHECK(c.bytes == 4 * 60 + 8 * 10 + 4 * 60);  // x and b read once, y written once
  // A dead node does not count; mulacc counts two per element.
  g.binary(Op::mul, x, x);
  g.outputs.push_back({"z", g.ternary(Op::mulacc, x, x, x)});
  GraphCost c2 = graph_cost(g, {{"M", 6}, {"N", 10}});
  CHECK(c2.flops == 60 + 120);
  CHECK(c2.bytes == c.bytes + 4 * 60);
}

TEST_CASE("cost: softmax counts its two reductions over every element and its elementwise ops") {
  const int64_t B = 3, N = 100;
  Graph g = simplified("softmax", 1);
  GraphCost c = graph_cost(g, {{"batch0", B}, {"N", N}});
  CHECK(c.bytes == 4 * 2 * B * N);
  // Count the graph independently: each reduce reads B·N elements; every other arithmetic node
  // counts its own element count (B·N for the row-wise ops, B for the per-row ones).
  int64_t want = 0;
  int reductions = 0;
  for (const Node& n : g.nodes) {
    OpClass cls = op_info(n.op).cls;
    if (cls == OpClass::reduce) {
      want += B * N;
      ++reductions;
    } else if (cls == OpClass::unary || cls == OpClass::binary || cls == OpClass::ternary) {
      int64_t elems = n.shape.back() == IntExpr(1) ? B : B * N;
      want += n.op == Op::mulacc ? 2 * elems : elems;
    }
  }
  CHECK(reductions == 2);  // the max and the sum
  CHECK(c.flops == want);
  CHECK(c.flops >= 5 * B * N);  // max, subtract, exp, sum, divide: at least one each per element
}

TEST_CASE("cost: an unbound size variable is an error, not a guess") {
  Graph g = simplified("matmul", 0);
  CHECK_THROWS_WITH_AS(graph_cost(g, {{"M", 2}, {"K", 3}}), doctest::Contains("N"),
                       std::runtime_error);
}
