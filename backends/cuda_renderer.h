/** \file
 * CUDA C for NVRTC: the C-style renderer with the GPU's mappings (scheduler/map_gpu.h).
 * - Each kernel is `extern "C" __global__ void K(const kiln_params p)`, one by-value struct of
 *   every buffer pointer then every size (include/kiln/plugin_api.h), calling a `__device__` loop
 *   function with typed `__restrict__` pointers, as the C backend's entry calls its loops.
 * - A `block.x` loop strides over the blocks of the grid, a `thread.x` loop over the threads of
 *   the block (inside a `block.x` loop or in a kernel that runs on block 0 alone) or of the
 *   grid; so every launch geometry is correct, and cuda_launch_geometry only picks a good one.
 * - `single` nodes run on thread 0, `barrier` nodes are `__syncthreads()`.
 * - A promoted accumulator whose outermost loop is `thread.x` is a block reduction: thread 0
 *   starts from the element, the others from the identity, each accumulates its strided share,
 *   and kiln_block_reduce (warp shuffles, then shared memory) combines them for thread 0, which
 *   stores the element.
 * - f16 and bf16 are stored as 16-bit integers and computed in float, as in C.
 */
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "backends/c_style.h"
#include "ir/launch_geometry.h"

namespace kiln {

struct SoftmaxContraction;  // scheduler/online_softmax.h

/** Threads per block of every CUDA launch: a multiple of 32, as kiln_block_reduce needs. */
inline constexpr uint32_t kCudaBlockThreads = 256;
/** The most blocks a launch asks for: four waves of 256-thread blocks on a 132-SM H100; the
 *  grid-stride loops cover the rest. */
inline constexpr uint32_t kCudaMaxBlocks = 4096;

class CudaRenderer : public CStyleRenderer {
 public:
  std::vector<std::string> extern_symbols(const KernelPlan& plan) const override;

 protected:
  std::string prelude() const override;
  std::string signature(const std::string& symbol) const override;
  std::string bounds_check_helpers() const override;
  std::string bitcast(const std::string& from, const std::string& to,
                      const std::string& x) const override;
  std::string plan_declarations(const KernelPlan& plan,
                                const RenderOptions& options) const override;
  std::pair<std::string, std::string> kernel_scope_param(
      const RenderOptions& options) const override;
  std::string kernel_exports(const KernelPlan& plan, const Kernel& k, const LoopNest& nest,
                             const std::string& symbol) const override;
  std::string loops_qualifier() const override;
  /** False: NVVM (CUDA 13.0) loaded a restrict buffer a kernel writes through the read-only
   *  path (ld.global.nc) ahead of the thread's own store to the same element, once the kernel's
   *  parameter struct held the TMA's 64-byte aligned maps (docs/decisions.md, "Written buffers
   *  are not restrict in CUDA C"). */
  bool restrict_written() const override;
  std::string entry(const KernelPlan& plan, const LoopNest& nest, const std::string& symbol,
                    const std::string& call) const override;
  std::string loop_header(const Context& c, const LoopNode& n, const std::string& init,
                          const std::string& cond) const override;
  /** An interleaved block loop's row and whether it is one (lanes_apart, loop_header). */
  std::string loop_prologue(const Context& c, const LoopNode& n,
                            const std::string& pad) const override;
  /** A thread loop is unrolled by KILN_THREAD_UNROLL (4): each thread has that many loads of
   *  its strided elements in flight, where a memory-bound row waits on one at a time.
   *  (A vector loop's own iterations are unrolled alike: render_vector_loop.) */
  std::string loop_annotation(const LoopNode& loop, const LoopSite& site) const override;
  /** `__syncthreads();`, or within a row group (LoopNode::group_threads) the group's barrier. */
  std::string barrier(const Context& c) const override;
  /** Thread 0 of the block, or of the row group. */
  std::string single_condition(const Context& c) const override;
  bool max_keys() const override;
  /** Packed panels are a CPU schedule's; a GPU kernel keeps nothing between launches. */
  bool keeps_packs() const override;
  std::string accumulator_start(const Context& c, const LoopNode& n,
                                const std::string& load) const override;
  std::string accumulator_finish(const Context& c, const LoopNode& n, const std::string& store,
                                 const std::string& pad) const override;
  std::string math_call(const std::string& fn, DType t, const std::string& a) const override;
  std::string extern_helpers(const KernelPlan& plan) const override;
  std::string extern_call(const KernelPlan& plan, const Statement& st) const override;
  /** A contraction's block tile (scheduler/gpu_tile.h; backends/cuda_tile.cpp): per reduction
   *  block, the block's threads copy the operands into shared memory, then each accumulates its
   *  elements in registers from there. */
  std::string render_block_tile(const Context& c, const LoopNode& n, int depth) const override;
  /** A softmax-weighted contraction's tile (scheduler/online_softmax.h;
   *  backends/cuda_attention.cpp): attention in one kernel, keys streamed through shared memory
   *  with an online softmax, both products on tensor cores. */
  std::string render_softmax_tile(const Context& c, const LoopNode& n, int depth) const;
  /** The end of online-softmax tile `n` of contraction `f` (backends/cuda_attention_end.cpp),
   *  its statement nodes with their batch iterators bound (`nodes`) and the score's invariant
   *  parts (`invariants`, as render_softmax_tile hoisted them): the row sums over the threads
   *  of a row, the row factors, each output element times them and the composite's epilogue on
   *  it. */
  std::string softmax_tile_end(const Context& c, const LoopNode& n, const SoftmaxContraction& f,
                               const std::vector<LoopNode>& nodes,
                               const std::map<const ScalarExpr*, std::string>& invariants,
                               int depth) const;
  /** Of an online-softmax tile `n` whose keys and values the TMA may copy (its staged
   *  operands; backends/cuda_attention_tma.cpp): the boxes' coordinates at key 0 (`<tile>_kc`,
   *  `<tile>_vc`, shared, set by thread 0, from loads `k` and `v` of statement nodes
   *  `score_node` and `out_node`) and
   *  `<tile>_tma`, whether this launch takes them: both maps (from `first_map`) encoded, a head
   *  of at most 128, the maps' extents along the keys (and k's head) the tile's. */
  std::string softmax_tma_setup(const Context& c, const LoopNode& n, const LoopNode& score_node,
                                const LoopNode& out_node, const ScalarExpr& k, const ScalarExpr& v,
                                int first_map, const std::string& in) const;
  /** A thread loop over contiguous elements (backends/cuda_vector.cpp): each thread takes
   *  16-byte vectors of consecutive iterations, its contiguous loads and stores one
   *  instruction per vector; the iterations before the first aligned vector and after the
   *  last, and all of them where the accesses are not aligned alike, one by one. */
  std::string render_vector_loop(const Context& c, const LoopNode& n, int depth) const override;

  /** The renderer seam (docs/plugins.md): the names a GPU language gives the block's index,
   *  the grid's blocks, the thread's index in its block and the block's threads, in x. */
  enum class GpuId { block, blocks, thread, threads };
  /** `blockIdx.x`, `gridDim.x`, `threadIdx.x`, `blockDim.x`. */
  virtual std::string gpu_id(GpuId id) const;
  /** A one-stage block tile's shared array `name` of `rows` × `cols` elements of C type `type`,
   *  `offset` bytes into the tile's memory (block_tile_local_bytes), with its indent and
   *  newline: `__shared__ __align__(16) T name[rows][cols];`. */
  virtual std::string shared_array(const std::string& type, const std::string& name, int64_t rows,
                                   int64_t cols, int64_t offset) const;
  /** The barrier of a block tile, which orders the block's shared memory only:
   *  `__syncthreads();`. */
  virtual std::string shared_barrier() const;
  /** The combine of one value per thread of the block for thread 0 (every thread calls it):
   *  `value` of C type `type`, `identity`, `op` one of sum, prod, max. */
  virtual std::string block_reduce(const std::string& type, const std::string& value,
                                   const std::string& identity, const std::string& op) const;

  /** Whether a `thread.x` loop at this point strides over one block's threads. */
  static bool in_block(const Context& c);
  /** The C text of the threads per row group of the `block.x` loop around this point
   *  (LoopNode::group_threads), or empty: the whole block takes each row. */
  static std::string group_threads(const Context& c);
  /** The `block.x` loop around this point when its groups interleave (LoopNode::lanes_apart),
   *  else null. */
  static const LoopNode* lanes_loop(const Context& c);
  /** The first index and the stride of mapped loop `n`'s iterations on this thread (block or
   *  thread index, and the count); empty for a loop every thread runs whole. */
  std::pair<std::string, std::string> thread_span(const Context& c, const LoopNode& n) const;
  /** Whether alloc node `n` is a block reduction: its outermost loop strides over the threads
   *  of a block. */
  static bool block_reduction(const Context& c, const LoopNode& n);
  /** The identity and the combine (sum, prod or max) of `n`'s reduction. */
  std::pair<std::string, std::string> reduction_of(const Context& c, const LoopNode& n) const;

 private:
  /** One block tile's rendering (render_block_tile): its plan read once, and a method per piece
   *  of the tile's code (backends/cuda_tile.h). */
  struct BlockTile;
};

/** The dynamic shared memory a block tile (scheduler/gpu_tile.h) takes: its pipeline's stages
 *  (LoopNode::stages > 1), else 0 (its arrays are static); an online-softmax tile's
 *  (softmax_tile_shared_bytes). A kernel declares the most of its tiles as
 *  `<symbol>_shared_bytes`, which the CUDA plugin gives each launch. */
int64_t block_tile_shared_bytes(const LoopNode& tile);

/** The shared memory of a one-stage block tile's arrays (LoopNode::stages <= 1; 0 for any
 *  other tile), each at a multiple of 16 bytes: where the tile's shared_array calls put them. */
int64_t block_tile_local_bytes(const LoopNode& tile);

/** The dynamic shared memory of an online-softmax tile (backends/cuda_attention.cpp) of `lanes`
 *  lanes: the rows' operand and `stages` stages (at least two) of the keys' operand and of the
 *  values, padded rows for mma.sync or swizzled panels for warpgroup products. */
int64_t softmax_tile_shared_bytes(int64_t lanes, bool warpgroup, int64_t stages);

/** The geometry of kernel `k` for the bound sizes (KernelPlan::size_vars order): blocks of
 *  kCudaBlockThreads, and enough blocks for one thread per point of the largest statement
 *  domain or one block per row of any statement (its points but the last dimension's), at most
 *  kCudaMaxBlocks. With `row_groups` (the schedule groups short rows, scheduler/group_rows.h),
 *  a kernel with a reduction takes one block per G rows instead, G the groups its row length
 *  gives a block (row_group_threads), and at least min(rows, 1024) blocks where a schedule
 *  did not group its rows. It needs no schedule, so a cached module launches without one. */
LaunchGeometry cuda_launch_geometry(const KernelPlan& plan, const Kernel& k, const int64_t* sizes,
                                    bool row_groups);

/** One reduction block of block tile `n` on warpgroup instructions (LoopNode::mma with
 *  warpgroup set; backends/cuda_warpgroup.cpp): per k step and m64 tile one wgmma reading this
 *  block's stage `stage` of the staged operands through matrix descriptors, the group committed
 *  and all but LoopNode::mma_in_flight groups waited for. `by_lane` and `k_major` are the staged
 *  operands'; each line starts with `in`. */
std::string render_warpgroup_steps(const LoopNode& n, const std::vector<bool>& by_lane,
                                   const std::vector<bool>& k_major, const std::string& stage,
                                   const std::string& in);

}  // namespace kiln
