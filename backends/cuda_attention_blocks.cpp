#include "backends/cuda_attention_blocks.h"

#include <cmath>
#include <map>

#include "backends/c_style.h"

namespace kiln::softmax_tile {

namespace {

/** Whether `x` is `where(condition, value, -inf)`. */
bool where_minus_infinity(const ScalarExpr& x) {
  return x.kind == ScalarExpr::Kind::op && x.op == Op::where && x.mask.empty() &&
         x.args[2]->kind == ScalarExpr::Kind::constant && !x.args[2]->symbolic &&
         std::isinf(x.args[2]->value) && x.args[2]->value < 0;
}

/** C for the least and the greatest value of `d`, affine in statement iterators i0, i1, ...,
 *  over the block where iterator k lies in [lo[k], hi[k]]; false if `d` is not affine in them
 *  or uses others. */
bool affine_range(const IntExpr& d, const std::vector<std::string>& lo,
                  const std::vector<std::string>& hi, const std::set<std::string>& sizes,
                  std::string& low, std::string& high) {
  std::map<std::string, IntExpr> zero;
  low.clear();
  high.clear();
  for (size_t k = 0; k < lo.size(); ++k) {
    std::string it = iterator_name(static_cast<int>(k));
    std::optional<int64_t> a = affine_coefficient(d, it);
    if (!a) return false;
    zero[it] = IntExpr(0);
    if (*a == 0) continue;
    std::string coef = std::to_string(*a) + " * ";
    low += " + " + coef + (*a > 0 ? lo[k] : hi[k]);
    high += " + " + coef + (*a > 0 ? hi[k] : lo[k]);
  }
  std::set<std::string> rest;
  d.substitute(zero).collect_vars(rest);
  for (const std::string& r : rest)
    if (!sizes.count(r)) return false;
  const std::string base = "(" + int_expr_to_c(d.substitute(zero), sizes);
  low = base + low + ")";
  high = base + high + ")";
  return true;
}

/** C for whether boolean `e` may be true (`want`) or false (!want) somewhere in the block:
 *  comparisons of affine iterator expressions from their bounds over the block (statement
 *  iterator k lies in [lo[k], hi[k]]), the logical operations by three-valued logic, anything
 *  else "1" (it may). */
std::string may_be(const ScalarExpr& e, bool want, const std::vector<std::string>& lo,
                   const std::vector<std::string>& hi, const std::set<std::string>& sizes) {
  auto both = [&](const std::string& a, const std::string& op, const std::string& b) {
    if (a == "1" && op == "||") return std::string("1");
    if (b == "1" && op == "||") return std::string("1");
    return "(" + a + " " + op + " " + b + ")";
  };
  if (!e.mask.empty()) return "1";
  if (e.kind == ScalarExpr::Kind::constant && !e.symbolic && e.dtype == DType::boolean)
    return (e.int_value != 0) == want ? "1" : "0";
  if (e.kind != ScalarExpr::Kind::op) return "1";
  switch (e.op) {
    case Op::logical_not:
      return may_be(*e.args[0], !want, lo, hi, sizes);
    case Op::bit_or:
    case Op::bit_and: {
      if (e.dtype != DType::boolean) return "1";
      std::string a = may_be(*e.args[0], want, lo, hi, sizes),
                  b = may_be(*e.args[1], want, lo, hi, sizes);
      // or: true where either may be, false where both may be; and the reverse.
      return both(a, (e.op == Op::bit_or) == want ? "||" : "&&", b);
    }
    case Op::cmplt:
    case Op::cmpeq: {
      // The bounds of a - b over the block, from each iterator's coefficient.
      IntExpr d;
      for (int side = 0; side < 2; ++side) {
        const ScalarExpr& x = *e.args[side];
        IntExpr v;
        if (x.kind == ScalarExpr::Kind::iterator && x.index.size() == 1)
          v = x.index[0];
        else if (x.kind == ScalarExpr::Kind::constant && !x.symbolic && !is_float(x.dtype) &&
                 int_to_double(x.dtype, x.int_value) < 0x1.0p63)  // u64's top half: no int64
          v = IntExpr(x.int_value);
        else
          return "1";
        d = side == 0 ? v : d - v;
      }
      std::string low, high;
      if (!affine_range(d, lo, hi, sizes, low, high)) return "1";
      if (e.op == Op::cmplt) return want ? low + " < 0" : high + " >= 0";
      return want ? "(" + low + " <= 0 && " + high + " >= 0)"
                  : "(" + low + " != 0 || " + high + " != 0)";
    }
    default:
      return "1";
  }
}

}  // namespace

/** C for whether the score expression of `f` (its max's value, statement node `max_node`) may
 *  be finite somewhere in the tile's rows [N_rlo, N_rhi] and the key block [N_klo, N_khi]: each
 *  bound of the domain may hold (its greatest value is >= 0), and the condition of a
 *  `where(condition, value, -inf)` may be true, by may_be; "1" when nothing is known. */
std::string may_be_finite(const std::set<std::string>& sizes, const Statement& mx,
                          const std::vector<IntExpr>& domain, const LoopNode& tile,
                          const LoopNode& max_node, int rank) {
  std::vector<std::string> lo, hi;
  for (int k = 0; k < rank - 2; ++k) {
    lo.push_back("(" + ast_expr_to_c(*max_node.args.at(k)) + ")");
    hi.push_back(lo.back());
  }
  const std::string N = tile.name;
  lo.insert(lo.end(), {N + "_rlo", N + "_klo"});
  hi.insert(hi.end(), {N + "_rhi", N + "_khi"});
  std::string may;
  auto also = [&](const std::string& c) {
    if (c != "1") may += (may.empty() ? "" : " && ") + c;
  };
  for (const IntExpr& bound : domain) {
    std::string low, high;
    if (affine_range(bound, lo, hi, sizes, low, high)) also(high + " >= 0");
  }
  const ScalarExpr& x = *mx.value;
  const bool masked = where_minus_infinity(x);
  if (masked) also(may_be(*x.args[0], true, lo, hi, sizes));
  return may.empty() ? "1" : may;
}

/** C for whether the score expression of `f` is surely what its value says over the rows [rlo,
 *  rhi] and the keys [klo, khi]: every bound of the domain holds (its least value is >= 0) and
 *  the condition of a `where(condition, value, -inf)` is true (may_be false is "0"), by interval
 *  arithmetic as may_be; "0" when that cannot be known. `value_only` tells whether the where's
 *  value may stand for the whole expression there (the condition had a bound). */
std::string sure_inside(const std::set<std::string>& sizes, const Statement& mx,
                        const std::vector<IntExpr>& domain, const LoopNode& max_node, int rank,
                        const std::string& rlo, const std::string& rhi, const std::string& klo,
                        const std::string& khi, bool& value_only) {
  std::vector<std::string> lo, hi;
  for (int k = 0; k < rank - 2; ++k) {
    lo.push_back("(" + ast_expr_to_c(*max_node.args.at(k)) + ")");
    hi.push_back(lo.back());
  }
  lo.insert(lo.end(), {rlo, klo});
  hi.insert(hi.end(), {rhi, khi});
  std::string sure;
  auto also = [&](const std::string& c) { sure += (sure.empty() ? "" : " && ") + c; };
  for (const IntExpr& bound : domain) {
    std::string low, high;
    if (!affine_range(bound, lo, hi, sizes, low, high)) return "0";
    also(low + " >= 0");
  }
  value_only = false;
  const ScalarExpr& x = *mx.value;
  const bool masked = where_minus_infinity(x);
  if (masked) {
    const std::string may_be_false = may_be(*x.args[0], false, lo, hi, sizes);
    if (may_be_false != "1") {
      value_only = true;
      if (may_be_false != "0") also("!" + may_be_false);
    }
  }
  return sure.empty() ? "1" : sure;
}

}  // namespace kiln::softmax_tile
