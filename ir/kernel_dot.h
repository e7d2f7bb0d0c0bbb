/** \file
 * A kernel plan as a Graphviz digraph, for `kiln show --stage kernels --format dot`: each
 * kernel a cluster (`cluster_K`) holding its statements; the buffers outside, drawn by kind —
 * graph inputs and outputs (the global tensors) and temporaries — and the memory slots the
 * temporaries share (scheduler/plan_buffers.h); an edge from a buffer to each statement that
 * reads it and from each statement to the buffer it writes.
 */
#pragma once

#include <string>

#include "ir/kernel_ir.h"

namespace kiln {

/** Graphviz dot form of `plan`, titled `title` (the composite's name). */
std::string plan_to_dot(const KernelPlan& plan, const std::string& title);

}  // namespace kiln
