/** \file
 * Bounded contractions made rectangular for the GPU's block tiles and the CPU's register tiles.
 *
 * A sum over a bounded domain (docs/primitives.md, `reduce`) runs on the GPU one element per
 * thread, each walking its part of the domain: causal attention's scores `s[r, j] += q[r, d] ·
 * k[j, d]` under `j <= r` read every operand element again and again from global memory, where
 * the rectangular form would be block-tiled (scheduler/gpu_tile.h) and read each operand tile
 * once into shared memory. This pass gives such a sum a rectangular domain with the same result:
 *
 *   - bounds on the element's own iterators (j <= r on s[r, j]) leave the sum over the whole
 *     box, and a statement after it puts the identity back outside them:
 *     `s[r, j] = r - j >= 0 ? s[r, j] : 0`, an epilogue that stays in the contraction's tile;
 *   - bounds that use a summed iterator (o[r, c] += p[r, j] · v[j, c] under j <= r) become a
 *     select on the term, `j <= r ? term : 0`, as a mask would.
 *
 * On the CPU the register tile takes such a sum likewise (a select on the term whose condition
 * does not move along the lanes is a lane value, ir/kernel_ir.h): causal attention's scores and
 * weighted values then run on register tiles instead of isl's tiles over the triangle, and a
 * tile's reduction loop stops past the last j its rows' select lets through
 * (register_tile.h), so P·V does the triangle's work plus a tile's edge.
 *
 * It applies only where the result is a statement the tiles take; a bounded sum they would
 * not tile (a prefix sum: one element per thread over its own stretch does less work) and the
 * sums of a fused softmax-weighted contraction (scheduler/online_softmax.h, which skips the
 * key blocks outside the bounds itself) keep their bounds. Inside a block tile the points
 * outside the bounds cost their arithmetic: a triangle costs its box.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** The tiles a rectangular sum is for: the GPU's block tiles (scheduler/gpu_tile.h) or the CPU's
 *  register tiles (scheduler/register_tile.h). */
enum class BoundedTiles { gpu_blocks, cpu_registers };

/** Rewrites the bounded sums of `plan` that `tiles` would tile once rectangular; returns how
 *  many it rewrote. */
int tile_bounded_contractions(KernelPlan& plan, BoundedTiles tiles = BoundedTiles::gpu_blocks);

}  // namespace kiln
