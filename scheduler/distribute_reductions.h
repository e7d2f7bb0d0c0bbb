/** \file
 * A loop that holds two or more reductions, split one statement a loop (GPU backends), a
 * transform of the loop IR before promote_accumulators.
 *
 * isl fuses the statements of a row that share its loop: a layer norm's backward computes the
 * centred row and sums both its square and its product with the incoming gradient in one pass
 * (`for j { c[j] = x[j] - mean; ss += c[j]²; sd += dy[j]·g[j]·c[j]; }`). The loop carries two
 * sums, so it is no coincident loop, and promote_accumulators keeps one register for one
 * reduction only: on a GPU the block body ran the whole row on one thread (4096 terms, three
 * statements each, while 255 threads waited). Distributed, each loop holds one statement: the
 * store runs across the block's threads and each sum is a block reduction of its own.
 *
 * A loop is distributed when it is canonical, holds statements only (two or more reductions
 * among them, each into an element its loop does not move, so that it needs no other
 * statement's iteration), every plain statement writes an element that moves with the loop and
 * reads nothing of its own buffer, and a statement reads what an earlier one writes only at the
 * element that one writes in the same iteration, and nothing a later one writes: then running
 * each statement over the whole loop in turn computes what the fused loop does. A loop of one
 * plain statement is coincident. Decided from the statements' accesses alone.
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Distributes the loops of `nest` (the loop IR of `k`) that hold two or more reductions (see
 *  above); returns how many it split. */
int distribute_reductions(const Kernel& k, LoopNest& nest);

}  // namespace kiln
