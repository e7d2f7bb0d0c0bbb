/** \file
 * Comparing a runtime's outputs with the interpreter's: tolerances that fit the dtype, NaN equal
 * to NaN, infinities exact, and the largest absolute and relative errors for the report.
 */
#pragma once

#include <optional>
#include <string>

#include "ir/tensor.h"

namespace kiln {

/** |got - want| <= atol + rtol * |want| element by element. */
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/** The default for a dtype, widened by a composite's own test tolerances when given. The
 *  absolute part scales with the largest reference magnitude, so sums of many terms compare
 *  sensibly. Integers and bool compare exactly. */
Tolerance tolerance_for(DType t, std::optional<double> rtol, std::optional<double> atol,
                        const Tensor& want);

/** The result of one comparison. The reference is first rounded to its dtype. */
struct Comparison {
  bool ok = true;
  double max_abs = 0;
  double max_rel = 0;
  size_t first_bad = 0;  ///< index of the first element out of tolerance, when !ok
  /** That element of each, as text: integers exactly (u64 past 2^63 and i64 past 2^53
   *  included), floats to the digits that tell them apart. */
  std::string got, want;
};

Comparison compare(const Tensor& got, const Tensor& want, const Tolerance& tol);

}  // namespace kiln
