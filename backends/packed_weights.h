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
 *
 * The lane pack of a dot-product tile on vectors (LoopNode::matrix with dot_bytes > 0: bf16
 * pairs for vdpbf16ps, 8-bit quads for VNNI) is kept the same way, in 32-bit words of G = 2 or
 * 4 k values of one lane: with KG = ceil(K / G), the lane tile at origin o keeps the word of
 * lane l and k group g at o·KG + g·W + (l − o), KG·(N + W) words in all. A pack whose signs
 * need its lanes' sums (DotSigns::signed_signed) keeps them too, per k block of depth D:
 * ceil(K / D)·(N + P) i32 (P the pack's lanes), the sum of lane n over k block b at
 * b·(N + P) + n. The choice follows from the pack's own fields (a matrix lane pack on vectors
 * of a const operand), not from the composite: the row operand's matrix pack and AMX's packs
 * (whose tile loads read zeros up to 64 bytes of k past the block's end, which a whole-K
 * layout does not hold) are packed at every call.
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
  /** A dot-product tile's lane pack (LoopNode::matrix, dot_bytes > 0): its one array holds
   *  words of `group` k values (2: bf16 pairs, 4: 8-bit quads); with `sums` a second region
   *  holds its lanes' sums per k block (DotSigns::signed_signed). */
  int group = 0;
  bool sums = false;
};

/** The loads of `st` that move along the lanes (`along`) but not across the rows (`across`):
 *  one vector per lane group serves every row. Each once, in evaluation order. */
std::vector<const ScalarExpr*> row_shared_loads(const Statement& st,
                                                const std::set<std::string>& along,
                                                const std::set<std::string>& across);

/** The loads of `st` that move along the rows (`rows`) and along k (`ks`) but not along the
 *  lanes (`lanes`): a row pack's operands (LoopNode::pack_depth with tile_rows). Each once, in
 *  evaluation order. */
std::vector<const ScalarExpr*> row_operand_loads(const Statement& st,
                                                 const std::set<std::string>& rows,
                                                 const std::set<std::string>& ks,
                                                 const std::set<std::string>& lanes);

/** The packed panels of kernel `k` under `root` that may persist across calls, in pre-order:
 *  every row-shared load reads a constant input with no iterator but the k and lane ones, those
 *  two are the fill's arguments as they are, the statement computes f32 or f64 (or f16 or bf16,
 *  which the fill widens to f32 panels; or the pack is a dot-product tile's lane pack on
 *  vectors: bf16 pairs, 8-bit quads), and no parallel
 *  loop around the pack repeats it (each loop mapped parallel moves its lane or k origin, or
 *  the lane base of a pack of several lane tiles), so that no two threads fill one region. */
std::vector<PersistentPack> persistent_packs(const KernelPlan& plan, const Kernel& k,
                                             const LoopNode& root);

/** The name of the function a module exports for kernel `symbol`'s workspace bytes. */
std::string workspace_symbol(const std::string& symbol);

}  // namespace kiln
