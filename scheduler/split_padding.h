/** \file
 * Padding taken out of windows (CPU backends; BuildOptions::store_padding). Views compose, so a
 * convolution's `pad(x)` read through its window becomes one view of `x` whose every read tests
 * the padding's bounds: inside a contraction's k loop that turns each vector load of the
 * register tile into a masked one. This pass splits such a view V of source S into
 *
 *     P  = view(S): the padded tensor, over the range each tested index of V takes, with the tests;
 *     V' = view(P): V's index shifted into P, with no test;
 *
 * when V reads elements of P more than once (a window, whose index adds two variables, or a
 * broadcast, a variable no index uses) and P adds a few elements to S (at most 256 along a
 * dimension, at two very different sizes). The value planner then sees P as a value of its own and
 * stores it once where its reads multiply (ValueOptions::masked_view_cost), so the contraction
 * loads whole vectors from P. A view qualifies when every mask constraint of it tests one source
 * dimension's bounds (`0 <= index[d] < S.shape[d]`, as pad makes) and each such index is affine in
 * the view's variables with integer coefficients.
 */
#pragma once

#include "ir/graph.h"

namespace kiln {

/** Splits every qualifying view of `g` (topological order kept; the other nodes renumbered);
 *  returns how many. The graph computes the same values. */
int split_padding(Graph& g);

}  // namespace kiln
