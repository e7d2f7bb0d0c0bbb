/** \file
 * Windows of stacked buffers, a pass over the kernel plan before scheduling.
 *
 * A block repeated over stacked weights (`repeat`, docs/spec-language.md) reads `w[l, c, o]`
 * in its l-th copy: the kernels of the copies differ only in the constant `l`, which the
 * rendered index carries (`l·C·3C + ...`). This pass gives such a kernel a window of the
 * buffer instead: a buffer of the remaining dimensions whose first element is `w[l, 0, 0]`,
 * read at `[c, o]`. The launch passes the kernel a pointer to that element (driver/executable.h),
 * so the copies pose the same problem to every later stage and run one code
 * (scheduler/share_kernels.h).
 *
 * A buffer gets a window in a kernel when it is an input or output (not a temporary, whose
 * slots differ between copies anyway) and every access of the kernel to it (every load and
 * every write; a call statement's whole buffers none) agrees on the constant value of one or
 * more leading dimensions; the window keeps at least one dimension. Kernels reading the same
 * prefix of the same buffer share one window buffer. It runs before coalesce_dims and
 * flatten_statements, while every index lies inside its dimension (flattening reads a buffer
 * at a leading 0 and a linear index past the next dimension's extent).
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Gives every kernel of `plan` its windows; returns for how many (kernel, buffer) pairs. */
int window_buffers(KernelPlan& plan);

}  // namespace kiln
