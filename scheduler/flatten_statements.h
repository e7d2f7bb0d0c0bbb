/** \file
 * Flattening contiguous elementwise work into one loop: a statement `y[i0, i1] = f(x[i0, i1])`
 * over [M, N], whose every access walks a buffer of the domain's shape in row-major order, runs
 * as one loop over M * N elements — one long unit-stride loop for the vectoriser instead of M
 * short ones. A flattened statement addresses its buffers as `[0, ..., 0, k]`, which renders to
 * the same offsets; it is flattened only when no other statement of its kernel touches the
 * buffer it writes and no statement writes a buffer it reads, so the isl access relations of
 * different statements never mix the two index forms.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Flattens every statement of `plan` that qualifies (see above); returns how many. */
int flatten_statements(KernelPlan& plan);

}  // namespace kiln
