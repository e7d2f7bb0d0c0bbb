#include "driver/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln {

namespace {

/** Element k of `t` as text; `value` is a float element after rounding to the dtype. */
std::string element_text(const Tensor& t, size_t k, double value) {
  if (t.dtype == DType::u64) return std::to_string(static_cast<uint64_t>(t.i[k]));
  if (!is_float(t.dtype)) return std::to_string(t.i[k]);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", t.dtype == DType::f64 ? 17 : 9, value);
  return buf;
}

}  // namespace

Tolerance tolerance_for(DType t, std::optional<double> rtol, std::optional<double> atol,
                        const Tensor& want) {
  if (!is_float(t)) return {0, 0};
  double r = t == DType::f64 ? 1e-9 : t == DType::f32 ? 2e-5 : t == DType::f16 ? 1e-2 : 4e-2;
  r = std::max(r, rtol.value_or(0));
  double scale = 0;
  for (size_t k = 0; k < want.numel(); ++k) {
    double w = round_to_float(t, want.at(k));
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  return {r, std::max(atol.value_or(0), r * std::max(scale, 1e-30))};
}

Comparison compare(const Tensor& got, const Tensor& want, const Tolerance& tol) {
  Comparison c;
  if (got.dims != want.dims || got.numel() != want.numel()) {
    c.ok = false;
    return c;
  }
  for (size_t k = 0; k < want.numel(); ++k) {
    // the reference is exact math; the best a kernel can give is its rounding to the dtype
    double g = got.at(k),
           w = is_float(want.dtype) ? round_to_float(want.dtype, want.at(k)) : want.at(k);
    // integers compare exactly: as doubles, i64 and u64 values past 2^53 could round together
    bool exact = !is_float(got.dtype) && got.dtype == want.dtype;
    bool same = exact ? got.i[k] == want.i[k] : (std::isnan(g) && std::isnan(w)) || g == w;
    double err = same ? 0 : std::fabs(g - w);
    if (!std::isnan(err)) {
      c.max_abs = std::max(c.max_abs, err);
      if (w != 0) c.max_rel = std::max(c.max_rel, err / std::fabs(w));
    }
    bool ok = same || (!exact && err <= tol.atol + tol.rtol * std::fabs(w));
    if (!ok && c.ok) {
      c.ok = false;
      c.first_bad = k;
      c.got = element_text(got, k, g);
      c.want = element_text(want, k, w);
    }
  }
  return c;
}

}  // namespace kiln
