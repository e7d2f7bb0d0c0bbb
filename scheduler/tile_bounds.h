/** \file
 * Bounds of a register tile's loops narrowed to what its rows need (scheduler/register_tile.h):
 * a bounded sum made rectangular (scheduler/tile_bounded.h) adds zeros outside its bound, and a
 * value computed only where it is read (Statement::needed) need not be computed past it; a tile
 * of n rows runs each loop only as far as its extreme row needs.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Where sum `s` folds `where(c, term, 0)` and `c` bounds the reduction iterator by the row
 *  iterator (P·V under `j <= i`), the reduction loop `loop` of a tile of `n` rows from loop
 *  iterator `origin` narrowed to the values where c holds for some row of the tile. Stmt node
 *  `stmt` gives the statement iterators' loop values; `row_iter` is the row loop's iterator and
 *  `sizes` the plan's size variables. Null where nothing narrows. */
LoopNodePtr narrowed_to_rows(const Statement& s, const LoopNode& stmt, const LoopNode& loop,
                             const std::string& row_iter, const std::string& origin, int64_t n,
                             const std::vector<std::string>& sizes);

/** The end (exclusive) of the lane tile origins of a tile of `n` rows from loop iterator
 *  `origin` that hold a point `s` must compute (`s.needed` bounding the lane iterator from above
 *  by the row); `loops` are the tile's loops (the reduction loops, then the lanes). Null where
 *  no bound narrows. */
AstExprPtr needed_lane_end(const Statement& s, const LoopNode& stmt,
                           const std::vector<const LoopNode*>& loops, const std::string& row_iter,
                           const std::string& origin, int64_t n,
                           const std::vector<std::string>& sizes);

}  // namespace kiln
