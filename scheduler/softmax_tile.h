/** \file
 * The fused attention kernel's tile (scheduler/online_softmax.h finds the contraction): its
 * shape, the variants compiled for ranges of heads known only at run time, the TMA's plan for
 * a key block's stages, and the loop nest the renderer (backends/cuda_attention.cpp) walks.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** The block tile of the fused kernel: rows × lanes outputs per block (lanes 64 or 128, the
 *  renderer's two shapes: softmax_tile_shape), keys per block of the online softmax, and the head
 *  dimension staged in chunks of `depth` (one chunk up to 128). */
struct SoftmaxTileShape {
  int rows = 128;
  int lanes = 64;
  int keys = 64;
  int depth = 128;
  /** Both products as Hopper's warpgroup instructions (wgmma m64nNk16, sm_90a: the target has
   *  them and GPU_WGMMA is not 0), else mma.sync per warp. */
  bool warpgroup = false;
  /** With warpgroup: each key block's stages of k and v filled by the TMA where their loads
   *  allow (LoopNode::staged of the tile, StagedOperand::tma_box), one thread issuing. */
  bool tma = false;
  /** The heads (k's last extent) the kernel is launched at, where head_max > 0
   *  (LoopNode::head_min, head_max). */
  int64_t head_min = 0, head_max = 0;
};

/** Plans the TMA copy of one key block of `ld` (k, the scores' operand along the keys, or v,
 *  the output's) into a stage of the fused tile: 64 keys (tile iterator c3) by 64 elements of
 *  the dimension memory holds contiguously, which iterator `inner` of `node` walks (c4, the
 *  head, for k; c2, the lanes, for v), a box of 1 along the others (batch dimensions, which
 *  neither moves). The key and inner dimensions must be the iterators themselves (no offset,
 *  stride 1), the inner one last; the load a 16-bit `half` of rank 2 to 5. False, and `o` as it
 *  was, where that does not hold. */
bool plan_softmax_tma(const KernelPlan& plan, const ScalarExpr& ld, const LoopNode& node,
                      const std::string& inner, DType half, StagedOperand& o);

/** The lanes a block of the fused kernel computes for an output of `head` lanes (v's head):
 *  128 for 65-128 (a row tile's scores computed once, not twice), else 64 (two blocks an SM; a
 *  longer head in 64-lane tiles). */
int softmax_tile_lanes(int64_t head);

/** The tile shape of the fused kernel of `k` (is_softmax_contraction_kernel): the lanes
 *  softmax_tile_lanes gives for the output's lanes (the head of v) where they are known when
 *  compiling (a specialized or fixed head), else 64 (the pipeline then compiles the kernel's
 *  softmax_lane_variants too: softmax_launch_head). */
SoftmaxTileShape softmax_tile_shape(const KernelPlan& plan, const Kernel& k);

/** The output's lanes (v's head) of the fused kernel `k` where they are known only at run
 *  time, else nullopt (not such a kernel, or a constant head). Such a kernel is compiled again
 *  as each of softmax_lane_variants (softmax_lanes_symbol), and each launch takes the variant
 *  whose lanes' range holds the lanes it binds (the kernel itself where none does): the tile
 *  softmax_tile_shape gives for a known head, with what the head decides known too. */
std::optional<IntExpr> softmax_launch_head(const KernelPlan& plan, const Kernel& k);

/** A fused kernel compiled for a range of the output's lanes (v's head): `lanes` a block, for
 *  launches whose lanes lie in min_lanes..max_lanes. */
struct SoftmaxLaneVariant {
  int lanes = 64;
  int64_t min_lanes = 0, max_lanes = 0;
};

/** The variants of a fused kernel whose lanes are known only at run time, in the order a
 *  launch tries them: 64 lanes for 0-64, 128 for 65-128 (softmax_tile_lanes' choice). Lanes
 *  above 128 take the kernel itself (64 lanes, any head). */
const std::vector<SoftmaxLaneVariant>& softmax_lane_variants();

/** Whether the fused kernel's head (k's last extent, the scores' reduction) is the same size
 *  as its lanes (v's head): a variant's range of lanes is then its range of heads too. */
bool softmax_head_is_lanes(const KernelPlan& plan, const Kernel& k);

/** `shape` as variant `v` of fused kernel `k`: v's lanes, and where softmax_head_is_lanes, its
 *  range as the tile's heads (head_min, head_max: what the head decides, its chunks and steps,
 *  then known when compiling). */
SoftmaxTileShape softmax_variant_shape(const KernelPlan& plan, const Kernel& k,
                                       SoftmaxTileShape shape, const SoftmaxLaneVariant& v);

/** The online-softmax tile of `nest` (an alloc in shared space with key_block > 0), or null. */
const LoopNode* find_softmax_tile(const LoopNest& nest);

/** The function name of fused kernel `symbol`'s variant of `lanes` lanes: `<symbol>_l<lanes>`. */
std::string softmax_lanes_symbol(const std::string& symbol, int lanes);

/** The loop nest of such a kernel: one `block.x` loop over the (batch, row tile, lane tile)
 *  triples around an alloc in shared space with key_block > 0 (ir/loop_ir.h), whose body holds
 *  a stmt node per statement with its iterators bound to the row, lane, key and head iterators
 *  c1, c2, c3, c4 and the batch iterators to the block's. */
LoopNest softmax_contraction_nest(const KernelPlan& plan, const Kernel& k,
                                  const SoftmaxTileShape& shape);

}  // namespace kiln
