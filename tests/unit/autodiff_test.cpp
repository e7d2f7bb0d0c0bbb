// Reverse-mode differentiation (autodiff/, docs/autodiff.md): the backward graph of each case
// against central finite differences in f64 on the interpreter, the same graph printed as a spec
// (ir/graph_spec.h), loaded again and run, the tie and zero rules exactly, and the refusals.
#include <doctest/doctest.h>

#include <algorithm>

#include "autodiff/grad_check.h"
#include "autodiff/gradient.h"
#include "dsl/library.h"
#include "ir/graph_spec.h"
#include "ir/verifier.h"
#include "tests/support/harness.h"

using namespace kiln;

namespace {

struct GradCase {
  const char* target;
  std::vector<std::string> wrt;
  SizeBindings sizes;
  std::vector<int64_t> batch = {};
  std::map<std::string, std::pair<double, double>> ranges = {};
  GradCheckOptions check = {};
};

test::RunSpec spec_of(const std::string& target, const SizeBindings& sizes) {
  test::RunSpec spec;
  spec.target = target;
  spec.sizes = sizes;
  return spec;
}

test::Run lowered(const GradCase& c) {
  test::RunSpec spec = spec_of(c.target, c.sizes);
  spec.dtypes = {{"T", DType::f64}};
  spec.batch = c.batch;
  spec.ranges = c.ranges;
  return test::run(spec);
}

/** The inputs of the backward graph: the forward inputs, then seeded cotangents. */
std::vector<Tensor> backward_inputs(const test::Run& r) {
  std::vector<Tensor> in = r.inputs;
  for (size_t o = 0; o < r.outputs.size(); ++o)
    if (is_float(r.outputs[o].dtype))
      in.push_back(random_tensor(r.outputs[o].dtype, r.outputs[o].dims, 50 + o, -1, 1));
  return in;
}

/** The backward graph printed as a spec, loaded and lowered again, gives the same values. */
void check_round_trip(const Graph& backward, const test::Run& r) {
  std::string text = graph_to_spec(backward);
  Library lib;
  const SpecFile& f = lib.load_text(text, "grad_round_trip.toml");
  Graph again = lower_composite(lib, *f.composites.at(0));
  std::vector<Tensor> in = backward_inputs(r);
  std::vector<Tensor> want = interpret(backward, r.sizes, in), got = interpret(again, r.sizes, in);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k)
    test::expect_close(got[k], want[k].f, 1e-12, 1e-12);
}

constexpr GradSave kPolicies[] = {GradSave::recompute, GradSave::stats, GradSave::all};

/** The backward graph under `save` against finite differences: the saved values from the forward
 *  graph with its extra outputs, which must give the forward graph's own outputs first. */
void check_policy(const test::Run& r, const std::vector<std::string>& wrt, GradSave save,
                  const GradCheckOptions& opt = {}) {
  CAPTURE(grad_save_name(save));
  Backward b = gradient(r.graph, wrt, save);
  verify_or_throw(b.graph);
  verify_or_throw(b.forward);
  REQUIRE(b.graph.inputs.size() >= r.graph.inputs.size() + b.saved.size());
  REQUIRE(b.forward.outputs.size() == r.graph.outputs.size() + b.saved.size());
  for (size_t k = 0; k < b.saved.size(); ++k) {
    CHECK(b.graph[b.graph.inputs[r.graph.inputs.size() + k]].name == b.saved[k]);
    CHECK(b.forward.outputs[r.graph.outputs.size() + k].name == b.saved[k]);
  }
  std::vector<Tensor> outs = interpret(b.forward, r.sizes, r.inputs);
  for (size_t k = 0; k < r.outputs.size(); ++k)
    if (is_float(r.outputs[k].dtype)) test::expect_close(outs[k], r.outputs[k].f, 0, 0);
  for (const GradCheck& g : check_gradient(r.graph, b, wrt, r.sizes, r.inputs, opt)) {
    CAPTURE(g.input);
    CAPTURE(g.worst);
    CAPTURE(g.analytic);
    CAPTURE(g.numeric);
    CHECK(g.ok);
  }
}

void check_case(const GradCase& c) {
  CAPTURE(std::string(c.target));
  test::Run r = lowered(c);
  Graph backward = gradient(r.graph, c.wrt);
  verify_or_throw(backward);
  for (const GradCheck& g : check_gradient(r.graph, backward, c.wrt, r.sizes, r.inputs, c.check)) {
    CAPTURE(g.input);
    CAPTURE(g.worst);
    CAPTURE(g.analytic);
    CAPTURE(g.numeric);
    CHECK(g.ok);
  }
  check_round_trip(backward, r);
  for (GradSave save : {GradSave::stats, GradSave::all})
    check_policy(r, c.wrt, save, c.check);
}

/** dx of `target` at `x` with cotangent 1. */
std::vector<double> grad_at(const char* target, const std::vector<double>& x) {
  Tensor t(DType::f64, {int64_t(x.size())});
  t.f = x;
  test::RunSpec spec = spec_of(target, {{"N", int64_t(x.size())}});
  spec.given = {{"x", t}};
  test::Run r = test::run(spec);
  Tensor one(DType::f64, {});
  one.f = {1.0};
  return interpret(gradient(r.graph, {"x"}), r.sizes, {t, one}).at(0).f;
}

std::string refusal(const char* target, const std::vector<std::string>& wrt) {
  test::RunSpec spec = spec_of(target, {{"N", 3}});
  spec.interpret = false;
  test::Run r = test::run(spec);
  try {
    gradient(r.graph, wrt);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("autodiff: gradients against finite differences") {
  const GradCase cases[] = {
      {"tests/data/autodiff.toml:unary_chain", {"x"}, {{"N", 6}}},
      {"tests/data/autodiff.toml:binary_mix", {"x", "w"}, {{"N", 7}}},
      {"tests/data/autodiff.toml:cast_chain", {"x"}, {{"N", 5}}, {}, {}, {1e-2, 1e-4, 1e-6}},
      {"tests/data/autodiff.toml:bias_add", {"x", "b"}, {{"M", 3}, {"N", 4}}},
      {"tests/data/autodiff.toml:view_chain", {"x"}, {{"A", 2}, {"B", 4}, {"C", 3}}},
      {"tests/data/autodiff.toml:reductions", {"x"}, {{"M", 3}, {"N", 4}}},
      {"tests/data/autodiff.toml:prefix", {"x"}, {{"N", 6}}},
      {"tests/data/autodiff.toml:lookup", {"table", "base"}, {{"V", 4}, {"D", 3}, {"S", 5}}},
      {"tests/data/autodiff.toml:running", {"x"}, {{"N", 6}}},
      {"tests/data/autodiff.toml:scatter_peak", {"base", "src"}, {{"M", 3}, {"N", 7}}},
      {"std:nn.toml:matmul", {"a", "b"}, {{"M", 3}, {"K", 4}, {"N", 2}}},
      // a view adjoint through a scatter-add whose offsets divide by products (printed once
      // without parentheses: `i % 4 * C` for `i % (4 * C)`)
      {"std:nn.toml:avgpool2d", {"x"}, {{"B", 2}, {"C", 3}, {"H", 7}, {"W", 6}}},
      {"std:nn.toml:softmax", {"x"}, {{"N", 5}}, {2}},
      {"std:nn.toml:layernorm", {"x", "gamma", "beta"}, {{"N", 5}}, {2}},
      {"std:nn.toml:rmsnorm", {"x", "gamma"}, {{"N", 4}}, {2}},
      {"std:math.toml:gelu", {"x"}, {{"N", 6}}, {}, {{"x", {-3.0, 3.0}}}},
      {"std:reduce.toml:logsumexp", {"x"}, {{"N", 5}}, {2}},
      {"std:reduce.toml:cumsum", {"x"}, {{"N", 5}}, {2}},
      {"std:index.toml:embedding",
       {"table"},
       {{"V", 5}, {"D", 3}, {"S", 4}},
       {},
       {{"ids", {0, 5}}}},
      {"std:index.toml:scatter_add", {"base", "src"}, {{"M", 4}, {"N", 5}}, {}, {{"idx", {0, 4}}}},
      // the embeddings and the head with its cross-entropy of tests/python/test_transformer.py
      {"tests/data/transformer.toml:embed",
       {"wte", "wpe"},
       {{"B", 2}, {"L", 3}, {"V", 4}, {"C", 3}},
       {},
       {{"ids", {0, 4}}}},
      {"tests/data/transformer.toml:head_loss",
       {"x", "lnf_g", "lnf_b", "w_head"},
       {{"B", 2}, {"L", 3}, {"C", 4}, {"V", 5}},
       {},
       {{"targets", {0, 5}}}},
  };
  for (const GradCase& c : cases)
    check_case(c);
}

TEST_CASE("autodiff: the tie rule of max and the zeros of prod") {
  // ties split the cotangent equally among the maxima
  CHECK(grad_at("tests/data/autodiff.toml:max_ties", {1, 3, 3, 2}) ==
        std::vector<double>{0, 0.5, 0.5, 0});
  CHECK(grad_at("tests/data/autodiff.toml:max_ties", {4, 4, 4, 4}) ==
        std::vector<double>{0.25, 0.25, 0.25, 0.25});
  // the product of the others, at a zero too
  CHECK(grad_at("tests/data/autodiff.toml:prod_all", {2, 5, 3}) == std::vector<double>{15, 6, 10});
  CHECK(grad_at("tests/data/autodiff.toml:prod_all", {2, 0, 3}) == std::vector<double>{0, 6, 0});
  CHECK(grad_at("tests/data/autodiff.toml:prod_all", {0, 0, 3}) == std::vector<double>{0, 0, 0});
}

TEST_CASE("autodiff: zeros of a running product, ties of a running and a scattered maximum") {
  Tensor x(DType::f64, {5}), ones(DType::f64, {5}), none(DType::f64, {5});
  x.f = {2, 0, 3, 0, 5};
  ones.f = {1, 1, 1, 1, 1};
  test::RunSpec spec = spec_of("tests/data/autodiff.toml:running", {{"N", 5}});
  spec.interpret = false;
  test::Run r = test::run(spec);
  Graph running = gradient(r.graph, {"x"});
  // dp/dx with dp = 1: the products of the others up to each j, 0 past the second zero
  CHECK(interpret(running, {{"N", 5}}, {x, ones, none}).at(0).f ==
        std::vector<double>{1, 8, 0, 0, 0});
  // dm/dx with dm = 1 at [1, 3, 3, 2, 3]: 3 is the maximum of prefixes 1..4, shared by 2 then 3
  x.f = {1, 3, 3, 2, 3};
  std::vector<double> dm = interpret(running, {{"N", 5}}, {x, none, ones}).at(0).f;
  CHECK(dm[0] == 1);
  CHECK(dm[1] == doctest::Approx(1 + 0.5 + 0.5 + 1.0 / 3));
  CHECK(dm[2] == doctest::Approx(0.5 + 0.5 + 1.0 / 3));
  CHECK(dm[3] == 0);
  CHECK(dm[4] == doctest::Approx(1.0 / 3));
  // base [1, 5], values 4, 4, 2 at 0, 0, 1 and 9 at -1 (dropped): y = [4, 5]
  spec = spec_of("tests/data/autodiff.toml:scatter_peak", {{"M", 2}, {"N", 4}});
  spec.interpret = false;
  r = test::run(spec);
  Tensor base(DType::f64, {2}), idx(DType::i32, {4}), src(DType::f64, {4}), dy(DType::f64, {2});
  base.f = {1, 5};
  idx.i = {0, 0, 1, -1};
  src.f = {4, 4, 2, 9};
  dy.f = {1, 1};
  std::vector<Tensor> d =
      interpret(gradient(r.graph, {"base", "src"}), {{"M", 2}, {"N", 4}}, {base, idx, src, dy});
  CHECK(d[0].f == std::vector<double>{0, 1});
  CHECK(d[1].f == std::vector<double>{0.5, 0.5, 0, 0});
}

TEST_CASE("autodiff: refusals name the op or the input") {
  CHECK(refusal("tests/data/autodiff.toml:through_int", {"x"})
            .find("= cast : f64[N]: a cast from i32 has no derivative") != std::string::npos);
  CHECK(refusal("tests/data/autodiff.toml:scatter_mul", {"src"})
            .find("a scatter with 'mul' has no gradient rule yet") != std::string::npos);
  CHECK(
      refusal("tests/data/autodiff.toml:lookup", {"ids"}).find("input 'ids' of 'lookup' is i32") !=
      std::string::npos);
  CHECK(refusal("tests/data/autodiff.toml:lookup", {"tabel"})
            .find("'lookup' has no input 'tabel'; its inputs are table, ids, base") !=
        std::string::npos);
}

TEST_CASE("autodiff: a path only through a condition or an index carries no gradient") {
  // x picks the branch of a where and the rows of a gather: dx is 0, not an error
  Library lib;
  const SpecFile& f = lib.load_text(R"spec([picks]
in   = { x = "f64[N]", w = "f64[N]" }
out  = { y = "f64[N]" }
body = "y = where(x > 0, w, 2.0 * w) + take_along(w, cast(x > 0, i32), 0)"
)spec",
                                    "picks.toml");
  Graph fwd = lower_composite(lib, *f.composites.at(0));
  Graph b = gradient(fwd, {"x", "w"});
  REQUIRE(b.outputs.size() == 2);
  Tensor x(DType::f64, {3}), w(DType::f64, {3}), dy(DType::f64, {3});
  x.f = {-1, 2, 3};
  w.f = {5, 6, 7};
  dy.f = {1, 1, 1};
  std::vector<Tensor> d = interpret(b, {{"N", 3}}, {x, w, dy});
  CHECK(d[0].f == std::vector<double>{0, 0, 0});
  CHECK(d[1].f == std::vector<double>{3, 3, 1});  // 2, 1, 1 from the where; 1, 2, 0 gathered
}

TEST_CASE(
    "autodiff: every composite of ops/ is checked at its first test case, or refused by name") {
  // Those with no gradient, and why: the rest must match finite differences in f64.
  const std::map<std::string, std::string> refused = {
      {"trunc", "a cast from i64"},
      {"floor", "a cast from i64"},
      {"ceil", "a cast from i64"},
      {"round", "a cast from i64"},
  };
  int checked = 0;
  for (const char* file : {"math", "nn", "reduce", "tensor", "index", "quant", "random"}) {
    Library lib;
    const SpecFile& f = lib.load(std::string("std:") + file + ".toml");
    for (const auto& comp : f.composites) {
      CAPTURE(comp->name);
      GradCase c{nullptr, {}, comp->test.case_sizes(0)};
      std::string target = std::string("std:") + file + ".toml:" + comp->name;
      c.target = target.c_str();
      if (!comp->test.batches.empty()) c.batch = comp->test.batches[0];
      test::RunSpec spec = spec_of(target, c.sizes);
      spec.batch = c.batch;
      for (const TypeVar& t : comp->types)
        if (std::find(t.allowed.begin(), t.allowed.end(), DType::f64) != t.allowed.end())
          spec.dtypes[t.name] = DType::f64;
      test::Run r = test::run(spec);
      for (NodeId id : r.graph.inputs)
        if (r.graph[id].dtype == DType::f64) c.wrt.push_back(r.graph[id].name);
      if (c.wrt.empty()) continue;
      auto why = refused.find(comp->name);
      if (why != refused.end()) {
        CHECK_THROWS_WITH_AS(gradient(r.graph, c.wrt), doctest::Contains(why->second.c_str()),
                             GradError);
        continue;
      }
      for (GradSave save : kPolicies)
        check_policy(r, c.wrt, save);
      ++checked;
    }
  }
  CHECK(checked >= 60);
}

namespace {

/** The saved values (the backward graph's inputs between the forward inputs and the
 *  cotangents) of `target`'s backward graph with respect to `wrt` under `save`, as shapes. */
std::vector<Shape> saved_shapes(const char* target, const std::vector<std::string>& wrt,
                                GradSave save, std::map<std::string, AttrValue> attrs = {}) {
  test::RunSpec spec = spec_of(target, {});
  spec.interpret = false;
  spec.attrs = std::move(attrs);
  test::Run r = test::run(spec);
  Backward b = gradient(r.graph, wrt, save);
  std::vector<Shape> out;
  for (size_t k = 0; k < b.saved.size(); ++k)
    out.push_back(b.graph[b.graph.inputs[r.graph.inputs.size() + k]].shape);
  return out;
}

/** How often the size variable `var` is a dimension of `shape`. */
int dims_named(const Shape& shape, const char* var) {
  int n = 0;
  for (const IntExpr& d : shape)
    n += d.as_var() == var;
  return n;
}

bool has_dims(const Shape& shape, const std::vector<const char*>& vars) {
  for (const char* v : vars)
    if (dims_named(shape, v) == 0) return false;
  return true;
}

}  // namespace

TEST_CASE("autodiff: what the backward graph saves under each policy") {
  // recompute: nothing, whatever the composite
  CHECK(saved_shapes("std:nn.toml:softmax", {"x"}, GradSave::recompute).empty());
  CHECK(saved_shapes("std:nn.toml:attention", {"q", "k", "v"}, GradSave::recompute).empty());
  // softmax: stats saves the row maximum and sum ([N] reduced to [1]); all saves a full row too
  std::vector<Shape> s = saved_shapes("std:nn.toml:softmax", {"x"}, GradSave::stats);
  REQUIRE(s.size() == 2);
  for (const Shape& sh : s)
    CHECK(dims_named(sh, "N") == 0);
  s = saved_shapes("std:nn.toml:softmax", {"x"}, GradSave::all);
  CHECK(std::any_of(s.begin(), s.end(), [](const Shape& sh) { return dims_named(sh, "N") == 1; }));
  // layernorm: stats saves per-row values only
  s = saved_shapes("std:nn.toml:layernorm", {"x", "gamma", "beta"}, GradSave::stats);
  CHECK(!s.empty());
  for (const Shape& sh : s)
    CHECK(dims_named(sh, "N") == 0);
  // matmul: its backward reads only a and b, so nothing is saved under any policy
  for (GradSave save : kPolicies)
    CHECK(saved_shapes("std:nn.toml:matmul", {"a", "b"}, save).empty());
  // attention: stats recomputes the L x S scores and weights from q and k and saves row
  // statistics (and the unnormalised output, [B, H, L, D]) only: FlashAttention's choice; all
  // saves L x S values
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    auto attrs = std::map<std::string, AttrValue>{{"causal", test::attr_bool(causal)}};
    s = saved_shapes("std:nn.toml:attention", {"q", "k", "v"}, GradSave::stats, attrs);
    CHECK(s.size() >= 2);
    for (const Shape& sh : s)
      CHECK(!has_dims(sh, {"L", "S"}));
    CHECK(std::any_of(s.begin(), s.end(),
                      [](const Shape& sh) { return has_dims(sh, {"L"}) && !has_dims(sh, {"D"}); }));
    s = saved_shapes("std:nn.toml:attention", {"q", "k", "v"}, GradSave::all, attrs);
    CHECK(std::any_of(s.begin(), s.end(), [](const Shape& sh) {
      return has_dims(sh, {"L", "S"});
    }));
  }
  // the causal attention over the triangle: its scores are L x L
  s = saved_shapes("std:nn.toml:causal_attention", {"q", "k", "v"}, GradSave::stats);
  CHECK(s.size() >= 2);
  for (const Shape& sh : s)
    CHECK(dims_named(sh, "L") <= 1);
  s = saved_shapes("std:nn.toml:causal_attention", {"q", "k", "v"}, GradSave::all);
  CHECK(std::any_of(s.begin(), s.end(), [](const Shape& sh) { return dims_named(sh, "L") == 2; }));
}

TEST_CASE("autodiff: attention's gradient under each policy against finite differences") {
  for (const char* t : {"std:nn.toml:attention", "std:nn.toml:causal_attention"}) {
    CAPTURE(std::string(t));
    GradCase c{t, {"q", "k", "v"}, {{"B", 1}, {"H", 2}, {"L", 4}, {"S", 5}, {"D", 3}}};
    if (std::string(t).find("causal") != std::string::npos) c.sizes.erase("S");
    test::Run r = lowered(c);
    for (GradSave save : kPolicies)
      check_policy(r, c.wrt, save);
  }
}

TEST_CASE("autodiff: the save policies by name") {
  CHECK(parse_grad_save("stats") == GradSave::stats);
  CHECK(std::string(grad_save_name(GradSave::all)) == "all");
  CHECK_THROWS_WITH_AS(parse_grad_save("some"),
                       "unknown save policy 'some' for the backward composite; the policies are "
                       "recompute, stats and all",
                       std::invalid_argument);
}
