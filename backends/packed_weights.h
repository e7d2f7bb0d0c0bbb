/** \file
 * Packed panels of constant inputs that outlive a call.
 *
 * A packed panel (LoopNode::pack_depth, scheduler/register_tile.h) copies the lane vectors that
 * every row tile of a k block reads (b's rows in a matmul) into contiguous memory. When each
 * load it copies reads a `const` input (a weight, Buffer::constant) and no iterator but the k
 * and lane ones, the copy is the same at every call with the same buffer: the kernel then keeps
 * its panels in a workspace that the caller holds from call to call (driver/executable.h) and
 * fills them only when the workspace's header says they are not filled yet, so the weight is
 * re-laid out once and each later call reads the panels as they are.
 *
 * The workspace of one kernel: a 64-byte header, whose first int64 is 1 once every panel is
 * filled, then one region per (persistent pack, row-shared load), each a multiple of 64 bytes.
 * With K and N the extents of the statement iterators the k loop and the lane loop drive, and
 * W the pack's lanes, the lane tile at lane origin o keeps k row r's W elements at o·K + r·W:
 * K·(N + W) elements cover every tile, the partial last one included, and tiles never overlap.
 * The module exports `SYMBOL_workspace(sizes)`, the bytes kernel SYMBOL needs for `sizes`, and
 * the kernel takes the workspace as buffer argument (arguments + slots + kernel index).
 */
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** A packed panel whose arrays live in the kernel's workspace. */
struct PersistentPack {
  const LoopNode* pack = nullptr;  ///< the alloc node (pack_depth > 0)
  int lane_iterator = -1;          ///< the statement iterator the lane loop drives
  int k_iterator = -1;             ///< the statement iterator the pack's k loop drives
  size_t arrays = 0;               ///< its row-shared loads, one array each
};

/** The loads of `st` that move along the lanes (`along`) but not across the rows (`across`):
 *  one vector per lane group serves every row. Each once, in evaluation order. */
std::vector<const ScalarExpr*> row_shared_loads(const Statement& st,
                                                const std::set<std::string>& along,
                                                const std::set<std::string>& across);

/** The packed panels of kernel `k` under `root` that may persist across calls, in pre-order:
 *  every row-shared load reads a constant input with no iterator but the k and lane ones, those
 *  two are the fill's arguments as they are, the statement computes f32 or f64, and no parallel
 *  loop around the pack repeats it (each loop mapped parallel moves its lane or k origin, or
 *  the lane base of a pack of several lane tiles), so that no two threads fill one region. */
std::vector<PersistentPack> persistent_packs(const KernelPlan& plan, const Kernel& k,
                                             const LoopNode& root);

/** The name of the function a module exports for kernel `symbol`'s workspace bytes. */
std::string workspace_symbol(const std::string& symbol);

}  // namespace kiln
