/** \file
 * Small algebra on the loop IR that several transforms share: rectangular loops, their trip
 * counts, and iterators replaced by expressions in a whole subtree (used to collapse loops into
 * one, scheduler/gpu_tile.h and scheduler/map_gpu.h).
 */
#pragma once

#include <string>

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

/** The iterations of rectangular loop `l`, never negative. */
AstExprPtr extent(const LoopNode& l);

/** ⌈e / d⌉ for e >= 0. */
AstExprPtr ceil_div(const AstExprPtr& e, int64_t d);

/** `n` with loop iterator `iter` replaced by `value` in every expression below it (bounds,
 *  conditions and statement and alloc arguments). */
LoopNodePtr substitute_node(const LoopNodePtr& n, const std::string& iter, const AstExprPtr& value);

}  // namespace kiln
