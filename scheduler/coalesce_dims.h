/** \file
 * Fewer loop dimensions before isl, whose scheduling and AST time grow steeply with the depth of
 * a domain (softmax over 16 batch dimensions took seconds to schedule and its C seconds to
 * compile). Two rewrites of every statement's domain, run before flatten_statements:
 *
 * - a dimension whose extent is the constant 1 (a size bound by `--specialize`) is dropped and
 *   its iterator replaced by 0 in every index, mask and iterator value;
 * - adjacent dimensions d, d+1 that every access of the statement walks together — buffer
 *   positions p, p+1 indexed exactly by `i_d`, `i_{d+1}` over the same extents, and no mask or
 *   iterator value using either — become one dimension over the product of the extents,
 *   addressed as `[..., 0, j, ...]`, which renders to the same row-major offsets (the form of
 *   flatten_statements). Runs of such pairs merge into one dimension.
 *
 * A buffer that a kernel writes must be addressed in one form by every statement of that
 * kernel, so isl's dependences stay exact: two of its positions merge only when every access to
 * them in the kernel merges there too or reads `(0, 0)`; the greatest such set of merges is
 * found by a fixpoint. isl sees one kernel at a time, so each kernel chooses its own form, and
 * buffers a kernel only reads may be addressed there in both. Buffers of extern calls, which isl
 * sees whole with their declared shape, are never merged.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** What coalesce_dims did. */
struct CoalesceCount {
  int dropped = 0;  ///< size-1 dimensions removed
  int merged = 0;   ///< dimensions merged into their neighbour
};

/** Rewrites the domains of every statement of `plan` (see above). */
CoalesceCount coalesce_dims(KernelPlan& plan);

}  // namespace kiln
