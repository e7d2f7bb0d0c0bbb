// Every shipped rule has a positive case (the graph in becomes the expected graph) and a negative
// case (a near miss the rule must leave alone), table-driven as graph in -> graph expected. Graphs
// are written as expressions over inputs x, y, z (and a bool input c) of one dtype and shape [8].
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "dsl/parser.h"
#include "ir/interpreter.h"
#include "simplifier/checker.h"
#include "simplifier/engine.h"
#include "simplifier/index_arith.h"
#include "simplifier/match.h"
#include "simplifier/rule_file.h"

namespace kiln {

namespace {

/** The graph of `expr` over inputs x, y, z of dtype `t` (c: bool), shape [8]. */
Graph expr_graph(const std::string& expr, DType t) {
  SourceText src{expr, "test", {}};
  for (size_t k = 0; k <= expr.size(); ++k)
    src.pos.push_back({1, static_cast<int>(k + 1)});
  PatternPtr p = parse_pattern(src, true);
  GraphBuilder b;
  Shape shape{IntExpr(8)};
  Bindings vars;
  for (const char* v : {"x", "y", "z"})
    vars[v] = b.g.input(v, t, shape, false);
  vars["c"] = b.g.input("c", DType::boolean, shape, false);
  Node root;
  root.dtype = p->is_bool ? DType::boolean : t;
  root.shape = shape;
  std::optional<Rewrite> r = instantiate(*p, vars, root, b);
  REQUIRE(r);
  NodeId out = r->existing ? *r->existing : b.g.add(r->node);
  b.g.outputs.push_back({"out", out});
  return b.g;
}

/** `g` with only the named rule (plus sharing and dead-code removal). */
Graph apply(const Graph& g, const RuleSet& all, const std::string& rule, bool fastmath) {
  RuleSet one;
  const Rule* r = all.find(rule);
  REQUIRE_MESSAGE(r, "no rule named " << rule);
  one.add(*r);
  SimplifyOptions opt;
  opt.fastmath = fastmath;
  return simplify(g, one, opt).graph;
}

/** `g` normalised without rules: shared nodes merged, dead ones dropped. */
std::string normal_text(const Graph& g) {
  return graph_to_text(simplify(g, RuleSet(), SimplifyOptions()).graph);
}

struct Case {
  const char* rule;
  bool positive;  ///< false: the rule must not change the graph
  DType dtype;
  const char* in;
  const char* expected;  ///< positive cases only
  bool fastmath = false;
};

const DType f32 = DType::f32, i32 = DType::i32, i64 = DType::i64, b8 = DType::boolean;

const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      // identities.toml
      {"add-zero-int", true, i32, "x + 0", "x"},
      {"add-zero-int", false, f32, "x + 0", ""},
      {"add-neg-zero", true, f32, "x + -0.0", "x"},
      {"add-neg-zero", false, f32, "x + 0.0", ""},
      {"sub-self-int", true, i64, "x - x", "0"},
      {"sub-self-int", false, f32, "x - x", ""},
      {"mul-one", true, f32, "x * 1", "x"},
      {"mul-one", false, f32, "x * 2", ""},
      {"mul-zero-int", true, i32, "x * 0", "0"},
      {"mul-zero-int", false, f32, "x * 0", ""},
      {"mul-minus-one", true, f32, "x * -1", "-x"},
      {"mul-minus-one", false, f32, "x * -2", ""},
      {"neg-neg", true, f32, "-(-x)", "x"},
      {"neg-neg", false, f32, "-(x + y)", ""},
      {"mul-neg-neg", true, f32, "(-x) * (-y)", "x * y"},
      {"mul-neg-neg", false, f32, "(-x) * y", ""},
      {"max-self", true, f32, "max(x, x)", "x"},
      {"max-self", false, f32, "max(x, y)", ""},
      {"where-true", true, f32, "where(true, x, y)", "x"},
      {"where-true", false, f32, "where(c, x, y)", ""},
      {"where-false", true, f32, "where(false, x, y)", "y"},
      {"where-false", false, f32, "where(c, x, y)", ""},
      {"where-same", true, f32, "where(c, x, x)", "x"},
      {"where-same", false, f32, "where(c, x, y)", ""},
      {"where-not", true, f32, "where(!c, x, y)", "where(c, y, x)"},
      {"where-not", false, f32, "where(c, x, y)", ""},
      {"not-not", true, b8, "!(!x)", "x"},
      {"not-not", false, b8, "!x", ""},
      {"eq-self-int", true, i32, "x == x", "true"},
      {"eq-self-int", false, f32, "x == x", ""},
      {"lt-self", true, f32, "x < x", "false"},
      {"lt-self", false, f32, "x < y", ""},
      // bits.toml
      {"and-self", true, i32, "x & x", "x"},
      {"and-self", false, i32, "x & y", ""},
      {"or-self", true, i32, "x | x", "x"},
      {"or-self", false, i32, "x | y", ""},
      {"xor-self", true, i32, "x ^ x", "0"},
      {"xor-self", false, i32, "x ^ y", ""},
      {"and-zero", true, i32, "x & 0", "0"},
      {"and-zero", false, i32, "x & 1", ""},
      {"or-zero", true, i32, "x | 0", "x"},
      {"or-zero", false, i32, "x | 1", ""},
      {"xor-zero", true, i32, "x ^ 0", "x"},
      {"xor-zero", false, i32, "x ^ 1", ""},
      {"and-true", true, b8, "x & true", "x"},
      {"and-true", false, i32, "x & 1", ""},
      {"or-true", true, b8, "x | true", "true"},
      {"or-true", false, i32, "x | 1", ""},
      {"shl-zero", true, i32, "x << 0", "x"},
      {"shl-zero", false, i32, "x << 1", ""},
      {"shr-zero", true, i32, "x >> 0", "x"},
      {"shr-zero", false, i32, "x >> 1", ""},
      // reassociate.toml
      {"add-const-const", true, i32, "(x + 3) + 4", "x + 7"},
      {"add-const-const", false, f32, "(x + 3.0) + 4.0", ""},
      {"mul-const-const", true, i64, "(x * 3) * 4", "x * 12"},
      {"mul-const-const", false, f32, "(x * 3.0) * 4.0", ""},
      {"mul-neg-const", true, f32, "(-x) * 3.0", "x * -3.0"},
      {"mul-neg-const", false, f32, "(-x) * y", ""},
      // index.toml
      {"idiv-one", true, i32, "x // 1", "x"},
      {"idiv-one", false, i32, "x // 2", ""},
      {"mod-one", true, i32, "x % 1", "0"},
      {"mod-one", false, i32, "x % 2", ""},
      {"idiv-idiv", true, i64, "(x // 4) // 8", "x // 32"},
      {"idiv-idiv", false, i64, "(x // -4) // 8", ""},
      {"mod-mod", true, i32, "(x % 12) % 4", "x % 4"},
      {"mod-mod", false, i32, "(x % 12) % 5", ""},
      {"mod-of-multiple", true, i32, "(x * 12) % 4", "0"},
      {"mod-of-multiple", false, i32, "(x * 12) % 3", ""},
      // exp2.toml (FASTMATH=1)
      {"exp2-log2", true, f32, "exp2(log2(x))", "x", true},
      {"exp2-log2", false, f32, "exp2(log2(x))", "", false},
      {"log2-exp2", true, f32, "log2(exp2(x))", "x", true},
      {"log2-exp2", false, f32, "log2(exp2(x))", "", false},
      {"exp2-product", true, f32, "exp2(x) * exp2(y)", "exp2(x + y)", true},
      {"exp2-product", false, f32, "exp2(x) * y", "", true},
      {"log2-product", true, f32, "log2(x) + log2(y)", "log2(x * y)", true},
      {"log2-product", false, f32, "log2(x) + y", "", true},
      // fastmath.toml
      {"add-zero-float", true, f32, "x + 0.0", "x", true},
      {"add-zero-float", false, f32, "x + 0.0", "", false},
      {"mul-zero-float", true, f32, "x * 0.0", "0.0", true},
      {"mul-zero-float", false, f32, "x * 0.0", "", false},
      {"sub-self-float", true, f32, "x - x", "0.0", true},
      {"sub-self-float", false, f32, "x - x", "", false},
      {"recip-recip", true, f32, "recip(recip(x))", "x", true},
      {"recip-recip", false, f32, "recip(recip(x))", "", false},
      {"add-const-const-float", true, f32, "(x + 1.5) + 2.0", "x + 3.5", true},
      {"add-const-const-float", false, f32, "(x + 1.5) + 2.0", "", false},
      {"mul-const-const-float", true, f32, "(x * 1.5) * 2.0", "x * 3.0", true},
      {"mul-const-const-float", false, f32, "(x * 1.5) * 2.0", "", false},
      {"mul-recip-self", true, f32, "x * recip(x)", "1.0", true},
      {"mul-recip-self", false, f32, "x * recip(y)", "", true},
      // mulacc.toml
      {"mul-add-int", true, i32, "x * y + z", "mulacc(x, y, z)"},
      {"mul-add-int", false, f32, "x * y + z", ""},
      {"mul-add-float", true, f32, "x * y + z", "mulacc(x, y, z)", true},
      {"mul-add-float", false, f32, "x * y + z", "", false},
      // code_rules.cpp
      {"fold-constants", true, f32, "2.0 * 3.0 + x", "6.0 + x"},
      {"fold-constants", false, f32, "2.0 * x", ""},
  };
  return table;
}

}  // namespace

TEST_CASE("rules: each case, graph in -> graph expected") {
  RuleSet all = shipped_rules();
  for (const Case& c : cases()) {
    std::string rule = c.rule, in_text = c.in;
    CAPTURE(rule);
    CAPTURE(in_text);
    Graph in = expr_graph(c.in, c.dtype);
    std::string got = normal_text(apply(in, all, c.rule, c.fastmath));
    std::string want = normal_text(c.positive ? expr_graph(c.expected, c.dtype) : in);
    CHECK(got == want);
  }
}

TEST_CASE("rules: every shipped rule file entry has a positive and a negative case") {
  std::map<std::string, std::set<bool>> seen;
  for (const Case& c : cases())
    seen[c.rule].insert(c.positive);
  RuleSet all = shipped_rules();
  for (const Rule& r : all.rules()) {
    if (!r.pattern && r.name != "fold-constants") continue;  // view rules: below
    CAPTURE(r.name);
    CHECK(seen[r.name].size() == 2);
  }
}

TEST_CASE("rules: view folding and size-1 reductions") {
  RuleSet all = shipped_rules();
  Graph g;
  Shape mn{IntExpr::var("M"), IntExpr::var("N")};
  g.size_vars = {"M", "N"};
  NodeId x = g.input("x", DType::f32, mn, false);
  // view-of-view: a permute of a permute is one view (here the identity, then nothing)
  Node p;
  p.op = Op::view;
  p.dtype = DType::f32;
  p.view = views::permute(mn, {1, 0});
  p.shape = p.view.shape;
  p.operands = {x};
  NodeId t = g.add(p);
  Node pp = p;
  pp.view = views::permute(p.shape, {1, 0});
  pp.shape = pp.view.shape;
  pp.operands = {t};
  NodeId tt = g.add(pp);
  // view-of-constant: a broadcast constant becomes a constant of the full shape
  NodeId c = g.constant(DType::f32, {}, 2.0);
  Node b;
  b.op = Op::view;
  b.dtype = DType::f32;
  b.view = View{mn, {}, {}};  // a scalar broadcast to [M, N]
  b.shape = mn;
  b.operands = {c};
  NodeId bc = g.add(b);
  NodeId y = g.binary(Op::mul, tt, bc);
  // reduce-unit-axes: reducing a size-1 axis is the operand
  NodeId r1 =
      g.reduce(ReduceKind::sum, g.view(y, views::reshape(mn, {mn[0], mn[1], IntExpr(1)})), {2});
  g.outputs.push_back({"y", r1});
  SimplifyResult r = simplify(g, all, SimplifyOptions());
  for (const char* name :
       {"view-of-view", "view-identity", "view-of-constant", "reduce-unit-axes"}) {
    CAPTURE(name);
    CHECK(r.stats[name].applied >= 1);
  }
  std::string text = graph_to_text(r.graph);
  CHECK(text.find("reduce") == std::string::npos);
  CHECK(text.find("const 2 : f32[M, N]") != std::string::npos);
  // negative: a padded view of a nonzero constant is not uniform and stays a view
  Graph h;
  NodeId k = h.constant(DType::f32, {IntExpr(4)}, 1.0);
  NodeId padded = h.view(k, views::pad({IntExpr(4)}, 0, IntExpr(1), IntExpr(1)));
  h.outputs.push_back({"y", padded});
  SimplifyResult s = simplify(h, all, SimplifyOptions());
  CHECK(s.stats["view-of-constant"].applied == 0);
  CHECK(s.graph.size() == 2);
}

TEST_CASE("rules: the checker passes every shipped rule") {
  RuleSet all = shipped_rules();
  for (const Rule& r : all.rules()) {
    if (!r.pattern) continue;
    CAPTURE(r.name);
    RuleCheck c = check_rule(r);
    CHECK_MESSAGE(c.ok, c.failure);
    CHECK(c.cases > 0);
  }
}

TEST_CASE("rules: the checker catches planted wrong rules") {
  const char* wrong[] = {
      "add-zero-any = { pattern = \"x + 0\", replacement = \"x\" }",  // -0 + 0 = +0
      "mul-zero-any = { pattern = \"x * 0\", replacement = \"0\" }",  // NaN * 0 = NaN
      "sub-self-any = { pattern = \"x - x\", replacement = \"0\" }",  // inf - inf
      "div-div = { pattern = \"(x // c0) // c1\", replacement = \"x // fold(c0 * c1)\" }",
      "lt-flip = { pattern = \"x < y\", replacement = \"!(y < x)\" }",  // NaN, equality
      "max-first = { pattern = \"max(x, y)\", replacement = \"x\" }",
  };
  for (const char* text : wrong) {
    CAPTURE(text);
    std::vector<Rule> rules = parse_rule_text(text, "planted.toml");
    REQUIRE(rules.size() == 1);
    RuleCheck c = check_rule(rules[0]);
    CHECK_FALSE(c.ok);
    CHECK(!c.failure.empty());
  }
}

TEST_CASE("rules: a rule cycle is reported with the rules' names") {
  RuleSet set;
  for (Rule& r : parse_rule_text("swap = { pattern = \"x + y\", replacement = \"y + x\" }\n"
                                 "back = { pattern = \"y + x\", replacement = \"x + y\" }\n",
                                 "cycle.toml"))
    set.add(std::move(r));
  Graph g = expr_graph("x + y", DType::f32);
  CHECK_THROWS_WITH_AS(simplify(g, set, SimplifyOptions()), doctest::Contains("swap"),
                       std::runtime_error);
}

TEST_CASE("rules: errors in rule files point at the line and column") {
  struct Bad {
    const char* text;
    const char* message;
    int line, col;
  };
  const Bad bad[] = {
      {"r = { pattern = \"x + \", replacement = \"x\" }", "expected", 1, 22},
      {"r = { pattern = \"frob(x)\", replacement = \"x\" }", "'frob' is not an elementwise", 1, 18},
      {"r = { pattern = \"x + 0\", replacement = \"y\" }", "'y' is not a variable of the pattern",
       1, 41},
      {"r = { pattern = \"x + 0\", replacement = \"x\", guard = \"is_flot(x)\" }",
       "unknown guard function 'is_flot'", 1, 54},
      {"r = { pattern = \"x\", replacement = \"x\" }", "must start with an op", 1, 17},
      {"r = { pattern = \"x + 0\" }", "has no 'replacement'", 1, 5},
      {"r = { pattern = \"x + 0\", replacement = \"x\", colour = 1 }", "unknown key 'colour'", 1,
       54},
      {"r = { pattern = \"fold(x)\", replacement = \"x\" }", "fold() belongs in a replacement", 1,
       18},
      {"r = 3", "must be a table", 1, 5},
      {"r = { pattern = \"x + 0\"\n", "TOML syntax error", 1, 24},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.text);
    try {
      parse_rule_text(b.text, "bad.toml");
      FAIL("no error");
    } catch (const SpecError& e) {
      CHECK(std::string(e.what()).find(b.message) != std::string::npos);
      CHECK(e.loc().line == b.line);
      CHECK(e.loc().col == b.col);
    }
  }
}

}  // namespace kiln

namespace kiln {

TEST_CASE("rules: index arithmetic over symbolic sizes") {
  IntExpr M = IntExpr::var("M"), N = IntExpr::var("N"), i0 = IntExpr::index(0),
          i1 = IntExpr::index(1);
  std::map<std::string, IntExpr> ext = {{"%0", M}, {"%1", N}};
  // positive: %1 < N decides the division and the modulus
  CHECK(simplify_index(floordiv(i0 * N + i1, N), ext) == i0);
  CHECK(simplify_index(mod(i0 * N + i1, N), ext) == i1);
  CHECK(simplify_index(floordiv(i0 * 8 + i1 * 4 + 3, IntExpr(4)),
                       {{"%0", M}, {"%1", IntExpr(2)}}) == i0 * 2 + i1);
  // negative: %1 may reach N + 1, or the remainder may be negative
  std::map<std::string, IntExpr> wide = {{"%0", M}, {"%1", N + 2}};
  CHECK(simplify_index(floordiv(i0 * N + i1, N), wide) == floordiv(i0 * N + i1, N));
  CHECK(simplify_index(mod(i0 * N - i1, N), ext) == mod(i0 * N - i1, N));
  // a divisor of several factors: (i0 * N + i1) / (G * N) is i0 / G when i1 < N (a group norm's
  // reshape of [C, N] into [C / G, G * N]), with G itself a quotient of sizes
  IntExpr G = floordiv(M, IntExpr(4));
  CHECK(simplify_index(floordiv(i0 * N + i1, G * N), ext) == floordiv(i0, G));
  CHECK(simplify_index(mod(i0 * N + i1, G * N), ext) == mod(i0, G) * N + i1);
  CHECK(simplify_index(floordiv(i0 * N + i1, 4 * N), ext) == floordiv(i0, IntExpr(4)));
  // ... and the flattened index of both parts is the plain one
  CHECK(simplify_index(mod(mod(i0 * N + i1, G * N), N) + N * floordiv(mod(i0 * N + i1, G * N), N) +
                           G * N * floordiv(i0 * N + i1, G * N),
                       ext) == i0 * N + i1);
  // not when i1 may reach N
  CHECK(simplify_index(floordiv(i0 * N + i1, G * N), wide) == floordiv(i0 * N + i1, G * N));
}

TEST_CASE("rules: a reshape round trip around elementwise work folds away") {
  RuleSet all = shipped_rules();
  Graph g;
  IntExpr M = IntExpr::var("M"), N = IntExpr::var("N");
  g.size_vars = {"M", "N"};
  NodeId x = g.input("x", DType::f32, {M, N}, false);
  NodeId flat = g.view(x, views::reshape({M, N}, {M * N}));
  NodeId two = g.constant(DType::f32, {M * N}, 2.0);
  NodeId y = g.binary(Op::mul, flat, two);
  g.outputs.push_back({"y", g.view(y, views::reshape({M * N}, {M, N}))});
  SimplifyResult r = simplify(g, all, SimplifyOptions());
  CHECK(r.stats["view-through-elementwise"].applied == 1);
  CHECK(r.stats["view-index-arith"].applied >= 1);
  CHECK(graph_to_text(r.graph).find("view") == std::string::npos);
  // negative: a padded (masked) view must not move below the op, since op(0, 0) need not be 0
  Graph h;
  NodeId a = h.input("a", DType::f32, {N}, false);
  NodeId e = h.unary(Op::exp2, h.view(a, views::permute({N}, {0})));
  h.outputs.push_back({"y", h.view(e, views::pad({N}, 0, IntExpr(1), IntExpr(0)))});
  SimplifyResult s = simplify(h, all, SimplifyOptions());
  CHECK(s.stats["view-through-elementwise"].applied == 0);
}

}  // namespace kiln

namespace kiln {

namespace {

/** reduce_sum(a[m, k] * b[k, n], k) over [M, N, K], as bodies lower a matrix product. */
Graph matmul_graph(DType t) {
  Graph g;
  IntExpr M = IntExpr::var("M"), K = IntExpr::var("K"), N = IntExpr::var("N");
  g.size_vars = {"M", "K", "N"};
  NodeId a = g.input("a", t, {M, K}, false);
  NodeId b = g.input("b", t, {K, N}, false);
  Shape mnk{M, N, K};
  NodeId va = g.view(a, View{mnk, {IntExpr::index(0), IntExpr::index(2)}, {}});
  NodeId vb = g.view(b, View{mnk, {IntExpr::index(2), IntExpr::index(1)}, {}});
  NodeId r = g.reduce(ReduceKind::sum, g.binary(Op::mul, va, vb), {2});
  g.outputs.push_back({"y", g.view(r, views::reshape({M, N, IntExpr(1)}, {M, N}))});
  return g;
}

}  // namespace

TEST_CASE("rules: gemm-to-blas turns a matrix product into one extern call under BLAS=openblas") {
  RuleSet all = shipped_rules();
  SimplifyOptions blas;
  blas.blas = "openblas";
  for (DType t : {DType::f32, DType::f64}) {
    SimplifyResult r = simplify(matmul_graph(t), all, blas);
    CHECK(r.stats["gemm-to-blas"].applied == 1);
    std::string text = graph_to_text(r.graph);
    CHECK(text.find("extern gemm %0, %1") != std::string::npos);
    CHECK(text.find("reduce") == std::string::npos);
    CHECK(text.find("view") == std::string::npos);
  }
  // negative: not asked for, or a dtype BLAS does not have
  CHECK(simplify(matmul_graph(DType::f32), all, SimplifyOptions()).stats["gemm-to-blas"].applied ==
        0);
  CHECK(simplify(matmul_graph(DType::f16), all, blas).stats["gemm-to-blas"].applied == 0);
}

}  // namespace kiln
