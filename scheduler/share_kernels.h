/** \file
 * Kernels that would compile to the same code run one code, a pass over the kernel plan before
 * scheduling.
 *
 * The copies of a repeated block (`repeat` over stacked weights, their windows from
 * scheduler/window_buffers.h) cut into kernels pose the same problem to every later stage,
 * each with buffers of its own. A kernel whose key equals an earlier kernel's gets that
 * kernel's index in Kernel::code_of: it is scheduled and rendered once, compiled once, and
 * each launch passes it its own buffers (Kernel::buffers, in order; driver/executable.h).
 * Twelve GPT-2 blocks then compile seven kernels' code (and their tile variants), not 84.
 *
 * The key is exact, never a hash alone: per statement its kind, reduction, domain, where it
 * writes and its whole value (every operation, constant and load, shared subexpressions as
 * shared), with buffers numbered by their place in Kernel::buffers; per buffer its type,
 * shape, kind, whether it is const, a window or a temporary no other kernel touches
 * (as scheduler/gpu_tile.h's private_temporary counts); and the schedule cache's key
 * (scheduler/schedule_cache.h). Everything a schedule or a renderer reads of a kernel is in
 * it, so the two kernels' own code would be the same text but for their buffers' names.
 */
#pragma once

#include <string>

#include "ir/kernel_ir.h"

namespace kiln {

/** The text two kernels that run one code have in common. */
std::string kernel_code_key(const KernelPlan& plan, const Kernel& k);

/** Sets Kernel::code_of for every kernel whose key an earlier kernel has (and -1 for the
 *  others); returns how many run another's code. */
int share_kernels(KernelPlan& plan);

}  // namespace kiln
