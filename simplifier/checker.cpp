#include "simplifier/checker.h"

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "simplifier/match.h"

namespace kiln {

namespace {

constexpr int64_t kElements = 48;

std::vector<double> special_values(DType t) {
  if (t == DType::boolean) return {0, 1};
  if (is_float(t)) {
    double inf = std::numeric_limits<double>::infinity();
    return {0, -0.0, 1, -1, 2, 0.5, -0.5, 3, -3, 1e-30, 1e30, 65504, inf, -inf, std::nan("")};
  }
  int bits = dtype_bits(t);
  bool is_signed = is_signed_int(t);
  double max = is_signed ? std::ldexp(1, bits - 1) - 1 : std::ldexp(1, bits) - 1;
  double min = is_signed ? -std::ldexp(1, bits - 1) : 0;
  std::vector<double> out = {0, 1, -1, 2, -2, 3, 7, 8, -8, 16, max, min, max - 1, min + 1};
  if (!is_signed) {  // the top bit set: where unsigned compare, divide and shift differ
    double top = std::ldexp(1, bits - 1);
    out.insert(out.end(), {top, top + 1, 1.5 * top});
  }
  return out;
}

/** Names of variables that must be bool: conditions of `where`, operands of `logical_not`. */
void bool_vars(const Pattern& p, bool want_bool, std::set<std::string>& out) {
  if (p.kind == Pattern::Kind::any && want_bool) out.insert(p.name);
  for (size_t k = 0; k < p.args.size(); ++k) {
    bool b =
        p.kind == Pattern::Kind::op && ((p.op == Op::where && k == 0) || p.op == Op::logical_not);
    bool_vars(*p.args[k],
              b || (want_bool && p.kind == Pattern::Kind::op &&
                    (p.op == Op::bit_and || p.op == Op::bit_or || p.op == Op::bit_xor)),
              out);
  }
}

void variables(const Pattern& p, std::set<std::string>& any, std::set<std::string>& consts) {
  if (p.kind == Pattern::Kind::any) any.insert(p.name);
  if (p.kind == Pattern::Kind::constant) consts.insert(p.name);
  for (const PatternPtr& a : p.args)
    variables(*a, any, consts);
}

Tensor mixed_input(DType t, std::mt19937_64& rng, bool finite_only) {
  Tensor x(t, {kElements});
  std::vector<double> specials = special_values(t);
  std::uniform_real_distribution<double> u(-4, 4);
  for (int64_t k = 0; k < kElements; ++k) {
    double v = specials[rng() % specials.size()];
    if (rng() % 2 || (finite_only &&
                      (!std::isfinite(v) || std::fabs(v) > 1e6 || (v != 0 && std::fabs(v) < 1e-6))))
      v = is_float(t) ? u(rng) : std::floor(u(rng) * 4);
    if (t == DType::boolean) v = rng() % 2;
    x.set(k, v);  // integers: wrapped, u64 exact up to 2^64
  }
  return x;
}

double ulp_tolerance(DType t) {
  switch (t) {
    case DType::f64:
      return 8 * std::numeric_limits<double>::epsilon();
    case DType::f32:
      return 8 * std::numeric_limits<float>::epsilon();
    case DType::f16:
      return 8 * 9.77e-4;
    default:
      return 8 * 7.82e-3;  // bf16
  }
}

std::string element_text(const Tensor& t, size_t k) {
  std::ostringstream s;
  if (is_float(t.dtype)) {
    double v = t.f[k];
    if (v == 0 && std::signbit(v))
      s << "-0";
    else
      s << v;
  } else {
    s << int_to_string(t.dtype, t.i[k]);
  }
  return s.str();
}

struct Trial {
  GraphBuilder b;
  NodeId pattern = -1, replacement = -1;
  std::vector<Tensor> inputs;
  std::map<std::string, double> constants;
};

class RuleChecker {
 public:
  RuleChecker(const Rule& rule, uint64_t seed) : rule_(rule), rng_(seed) {
    variables(*rule.pattern, any_, consts_);
    bool_vars(*rule.pattern, false, bools_);
  }

  RuleCheck run(int trials) {
    RuleCheck out;
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::i8,
                    DType::u8, DType::u16, DType::u32, DType::u64, DType::boolean}) {
      bool typed = false;
      for (int k = 0; k < trials && out.ok; ++k)
        trial(t, out, typed);
      out.dtypes += typed;
      if (!out.ok) break;
    }
    if (out.ok && out.dtypes == 0) {
      out.ok = false;
      out.failure = "no dtype makes the pattern well typed";
    }
    return out;
  }

 private:
  const Rule& rule_;
  std::mt19937_64 rng_;
  std::set<std::string> any_, consts_, bools_;

  void trial(DType t, RuleCheck& out, bool& typed) {
    Trial tr;
    Bindings vars;
    Shape shape{IntExpr(kElements)};
    for (const std::string& v : any_) {
      DType vt = bools_.count(v) ? DType::boolean : t;
      vars[v] = tr.b.g.input(v, vt, shape, false);
      tr.inputs.push_back(mixed_input(vt, rng_, rule_.fastmath));
    }
    std::vector<double> specials = special_values(t);
    for (const std::string& c : consts_) {
      double v = specials[rng_() % specials.size()];
      if (rule_.fastmath && !std::isfinite(v)) v = 2;
      vars[c] = tr.b.g.constant(t, shape, v);
      tr.constants[c] = tr.b.g[vars[c]].value;
    }
    Node root;
    root.dtype = t;
    root.shape = shape;
    std::optional<Rewrite> p = instantiate(*rule_.pattern, vars, root, tr.b);
    if (!p) return;
    tr.pattern = p->existing ? *p->existing : tr.b.g.add(p->node);
    if (!verify(tr.b.g).empty()) return;  // this dtype does not fit the pattern
    Bindings b;
    if (!match_root(*rule_.pattern, tr.b.g[tr.pattern], tr.b.g, b)) return;
    typed = true;
    if (rule_.guard && !guard_holds(*rule_.guard, b, tr.b.g, tr.b.opt)) {
      ++out.declined;
      return;
    }
    Node pattern_root = tr.b.g[tr.pattern];
    std::optional<Rewrite> r = instantiate(*rule_.replacement, b, pattern_root, tr.b);
    if (!r) {
      ++out.declined;
      return;
    }
    tr.replacement = r->existing ? *r->existing : tr.b.g.add(r->node);
    compare(tr, t, out);
  }

  std::optional<Tensor> evaluate(Trial& tr, NodeId node) {
    tr.b.g.outputs = {{"y", node}};
    return interpret(tr.b.g, {}, tr.inputs)[0];
  }

  void compare(Trial& tr, DType t, RuleCheck& out) {
    if (std::vector<std::string> errors = verify(tr.b.g); !errors.empty()) {
      fail(out, t, "the replacement is ill-typed: " + errors[0]);
      return;
    }
    std::optional<Tensor> want, got;
    try {
      want = evaluate(tr, tr.pattern);
    } catch (const std::runtime_error&) {
      return;  // the pattern itself has no value here (an integer division by zero)
    }
    try {
      got = evaluate(tr, tr.replacement);
    } catch (const std::runtime_error& e) {
      fail(out, t, std::string("the replacement fails where the pattern does not: ") + e.what());
      return;
    }
    ++out.cases;
    std::string diff = compare_results(*got, *want, rule_.fastmath);
    if (diff.empty()) return;
    std::string where = diff;
    for (size_t k = 0; k < tr.b.g.inputs.size(); ++k) {
      size_t at = std::stoul(diff.substr(0, diff.find(':')));
      where += ", " + tr.b.g[tr.b.g.inputs[k]].name + " = " + element_text(tr.inputs[k], at);
    }
    for (const auto& [c, v] : tr.constants) {
      std::ostringstream s;
      s << v;
      where += ", " + c + " = " + s.str();
    }
    fail(out, t, where);
  }

  void fail(RuleCheck& out, DType t, const std::string& why) {
    out.ok = false;
    out.failure = std::string(dtype_name(t)) + ": " + why;
  }
};

bool floats_agree(double got, double want, DType t, bool fastmath) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (got == want) return fastmath || std::signbit(got) == std::signbit(want);
  if (std::isinf(got) || std::isinf(want)) return false;
  double scale = std::max(std::fabs(got), std::fabs(want));
  double tol = fastmath ? (t == DType::f16 || t == DType::bf16 ? 3e-2 : 1e-3) : ulp_tolerance(t);
  return std::fabs(got - want) <= tol * scale + (fastmath ? 1e-6 : 0);
}

}  // namespace

std::string compare_results(const Tensor& got, const Tensor& want, bool fastmath) {
  for (size_t k = 0; k < want.numel(); ++k) {
    bool same;
    if (is_float(want.dtype)) {
      if (fastmath && (!std::isfinite(want.f[k]) || !std::isfinite(got.f[k]))) continue;
      same = floats_agree(got.f[k], want.f[k], want.dtype, fastmath);
    } else {
      same = got.i[k] == want.i[k];
    }
    if (!same)
      return std::to_string(k) + ": the pattern gives " + element_text(want, k) +
             ", the replacement " + element_text(got, k);
  }
  return "";
}

RuleCheck check_rule(const Rule& rule, uint64_t seed, int trials) {
  if (!rule.pattern) return RuleCheck{};
  try {
    return RuleChecker(rule, seed).run(trials);
  } catch (const std::exception& e) {
    RuleCheck out;
    out.ok = false;
    out.failure = e.what();
    return out;
  }
}

}  // namespace kiln
