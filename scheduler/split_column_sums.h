/** \file
 * Column reductions out of a kernel of rows: a reduction along a statement's first
 * iterator — a sum over the rows into one element per column, as a norm's dgamma and dbeta, or
 * into one scalar, as a loss's mean over its rows —
 * fused with statements that write row by row carries a dependence along the rows, so isl's
 * fused schedule runs every row on one thread (and keeps the row sums beside it from their own
 * vector loops). Such a reduction, its init with it, moves to a kernel of its own right after
 * the rest; the rows then run in parallel and the column sums in one pass of their own over what
 * they read (docs/decisions.md, "Column sums get a kernel of their own on the CPU").
 *
 * On a GPU the fused schedule is worse still: a kernel whose rows carry a dependence maps onto
 * one block, its rows on one thread (a cross-entropy over 8192 rows of 32000 ran longer than a
 * minute on an H200).
 *
 * It applies, per kernel, to the statements that write one buffer R (its reduce_init and
 * reduce_update statements only) when an update does not index R with its first iterator and
 * reads along it; statements after them that read what moves, writing no element per row (a
 * mean's division, a loss's scale), move too, and no other statement of the kernel reads it; no
 * later statement writes what one of them reads (moved to the end, each reads what it read in
 * place); and a statement that writes along its own first iterator stays behind (else there is
 * nothing to gain). Runs before
 * cut_kernels, so the statement budget counts what is left. Decided from the statements'
 * accesses alone, never from a composite's name.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Moves the column reductions of every kernel of `plan` into a kernel of their own after it
 *  (see above); returns how many buffers' statements moved. */
int split_column_sums(KernelPlan& plan);

}  // namespace kiln
