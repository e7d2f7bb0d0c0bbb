/** \file
 * Reduces computed in the split shape their readers read them in, a pass over the graph before
 * the values are planned.
 *
 * A projection whose result is split into heads by a size, `q2[b, l, o] = sum(x·wq, e)` read
 * as `reshape(q2, [B, L, H, E / H])`, reads q2 at `[b, l, (E / H)·h + d]`: an index that
 * multiplies a position by a size, which isl cannot see exactly and a tile cannot stride
 * through, so the attention that reads it would copy q2 into a layout of its own
 * (build_statements) and lose its fused kernel. This pass computes such a reduce R in the
 * split shape instead, R' of shape [B, L, H, E / H, 1], over its operand read through the
 * same split (`wq[(E / H)·h + d, e]`, a view of an input that build_statements reads through a
 * split alias of its buffer), and its readers read R' at `[b, l, h, d]`.
 *
 * A value qualifies — a reduce, or a pointwise node over one (a projection plus its bias,
 * `sum(x·wq, e) + bq[o]`) — when it is not an output and every reader is a view (not a
 * gather's source) whose index into it splits the same kept dimensions the same way (ir/view.h
 * split_address, under the graph's equalities). A kept dimension of one point that every
 * reader reads at 0 (a reduce's `[B, L, E, 1]`) is left out, so the heads are stored with
 * their elements innermost. The value is lifted by pushing the split view down through the
 * region it alone reads — views (which compose), pointwise nodes (cloned at the split shape)
 * and reduces (computed at the split positions, their reduced axes after them) — while any
 * node also read from outside the region is read through the view.
 */
#pragma once

#include "ir/graph.h"

namespace kiln {

/** Computes every qualifying value of `g` in its readers' split shape (topological order
 *  kept; the other nodes renumbered); returns how many. The graph computes the same values. */
int split_reduces(Graph& g);

}  // namespace kiln
