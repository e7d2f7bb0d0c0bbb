/** \file
 * The next row's lines fetched during a pass over cached data, a transform of the loop IR for
 * CPU backends.
 *
 * A row-wise kernel makes several passes over each row: softmax's max, then `exp(x - max)`
 * stored and summed, then the division. The first pass reads the row from memory; the later
 * ones find it in L1 and are bound by their arithmetic, while memory idles until the next row's
 * first pass stalls on it again. This step overlaps the two: in each pass after the first and
 * before the last (the last writes the output, often streamed), a loop running unit-stride
 * along the row is strip-mined into strips of four cache lines (64 bytes of its widest element
 * each: a strip of one line is shorter than the vectorised loop's body, which then never
 * runs), and each strip first prefetches, for the row loop's next iteration, the four lines of
 * every element its statements read and write (prefetch nodes, ir/loop_ir.h):
 *
 *     for (r ...)                                // the row loop (across threads or not)
 *       for (j ...) S1(r, j)                     // pass 1: reads row r from memory
 *       for (jp = 0; jp < N; jp += 64)           // pass 2, strips of four lines (f32)
 *         if (r + 1 < R)                         // row r + 1's lines of x and y
 *           prefetch S3(r + 1, jp); prefetch S3(r + 1, jp + 16); ... jp + 48
 *         for (j = jp; j < min(jp + 64, N); j++) S3(r, j); S4(r, j)
 *       for (j ...) S5(r, j)                     // the last pass
 *
 * softmax 4096 × 4096 f32 on a 2-core Sapphire Rapids: 8.5 -> 5.8 ms on two threads (a copy
 * 4.8 ms), since its exponentials' stores into y cost a line read each (docs/performance.md).
 * Only a pass computing exponentials, logarithms or sines is strip-mined: a cheaper one
 * (layernorm's variance) does not hide the fetch, and its strips' extra horizontal sums cost
 * layernorm 12 %. Passes reach the row loop through blocks, allocs and guards that do not use
 * its iterator; only statements whose every access moves unit-stride or not at all along the
 * pass are prefetched. No value changes: a prefetch is a hint (PREFETCH=0 turns the step off).
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Strip-mines the middle passes of row loops of `nest` (kernel `k` of `plan`) with prefetches
 *  of the next row (file comment); returns how many passes it changed. */
int prefetch_rows(const KernelPlan& plan, const Kernel& k, LoopNest& nest);

}  // namespace kiln
