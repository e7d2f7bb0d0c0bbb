/** \file
 * Buffer planning: gives every temp buffer a memory slot so that temps whose lifetimes (in
 * kernel order) do not overlap share memory. A slot's size is the largest of its buffers at the
 * bound sizes, known only at run time. Temps used inside a single kernel keep a slot of their own
 * within it: the polyhedral schedule may interleave the kernel's statements.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Sets Buffer::slot for every temp and KernelPlan::num_slots. */
void plan_buffers(KernelPlan& plan);

}  // namespace kiln
