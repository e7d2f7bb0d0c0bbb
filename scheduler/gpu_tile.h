/** \file
 * Block tiles of contractions on the GPU, a transform of the loop IR.
 *
 * After promote_accumulators a contraction reads
 *
 *     for b for i for j { S0; alloc acc { for k S1 }; S2 }     // b, i, j coincident
 *
 * and map_gpu would give each thread one element, whose k loop reads a row of one operand and a
 * column of the other from global memory: every operand element is fetched M or N times. This
 * step gives each block a tile of R×L elements (rows along i, lanes along j) and each thread
 * r×l of them in registers; the reduction runs in blocks of D iterations, in which the block
 * first copies the operands of the D iterations into shared memory (the loads of S1 that do
 * not move along j for its R rows, those that do not move along i for its L lanes), then each
 * thread accumulates its r×l elements from there (r + l shared reads for r·l updates):
 *
 *     for (t = 0; t < B · ⌈M/R⌉ · ⌈N/L⌉; t++)            // block.x
 *       alloc shared tile of S1: i = R·(t / ⌈N/L⌉ % ⌈M/R⌉) + 0..R-1, j = L·(t % ⌈N/L⌉) + 0..L-1
 *         S0; alloc acc { for k S1 }; S2                   // b replaced by t / (⌈M/R⌉·⌈N/L⌉)
 *
 * The renderer (backends/cuda_renderer.h) runs the body's statements per element of the thread
 * and the reduction as above. It applies where S1 is a sum whose every load and iterator value
 * (a causal mask's comparison) moves along i or along j but not both and whose other leaves
 * are constants; i and j are chosen among the
 * coincident loops: j the innermost, i the innermost other for which the loads split so. The
 * loops absorbed must be rectangular (bounds of size variables only), of step 1, and the body
 * of the innermost one statements and the one reduction (a perfect nest of rectangular loops).
 * Each element's reduction runs over k in its order, so sums are those of the untiled nest.
 *
 * The step also decides how: which subexpressions of the update are staged (LoopNode::staged:
 * the largest that read memory or positions along one side only), in which order each fill
 * walks memory (the reduction first where the operand's last dimension moves with the
 * innermost reduction loop), the shared layout and padding, the 16-byte chunks where memory
 * holds an operand contiguously, and whether the updates run on tensor cores (LoopNode::mma:
 * a product a × b of one operand per side, both unmasked loads of the 16-bit types an
 * instruction takes; staged as stored, [rows or lanes][k], or [k][lanes] for a b read along its
 * lanes). The renderer prints these choices.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Threads of a GPU block (the CUDA renderer's launch): a block tile spreads over this many. */
inline constexpr int kGpuTileThreads = 256;

/** A warpgroup tile's shape: `rows` × `lanes` elements a block, `stages` pipeline stages. */
struct WgmmaShape {
  int rows = 128;
  int lanes = 256;
  int stages = 4;
  bool operator==(const WgmmaShape&) const = default;
};

/** The block tile: `rows` × `lanes` elements per block, `thread_rows` × `thread_lanes` per
 *  thread (rows / thread_rows × lanes / thread_lanes threads), reduction blocks of `depth`.
 *  Where the update is a product of two operands of a type a tensor-core instruction takes
 *  (ir/mma.h) and `mma` is on, the tile runs on tensor cores instead: warps of
 *  `mma_warp_rows` × `mma_warp_lanes` elements (rows / mma_warp_rows × lanes / mma_warp_lanes
 *  warps of 32 threads), reduction blocks of `mma_depth`. */
struct GpuTileShape {
  int rows = 128;
  int lanes = 128;
  int thread_rows = 8;
  int thread_lanes = 8;
  int depth = 8;
  bool mma = true;
  int mma_warp_rows = 64;
  int mma_warp_lanes = 32;
  int mma_depth = 32;
  /** Shared-memory buffers of a tensor-core tile's pipeline (LoopNode::stages) where every
   *  operand is copied in 16-byte chunks laid out contiguously in shared memory too. */
  int mma_stages = 3;
  /** The target has warpgroup instructions (wgmma, sm_90a: set from the runtime's target).
   *  Where it does and `wgmma_rows` > 0, a product of two 16-bit operands each held
   *  contiguously in memory along k or along its rows or lanes runs on a block tile of
   *  wgmma_rows × wgmma_lanes instead: two warpgroups of 128 threads, each wgmma_rows / 2 rows
   *  × wgmma_lanes lanes as m64nNk16 instructions (N = wgmma_lanes), operands in 128-byte
   *  swizzled shared rows (reduction blocks of 64), wgmma_stages stages of cp.async copies, one
   *  block of instructions in flight. */
  bool wgmma = false;
  /** With wgmma: the target's TMA fills a warpgroup tile's stages where its operands allow
   *  (StagedOperand::tma_box), the launch passing the tensor maps (the cuda runtime). */
  bool tma = false;
  int wgmma_rows = 128;
  int wgmma_lanes = 256;
  int wgmma_stages = 4;
  /** More shapes a kernel with a warpgroup tile is also compiled at, each a function of its
   *  own (variant_symbol), among which each launch chooses by the sizes
   *  (driver/tile_choice.h); empty: the one shape above. */
  std::vector<WgmmaShape> wgmma_variants = {
      {128, 128, 4}, {128, 128, 3}, {128, 64, 4}, {128, 64, 8}};
  /** The kernel's own warpgroup shape. */
  WgmmaShape wgmma_shape() const { return {wgmma_rows, wgmma_lanes, wgmma_stages}; }
};

/** "RxLxS", as GPU_WGMMA spells a shape. */
std::string wgmma_text(const WgmmaShape& v);

/** The function name of kernel `symbol` compiled at tile shape `v`: `<symbol>_w<R>x<L>x<S>`. */
std::string variant_symbol(const std::string& symbol, const WgmmaShape& v);

/** Where a kernel's block-tiled contraction lies in its plan statement, for a launch to count
 *  its tiles without the loop IR: the statement, the dimension its tiles' rows and lanes run
 *  along, the others it writes (tiled one by one) and those it sums over. */
struct GpuTileDims {
  int statement = -1;
  int rows = -1;
  int lanes = -1;
  std::vector<int> outer;
  std::vector<int> depth;
  /** The operations (distinct nodes) of the statements that read the sum: its epilogue. */
  int64_t epilogue_ops = 0;
};

/** The dimensions of kernel `k`'s contraction as gpu_tile picks them (lanes: the last
 *  dimension the element's index uses; rows: the last other one whose loads split from the
 *  lanes'), or nullopt where it has none. */
std::optional<GpuTileDims> gpu_tile_dims(const KernelPlan& plan, const Kernel& k);

/** The warpgroup tile of `nest` (an alloc on warpgroup instructions), or null. */
const LoopNode* warpgroup_tile(const LoopNest& nest);

/** Whether statement `s` is a sum whose value is loads (none of the element it updates) under
 *  operations and constants, the statement gpu_tile may block-tile. */
bool gpu_contraction_statement(const Statement& s);

/** `for (iter = 0; iter < count; iter++) tile`, mapped to blocks: the loop over a kernel's block
 *  tiles (this one's and scheduler/online_softmax.h's). */
LoopNodePtr block_tile_loop(const std::string& iter, const AstExprPtr& count,
                            const LoopNodePtr& tile);

/** Block-tiles the contractions of `nest` (the loop IR of kernel `k` of `plan`) and maps each
 *  tile loop to blocks; returns how many it tiled. */
int gpu_tile(const KernelPlan& plan, const Kernel& k, LoopNest& nest, const GpuTileShape& shape);

/** Whether `buffer` is a temporary that at most one kernel of `plan` accesses: a block tile of
 *  that kernel may keep such a reduction's result in registers
 *  (LoopNode::result_in_registers). */
bool private_temporary(const KernelPlan& plan, int buffer);

/** Whether kernel `k` has a statement gpu_tile may apply to (a sum reduction over a domain of
 *  rank 3 or more whose loads each leave some iterator unused): schedule_kernel then leaves its
 *  bands to this step rather than to isl's tiling. */
bool has_gpu_tile_candidate(const KernelPlan& plan, const Kernel& k);

}  // namespace kiln
