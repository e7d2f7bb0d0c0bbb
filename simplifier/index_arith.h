/** \file
 * Index arithmetic over symbolic sizes: floor division and modulus of a view's index expressions
 * simplified with the ranges of the index variables (`0 <= %k < shape[k]`) and of the sizes
 * (`>= 0`). `(%0 * N + %1) / N` is `%0` and `(%0 * N + %1) % N` is `%1` when `%1 < N`; nested
 * divisions by constants fold, `(a / 4) / 8` being `a / 32`. Composing reshapes produces these.
 */
#pragma once

#include <map>
#include <string>

#include "ir/int_expr.h"
#include "ir/view.h"

namespace kiln {

/** `e` with every floor division and modulus that the ranges decide replaced; `extents` maps
 *  index variables ("%0", ...) to their extents. Size variables are taken as >= 0. */
IntExpr simplify_index(const IntExpr& e, const std::map<std::string, IntExpr>& extents);

/** `v` with its index expressions and masks simplified over its own index space. */
View simplify_view_index(const View& v);

}  // namespace kiln
