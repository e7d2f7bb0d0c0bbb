// scheduler/plan_values: which values are stored and which inlined, with their evaluation counts,
// and the bound over every composite of ops/ and tests/regressions (docs/decisions.md, "Values are
// stored when inlining would multiply their work").
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "dsl/check.h"
#include "scheduler/build_statements.h"
#include "scheduler/plan_values.h"
#include "tests/support/harness.h"

using namespace kiln;

namespace {

Graph graph_of(const std::string& target, SizeBindings sizes = {},
               std::map<std::string, AttrValue> attrs = {}, DType t = DType::f32) {
  test::RunSpec spec;
  spec.target = target;
  spec.sizes = std::move(sizes);
  spec.dtypes = {{"T", t}};
  spec.attrs = std::move(attrs);
  spec.interpret = false;
  return test::run(spec).graph;
}

/** A spec file in the build's temp folder with one composite `c`. */
std::string spec_file(const std::string& name, const std::string& body, const std::string& in,
                      const std::string& out) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("kiln_plan_values_" + name + ".toml")).string();
  std::ofstream f(path);
  f << "[meta]\nuse = [\"" << std::filesystem::absolute("ops/math.toml").string() << "\"]\n\n[c]\n"
    << "doc = \"test\"\nin = { " << in << " }\nout = { " << out << " }\nbody = \"\"\"\n"
    << body << "\"\"\"\n";
  return path + ":c";
}

int64_t nominal(const IntExpr& e) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  std::map<std::string, int64_t> env;
  for (const std::string& v : vars)
    env[v] = kNominalSize;
  return e.eval(env);
}

/** The decisions of the nodes of op `op`, in node order. */
std::vector<ValueDecision> of_op(const Graph& g, const ValuePlan& p, Op op) {
  std::vector<ValueDecision> out;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    if (g[id].op == op) out.push_back(p.nodes[id]);
  return out;
}

}  // namespace

TEST_CASE(
    "plan_values: a value read inside a contraction over an index it does not use is stored") {
  // y[s, c] = sum_j tanh(u[s, j]) * w[j, c]: inline, the tanh would run C times per element.
  Graph g = graph_of(spec_file("gelu", "f = exp(u) * u\ny[s, c] = sum(f[s, j] * w[j, c], j)\n",
                               "u = \"f32[S, J]\", w = \"f32[J, C]\"", "y = \"f32[S, C]\""));
  ValuePlan p = plan_values(g, {});
  std::vector<ValueDecision> exps = of_op(g, p, Op::exp2);
  REQUIRE(exps.size() == 1);
  // exp(u) * u is stored (the mul); the exp inside it is then evaluated once per element.
  std::vector<ValueDecision> muls = of_op(g, p, Op::mul);
  bool stored = false;
  for (const ValueDecision& d : muls)
    if (d.kind == ValueDecision::Kind::stored) {
      stored = true;
      CHECK(d.reason == "stored: multiplied");
      CHECK(d.inline_factor.str() == "C");
      CHECK(d.factor == IntExpr(1));
    }
  CHECK(stored);
  CHECK(exps[0].kind == ValueDecision::Kind::inlined);
  CHECK(exps[0].factor == IntExpr(1));
  // The statements: the stored value over [S, J], then the contraction loads it.
  KernelPlan plan = build_statements(g, p);
  REQUIRE(plan.kernels.size() == 1);
  int assigns = 0;
  for (const Statement& s : plan.kernels[0].statements)
    assigns += s.kind == Statement::Kind::assign && s.extents.size() == 2 &&
               plan.buffers[s.buffer].kind == BufferKind::temp;
  CHECK(assigns == 1);
}

TEST_CASE("plan_values: a scaled operand is stored once; the scaled product stays inline") {
  // a[m, k] * 2 inside the matmul would run N times per element: stored over [M, K].
  Graph g = graph_of(spec_file("scaled", "y[m, n] = sum(a[m, k] * 2.0 * b[k, n], k)\n",
                               "a = \"f32[M, K]\", b = \"f32[K, N]\"", "y = \"f32[M, N]\""));
  ValuePlan p = plan_values(g, {});
  int stored = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    if (p.nodes[id].reason == "stored: multiplied") {
      ++stored;
      CHECK(shape_str(g[id].shape).find('N') == std::string::npos);  // [M, 1, K]
      CHECK(p.nodes[id].inline_factor.str() == "N");
    }
  CHECK(stored == 1);
  // (a[m, k] * b[k, n]) * 2 is evaluated once per point of the sum: inline.
  Graph h = graph_of(spec_file("product", "y[m, n] = sum(a[m, k] * b[k, n] * 2.0, k)\n",
                               "a = \"f32[M, K]\", b = \"f32[K, N]\"", "y = \"f32[M, N]\""));
  ValuePlan q = plan_values(h, {});
  for (NodeId id = 0; id < static_cast<NodeId>(h.size()); ++id) {
    bool inline_or_buffer =
        q.nodes[id].kind != ValueDecision::Kind::stored || q.nodes[id].reason == "output";
    CHECK_MESSAGE(inline_or_buffer, "%" << id << " " << q.nodes[id].reason);
  }
}

TEST_CASE("plan_values: softmax's exponential stays inline, read twice") {
  Graph g = graph_of("ops/nn.toml:softmax", {{"N", 7}});
  ValuePlan p = plan_values(g, {});
  std::vector<ValueDecision> exps = of_op(g, p, Op::exp2);
  REQUIRE(exps.size() == 1);
  CHECK(exps[0].kind == ValueDecision::Kind::inlined);
  CHECK(exps[0].factor == IntExpr(2));
  CHECK(exps[0].reason == "inline: within the bound");
}

TEST_CASE("plan_values: an output that other values read is computed once and read back") {
  Graph g = graph_of(spec_file("readback", "e = exp(x)\ns = sum(e, axis=-1)\n", "x = \"f32[N]\"",
                               "e = \"f32[N]\", s = \"f32\""));
  ValuePlan p = plan_values(g, {});
  std::vector<ValueDecision> exps = of_op(g, p, Op::exp2);
  REQUIRE(!exps.empty());
  bool read_back = false;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    read_back |= p.nodes[id].reason == "output read back";
  CHECK(read_back);
  KernelPlan plan = build_statements(g, p);
  // e's statement comes first, writes the output, and the sum loads it: one exponential.
  const std::vector<Statement>& st = plan.kernels.at(0).statements;
  REQUIRE(!st.empty());
  CHECK(plan.buffers[st[0].buffer].name == "e");
  int exps_in_code = 0;
  std::function<void(const ScalarExpr&)> count = [&](const ScalarExpr& e) {
    exps_in_code += e.kind == ScalarExpr::Kind::op && e.op == Op::exp2;
    for (const ScalarExprPtr& a : e.args)
      count(*a);
  };
  for (const Statement& s : st)
    if (s.value) count(*s.value);
  CHECK(exps_in_code == 1);
}

TEST_CASE("plan_values: integer division that a where guards is never stored") {
  Graph g = graph_of(
      spec_file("idiv", "q = where(d != 0, a / d, 0)\ny[m, n] = sum(q[m, k] * b[k, n], k)\n",
                "a = \"i32[M, K]\", d = \"i32[M, K]\", b = \"i32[K, N]\"", "y = \"i32[M, N]\""));
  ValuePlan p = plan_values(g, {});
  for (const ValueDecision& d : of_op(g, p, Op::idiv)) {
    CHECK(d.kind == ValueDecision::Kind::inlined);
    CHECK(d.reason == "inline: divides integers");
  }
}

TEST_CASE("plan_values: the GPU's online softmax keeps attention's weights inline, in f16 only") {
  // The fused kernel (scheduler/online_softmax.h) takes f16 and bf16; in f32 the weighted sum is
  // a plain contraction on the GPU too, and inline weights would be recomputed per head lane.
  for (DType t : {DType::f16, DType::f32}) {
    CAPTURE(dtype_name(t));
    Graph g = graph_of("ops/nn.toml:attention", {{"B", 1}, {"H", 2}, {"L", 5}, {"S", 7}, {"D", 4}},
                       {}, t);
    ValueOptions cpu, gpu;
    gpu.online_softmax = true;
    ValuePlan pc = plan_values(g, cpu), pg = plan_values(g, gpu);
    int cpu_stored = 0, gpu_stored = 0;
    for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
      bool computed = g[id].op != Op::reduce && g[id].op != Op::input;
      cpu_stored += computed && pc.stored(id) && pc.nodes[id].reason != "output";
      gpu_stored += computed && pg.stored(id) && pg.nodes[id].reason != "output";
    }
    CHECK(cpu_stored >= 1);  // the probabilities, read once per head dimension
    if (t == DType::f16)
      CHECK(gpu_stored == 0);
    else
      CHECK(gpu_stored == cpu_stored);
  }
}

TEST_CASE("plan_values: the online softmax's values computed beside it are not forced inline") {
  // q, k and v sliced from x·w + b: one node read along v's lanes by the weighted sum (and by
  // the scores' product). Inline it would make the fused kernel's operands an addition, not the
  // loads its products take; the weights and the causal mask stay inline.
  Graph g = graph_of("tests/regressions/attention_variants.toml:attn_qkv_projection",
                     {{"B", 2}, {"S", 5}, {"C", 64}}, {}, DType::f16);
  ValueOptions gpu;
  gpu.online_softmax = true;
  ValuePlan p = plan_values(g, gpu);
  int softmax_inline = 0, exp2 = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    softmax_inline += p.nodes[id].reason == "inline: online softmax";
    if (g[id].op != Op::exp2) continue;
    ++exp2;
    CHECK(p.nodes[id].reason == "inline: online softmax");
  }
  CHECK(exp2 >= 1);
  CHECK(softmax_inline >= 3);
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    if (g[id].op == Op::add && g[id].operands.size() == 2 &&
        g[g[id].operands[0]].op == Op::reduce &&
        g[g[id].operands[0]].reduce_kind == ReduceKind::sum) {
      CAPTURE(id);
      CHECK(p.stored(id));  // x·w + b, read by the scores and by the weighted sum
    }
}

TEST_CASE(
    "plan_values: no value of ops/ or tests/regressions is evaluated more than twice, but cheap "
    "ones of one load") {
  // The bound of docs/decisions.md: an inlined value with arithmetic costs at most
  // max_factor evaluations per element, for every composite (at its first test case and dtype).
  int checked = 0;
  for (test::RunSpec spec : test::first_cases()) {
    spec.interpret = false;
    CAPTURE(spec.target);
    Graph g = test::run(spec).graph;
    ValuePlan p = plan_values(g, {});
    for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
      const ValueDecision& d = p.nodes[id];
      if (d.kind != ValueDecision::Kind::inlined) continue;
      // Past twice only a value of one load whose extra evaluations cost less than one
      // memory access (one operation or four: at most 1 + kMemoryCost evaluations).
      bool cheap = d.reason == "inline: one load, cheaper than a store" &&
                   nominal(d.factor) <= 1 + kMemoryCost;
      CHECK_MESSAGE((nominal(d.factor) <= 2 || cheap),
                    spec.target << " %" << id << " " << op_name(g[id].op) << " x" << d.factor.str()
                                << " " << d.reason);
    }
    ++checked;
  }
  CHECK(checked > 50);
}
