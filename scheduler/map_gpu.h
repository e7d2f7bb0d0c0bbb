/** \file
 * Mapping a kernel's loops onto a GPU grid, a transform of the loop IR that reads the
 * annotations isl's schedule left (LoopNode::coincident, reduction) in the manner of PPCG: the
 * outer coincident loop strides over blocks, inner ones over the threads of a block. Every
 * mapped loop strides (ir/loop_ir.h), so the result is correct for any grid size and the launch
 * geometry is free to follow the sizes alone (backends/cuda_renderer.h, cuda_launch_geometry).
 *
 * The outermost loop L (below single-child blocks and guards) decides the shape:
 * - L coincident with no loop inside: a `thread.x` loop over the whole grid (elementwise work).
 * - L coincident and its only child a coincident loop L2: L is `block.x`, L2 `thread.x`; what is
 *   inside L2 runs serially on each thread (a matmul's k loop).
 * - L coincident with anything else inside (a row of softmax: statements, reductions, loops):
 *   L is `block.x` and its body a *block body*, one block per row.
 * - a sequence of such nests that share no buffer one writes: each shaped as above, one after
 *   the other, every one across the whole grid;
 * - otherwise the whole kernel is a block body on block 0 (a reduction to a scalar; the cuda
 *   backend cuts kernels where a grid-wide barrier would be needed, scheduler/cut_kernels.h).
 * - L (or a chain of coincident loops) with loops inside that walk memory across L and hold a
 *   reduction (a column sum): with `row_lanes`, one `block.x` loop over the points whose
 *   groups interleave (LoopNode::lanes_apart), a warp's threads on consecutive points and each
 *   point's reduction split among its lanes; else the chain across the grid's threads, a thread
 *   a point.
 * In a block body each child becomes a `thread.x` loop when it is a coincident loop, a block
 * reduction when it is a promoted accumulator (its outermost reduction loop `thread.x`: each
 * thread accumulates a strided share, then warp shuffles and shared memory combine the shares),
 * and runs on one thread (`single`) otherwise; a `barrier` follows each, so later children see
 * what earlier ones wrote.
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Maps `nest` (the loop IR of `k`) onto blocks and threads; returns how many loops it mapped.
 *  With `row_lanes`, rows whose reductions read across the rows take interleaved groups of
 *  lanes (LoopNode::lanes_apart; the target groups rows, scheduler/group_rows.h). */
int map_gpu(const Kernel& k, LoopNest& nest, bool row_lanes = false);

}  // namespace kiln
