/** \file
 * Small algebra on the loop IR that several transforms share: rectangular loops, their trip
 * counts and bounds, iterators replaced by expressions in a whole subtree (used to collapse
 * loops into one, scheduler/gpu_tile.h and scheduler/map_gpu.h), and the builders of loops,
 * guards and nests that scheduler/register_tile.h assembles tiles from.
 */
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace kiln {

/** Whether `e` refers to any loop iterator. */
bool has_iterator(const AstExpr& e);

/** Whether `l` is a canonical loop that runs from a first value to a bound of size variables
 *  only (no loop iterator in either), by 1. */
bool rectangular(const LoopNode& l);

/** Whether `e` is the integer literal `v`. */
bool is_int(const AstExpr& e, int64_t v);

/** a + b, with a zero operand folded away. */
AstExprPtr add(const AstExprPtr& a, const AstExprPtr& b);

/** a - b, with a zero b folded away. */
AstExprPtr sub(const AstExprPtr& a, const AstExprPtr& b);

/** The bound the iterator of canonical loop `l` stays below (`iter < bound`,
 *  `iter <= bound - 1`). */
AstExprPtr upper(const LoopNode& l);

/** `for (iter = init; cond; iter += step) body`, coincident, carrying nothing but reductions
 *  (a loop over tiles or a tile's points that a transform builds). */
LoopNodePtr coincident_loop(const std::string& iter, AstExprPtr init, AstExprPtr cond, int64_t step,
                            std::vector<LoopNodePtr> body);

/** `if (cond) body`. */
LoopNodePtr make_guard(AstExprPtr cond, LoopNodePtr body);

/** The perfect nest `loops` (outermost first) around `stmt`, rebuilt: the loop `skip` left
 *  out (none when -1) and the innermost loop starting at `init` when that is not null. */
LoopNodePtr rebuild_nest(const std::vector<const LoopNode*>& loops, const LoopNode& stmt, int skip,
                         const AstExprPtr& init);

/** The iterations of rectangular loop `l`, never negative. */
AstExprPtr extent(const LoopNode& l);

/** ⌈e / d⌉ for e >= 0. */
AstExprPtr ceil_div(const AstExprPtr& e, int64_t d);

/** `n` with loop iterator `iter` replaced by `value` in every expression below it (bounds,
 *  conditions and statement and alloc arguments). */
LoopNodePtr substitute_node(const LoopNodePtr& n, const std::string& iter, const AstExprPtr& value);

}  // namespace kiln
