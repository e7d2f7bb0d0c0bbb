#include "ir/value_bounds.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/** `x` as the compute type of `t` holds it: f32 for everything but f64. */
double in_compute_type(double x, DType t) {
  if (t == DType::f64) return x;
  if (x > FLT_MAX) return kInf;
  if (x < -FLT_MAX) return -kInf;
  return x;
}

/** a · b for non-negative a and b, 0 · inf taken as 0 (the ends of an interval, not a value). */
double product(double a, double b) {
  return a == 0 || b == 0 ? 0 : a * b;
}

}  // namespace

std::optional<ValueBounds> invariant_bounds(const ScalarExpr& e) {
  if (!e.mask.empty()) return std::nullopt;
  if (e.kind == ScalarExpr::Kind::constant) {
    if (e.symbolic) {
      if (std::optional<int64_t> c = e.size_value.as_constant())
        return ValueBounds{static_cast<double>(*c), static_cast<double>(*c)};
      if (!nonnegative_over_vars(e.size_value)) return std::nullopt;
      return ValueBounds{0, static_cast<double>(std::numeric_limits<int64_t>::max())};
    }
    const double x = is_float(e.dtype) ? e.value : static_cast<double>(e.int_value);
    if (std::isnan(x)) return std::nullopt;
    return ValueBounds{x, x};
  }
  if (e.kind != ScalarExpr::Kind::op) return std::nullopt;
  std::vector<ValueBounds> a;
  for (const ScalarExprPtr& arg : e.args) {
    std::optional<ValueBounds> b = invariant_bounds(*arg);
    if (!b) return std::nullopt;
    a.push_back(*b);
  }
  ValueBounds r;
  switch (e.op) {
    case Op::cast:
      if (!is_float(e.dtype)) return std::nullopt;
      r = a[0];
      break;
    case Op::sqrt:
      if (a[0].lo < 0) return std::nullopt;
      r = {std::sqrt(a[0].lo), std::sqrt(a[0].hi)};
      break;
    case Op::recip:  // 1 / x falls over x >= 0 (1 / 0 = inf)
      if (a[0].lo < 0) return std::nullopt;
      r = {a[0].hi == kInf ? 0 : 1 / a[0].hi, a[0].lo == 0 ? kInf : 1 / a[0].lo};
      break;
    case Op::exp2:
      r = {std::exp2(a[0].lo), std::exp2(a[0].hi)};
      break;
    case Op::mul:
      if (a[0].lo < 0 || a[1].lo < 0) return std::nullopt;
      r = {product(a[0].lo, a[1].lo), product(a[0].hi, a[1].hi)};
      break;
    case Op::add:
      r = {a[0].lo + a[1].lo, a[0].hi + a[1].hi};
      if (std::isnan(r.lo) || std::isnan(r.hi)) return std::nullopt;  // inf - inf
      break;
    case Op::max:
      r = {std::max(a[0].lo, a[1].lo), std::max(a[0].hi, a[1].hi)};
      break;
    default:
      return std::nullopt;
  }
  return ValueBounds{in_compute_type(r.lo, e.dtype), in_compute_type(r.hi, e.dtype)};
}

bool surely_positive(const ScalarExpr& e) {
  std::optional<ValueBounds> b = invariant_bounds(e);
  return b && b->lo >= std::ldexp(1.0, -100);
}

}  // namespace kiln
