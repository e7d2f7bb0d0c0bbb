/** \file
 * Scalar accumulators for reductions, a transform of the loop IR. A reduction statement
 * (`reduce_update`) whose loops form a perfect nest below some loop L — only loops down to the
 * one statement, no guards, bounds that do not depend on each other — and whose written element
 * does not change inside L accumulates in a register across L instead of in memory: L is wrapped
 * in an `alloc` node in `local` space that loads the element before L and stores it after, and
 * L's loops are marked LoopNode::reduction. Without it a contraction reads and writes its
 * accumulator through memory at every step of the reduction.
 *
 * isl may fuse a reduction's init into the first iteration of the loop that then updates it
 * (`for j { e = exp(..); if (j == 0) sum = 0; sum += e; }`, attention's row sums); such inits
 * move before the loop first, in a guard that the loop runs, unless a statement before them in
 * that iteration touches their buffer. The loop then promotes like any other, and runs across
 * vector lanes: its only other carried dependence was the init's (isl::drop_dependences).
 *
 * A float sum along one loop whose extent may pass `sum_block` runs in blocks of that many terms
 * (a loop over blocks around the alloc, the loop below it over one block): the register starts
 * from 0 in each block and is added to the element after it (LoopNode::partial). One register
 * for 16 million terms loses the later ones to the total's rounding (relative error 1.6e-3 in a
 * mean squared error over 4096²); in blocks the error grows with the block and the block count,
 * not their product, at one load and store of the element per block.
 *
 * Not promoted: f16 and bf16 buffers unless `half` (their storage and compute types differ, and
 * rounding once instead of at every step changes results; a GPU block reduction needs the
 * register, and rounding once is the closer to exact math), and statements whose value reads the
 * buffer they accumulate into.
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** The terms of a CPU sum's block (see above): 4096, a few thousand cycles of vector adds between
 *  two updates of the element. */
constexpr int64_t kSumBlock = 4096;

/** Promotes the accumulators of `nest` (the loop IR of `k`); returns how many. */
int promote_accumulators(const KernelPlan& plan, const Kernel& k, LoopNest& nest, bool half = false,
                         int64_t sum_block = 0);

}  // namespace kiln
