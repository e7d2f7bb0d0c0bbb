/** \file
 * Bounds of a value that reads neither memory nor iterators (an invariant: a scale
 * `1 / sqrt(D)`), as an interval analysis over its ops. A transform uses them to know an
 * invariant's sign: a positive scale of attention's scores can move into the exponent's
 * constant (scheduler/online_softmax.h).
 */
#pragma once

#include <optional>

#include "ir/kernel_ir.h"

namespace kiln {

/** An interval of reals, either end infinite. */
struct ValueBounds {
  double lo = 0, hi = 0;
};

/** The bounds of invariant `e` as the generated code computes it: f16 and bf16 arithmetic in
 *  f32 (a value past f32's range becomes infinite), size variables whole numbers from 0 up, and
 *  casts to float types, constants, recip, sqrt, exp2, add, mul and max followed; nullopt for
 *  anything else (a load, an iterator, a mask, an op the analysis does not follow, a NaN). */
std::optional<ValueBounds> invariant_bounds(const ScalarExpr& e);

/** Whether invariant `e` is surely positive and not so small that f32 loses it (bounds known,
 *  the lower one at least 2^-100); it may be +inf. */
bool surely_positive(const ScalarExpr& e);

}  // namespace kiln
