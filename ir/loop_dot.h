/** \file
 * Loop nests as a Graphviz digraph, for `kiln show --stage schedule --format dot`: each
 * kernel a cluster (`cluster_K`) holding its nest as a tree — loops labelled with their
 * iterator, bounds, step and mapping (parallel, simd, unroll, GPU block and thread) and coloured
 * by it, guards, register and shared-memory allocations, barriers, and the statements as
 * leaves, each with the statement it runs.
 */
#pragma once

#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** One kernel's nest and what to call it. */
struct NestPicture {
  const Kernel* kernel = nullptr;  ///< whose statements the nest's stmt nodes run
  const LoopNest* nest = nullptr;
  std::string name;   ///< e.g. its function name
  std::string notes;  ///< e.g. its transform list
};

/** Graphviz dot form of the nests of `plan`'s kernels, titled `title`. */
std::string loop_nests_to_dot(const KernelPlan& plan, const std::vector<NestPicture>& nests,
                              const std::string& title);

}  // namespace kiln
