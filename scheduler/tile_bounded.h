/** \file
 * Bounded contractions made rectangular for the GPU's block tiles (GPU backends only).
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
 * It applies only where the result is a statement gpu_tile block-tiles; a bounded sum it would
 * not tile (a prefix sum: one element per thread over its own stretch does less work) and the
 * sums of a fused softmax-weighted contraction (scheduler/online_softmax.h, which skips the
 * key blocks outside the bounds itself) keep their bounds. Inside a block tile the points
 * outside the bounds cost their arithmetic: a triangle costs its box.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Rewrites the bounded sums of `plan` that gpu_tile would block-tile once rectangular; returns
 *  how many it rewrote. */
int tile_bounded_contractions(KernelPlan& plan);

}  // namespace kiln
