/** \file
 * Sinking a parallel loop below a reduction, a transform of the loop IR for CPU backends.
 *
 * isl fuses a contraction's init, update and epilogue under their common loops, so the reduction
 * loop ends up innermost: `for j { S0; for k S1; S2 }`, where S1 reads `b[k, j]` with stride N at
 * every k. When the loop `j` is coincident and every access of the reduction's statement is
 * unit-stride or invariant in it, `j` is distributed over its children and sunk below the
 * reduction loops: `for j S0; for k for j S1; for j S2`, whose innermost loop runs along rows
 * of `b` and of the result, across vector lanes. Both steps are legal for any coincident loop
 * whose reduction loops' bounds do not use it: it carries no dependence, so its iterations may
 * run in any order, and the dependences between its children stay in textual order.
 *
 * A scan along a leading axis (scheduler/carry_scans.h) sinks the same way: `for j for k
 * y[k, j] = y[k - 1, j] + x[k, j]` walks columns with stride N; `for k for j` walks rows, its
 * inner loop across vector lanes.
 *
 * So does a coincident loop above a nest of coincident loops around an assignment that runs
 * unit-stride along the outer loop and not along the nest's innermost one: isl orders a band by
 * its dependences, not by the layout, and a column reduction's consumer (`mean[j] = sum(x[i, j],
 * i) / M; y[i, j] = x[i, j] - mean[j]`: batch normalisation, a quantised linear layer's zero-point
 * correction by its weights' row sums) came out as `for j for i`, every access N elements apart
 * (36x slower than the same kernel over rows at 2048²). The loop is distributed (the children
 * between the strided nests keep one copy of it, so a reduction's init and update stay
 * together) and sunk below those nests: `for i for j`.
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Sinks coincident loops of `nest` (the loop IR of kernel `k` of `plan`) below their
 *  reductions; returns how many loops it sank. With `packed` (a register tile follows,
 *  register_tile.h), a one-loop reduction whose operands shared by every row move along the loop
 *  with a stride sinks too: the tile's packed panel gathers them once per k block
 *  (map_loops.h, packable_statement), so `x · wᵀ` runs as `x · w` does. */
int sink_below_reductions(const KernelPlan& plan, const Kernel& k, LoopNest& nest,
                          bool packed = false);

}  // namespace kiln
