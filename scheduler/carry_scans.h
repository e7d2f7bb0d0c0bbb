/** \file
 * Running values of scans in registers, a transform of the loop IR. A scan is one statement
 * that reads the element it wrote one step before along its axis (scheduler/build_statements.cpp,
 * materialize_scan): `y[.., k, ..] = k > 0 ? y[.., k - 1, ..] ⊕ x[.., k, ..] : x[.., k, ..]`.
 * Where the loop over k is the innermost loop around that statement (serial, step 1, the
 * statement its only child), the element read is the one the previous iteration wrote: the loop
 * is wrapped in an `alloc` node in `local` space marked LoopNode::carried, whose register starts
 * as the element before the loop's first iteration (the masked load itself, so 0 before the row)
 * and then stands for the load; each iteration sets it and stores it. The renderers then emit
 * `acc = k > 0 ? acc ⊕ x[k] : x[k]; y[k] = acc;`, and the chain from one element to the next runs
 * through a register instead of a store and a load of the same address.
 *
 * With `split` (a backend with threads, parallel loops on), a carried loop whose bounds do not
 * depend on the loops around it is marked `parallel`: the renderer may run a long row as a
 * blocked scan, its range cut into parts whose totals are combined first, when the rows around
 * it are too few to keep the threads busy (backends/openmp_renderer.h).
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** The load of statement `s`'s own buffer that reads, at iteration v of a loop whose only driven
 *  statement iterator is `along` (i_a = loop iterator + c), the element the statement wrote at
 *  iteration v - 1 — a scan's running value — or null when `s` is no such statement. */
const ScalarExpr* carried_load(const KernelPlan& plan, const Statement& s,
                               const std::string& along);

/** The operation of carried_load `before`'s statement value that combines it with the next
 *  element (its first operand is `before`), or null. */
const ScalarExpr* carried_combine(const ScalarExpr& value, const ScalarExpr* before);

/** Whether some statement of `k` is a scan along one of its iterators (carried_load). */
bool has_scan(const KernelPlan& plan, const Kernel& k);

/** Carries the running values of the scans of `nest` (the loop IR of `k`) in registers; returns
 *  how many. */
int carry_scans(const KernelPlan& plan, const Kernel& k, LoopNest& nest, bool split = false);

}  // namespace kiln
