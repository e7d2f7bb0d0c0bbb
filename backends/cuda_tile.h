/** \file
 * The rendering of one GPU block tile of a contraction (scheduler/gpu_tile.h), shared by
 * backends/cuda_tile.cpp (the declarations, the pipeline, the k steps, the epilogue) and
 * backends/cuda_tile_fill.cpp (the copies of the staged operands into shared memory). Internal
 * to those two files.
 *
 * The generated kernel's block, in order (CudaRenderer::render_block_tile):
 *   declarations        the shared arrays, the thread's place in the tile, its accumulators
 *   accumulator_start   each accumulator from the identity or the element
 *   reduction_extent    the reduction loops' iterations as one count, N_K
 *   pipeline_head       S > 1: the per-tile copy addresses, the prologue's copies, the head of
 *                       the loop over blocks (wait, barrier, the copies of a later block)
 *   buffer_head         S = 1: the loop over blocks, registers to shared memory, the next
 *                       block's loads issued
 *   the k steps         simt_steps, mma_sync_steps, or render_warpgroup_steps (wgmma)
 *   pipeline_end        the loop's end: every copy done, every warp past the stages
 *   epilogue            accumulators to global memory (or through shared memory), the
 *                       statements after the reduction
 * The fills of the staged operands (fill_async, fill_lean, fetch, registers_to_shared) are
 * called by pipeline_head and buffer_head.
 */
#pragma once

#include <string>
#include <vector>

#include "backends/cuda_renderer.h"
#include "ir/mma.h"

namespace kiln {

/** The statements of a block tile around its reduction (LoopNode::tile_rows with
 *  MemorySpace::shared). */
struct TileParts {
  std::vector<const LoopNode*> before, after;  ///< statement nodes around the reduction
  const LoopNode* reduction = nullptr;         ///< the local alloc of the accumulator
  std::vector<const LoopNode*> loops;          ///< its loops, outermost first
  const LoopNode* update = nullptr;            ///< the update's statement node
};

/** What the rendering of one block tile `n` knows once, before it writes anything: the tile's
 *  plan, the names and indents of its code, the staged operands as scheduler/gpu_tile chose to
 *  stage them. Each piece of the kernel's block is a method returning its code, in the order
 *  the file comment lists; they must run in that order, as some bind or clear locals in the
 *  Context (bound, index_bound, promoted, preloaded) for what they render. */
struct CudaRenderer::BlockTile {
  BlockTile(const CudaRenderer& renderer, const Context& c, const LoopNode& n, int depth);

  const CudaRenderer& renderer;
  const Context& c;
  const LoopNode& n;
  const int depth;
  const TileParts p;
  const Statement& st;
  const ScalarExpr& v;  ///< the update's value
  const MmaInstruction* mma;
  /** Warpgroup instructions (wgmma): threads in groups of 128, not warps of 32. */
  bool group = false;
  int64_t G = 32;                                    ///< threads of a warp, or of a warpgroup
  int64_t R = 0, L = 0, r = 0, l = 0, D = 0, S = 0;  ///< tile, per thread, depth, stages
  int64_t thread_rows = 0, thread_cols = 0;          ///< SIMT: threads along rows and lanes
  /** Indents: the tile's braces, its body, and three more levels. */
  std::string pad, in, in2, in3, in4;
  /** The tile's name and the names of its locals. */
  std::string N, m, j, kk, k0, e, x;
  std::string ri, li;           ///< the row and lane iterators
  std::string row_ok, lane_ok;  ///< whether a row, a lane is in the domain
  std::string row, col;         ///< a thread's element (m, n) in the tile
  DType dtype = DType::f32;     ///< the result's
  std::string acc_type;         ///< its compute type
  std::string element;          ///< the result element
  std::string acc;              ///< the thread's accumulator of element (m, n)
  /** The staged operands (LoopNode::staged), in order. */
  std::vector<const ScalarExpr*> loads;
  std::vector<bool> by_lane, k_first, k_major;
  std::vector<int64_t> chunk, pads;
  /** Pipelined copies with addresses strided along k (LoopNode::k_strided; not under bounds
   *  checks): `lean` keeps one address per operand (warpgroup tiles), `strided` one per chunk. */
  bool lean = false, strided = false;
  /** A lean warpgroup tile whose every staged operand the TMA may copy
   *  (StagedOperand::tma_box): the launch's tensor maps first_map on, in operand order. */
  bool tma = false;
  int first_map = 0;

  // Pieces of the kernel's block (backends/cuda_tile.cpp).
  /** The block's opening comment, the staged operands' shared arrays (static, or the stages of
   *  a pipeline in the dynamic shared memory), the thread's warp or place, the tile's origin,
   *  the accumulators. */
  std::string declarations() const;
  /** Each accumulator's start: the reduction's identity where its init is the only statement
   *  before it, else the element after the statements before the reduction. */
  std::string accumulator_start() const;
  /** `N_K`: the reduction loops' iterations, flattened. */
  std::string reduction_extent() const;
  /** A pipeline (S > 1): the copies' per-tile addresses, the first blocks' copies, then the
   *  loop over blocks up to this block's updates: wait, barrier, the copies of a later block
   *  into the stage freed, this block's stage. */
  std::string pipeline_head() const;
  /** One buffer (S = 1): registers for a block's operands, the first block's loads, then the
   *  loop over blocks up to this block's updates: registers to shared memory, a barrier, the
   *  next block's loads issued. */
  std::string buffer_head() const;
  /** This block's updates on the SIMT cores: per reduction iteration each thread's rows and
   *  lanes into registers, then every element's update. */
  std::string simt_steps() const;
  /** This block's updates on mma.sync: fragments through ldmatrix, two sets in flight. */
  std::string mma_sync_steps() const;
  /** The warp's share of an mma.sync k step: which staged operand is a (rows) and which b
   *  (lanes), the warp's m and n tiles, each fragment's 32-bit registers, the elements of a
   *  shared row of a and of b, the bytes of an element. */
  struct MmaShape {
    size_t a = 0, b = 1;
    int64_t TM = 0, TN = 0, ra = 0, rb = 0, row_a = 0, row_b = 0, bytes = 0;
  };
  MmaShape mma_shape() const;
  /** The fragments of k step `k` (elements from the block's start) into register set `set`:
   *  ldmatrix x4 of each m16 tile of a and each pair of n8 tiles of b. */
  std::string mma_fragments(const MmaShape& f, int set, int64_t k) const;
  /** The warp's TM × TN mma.sync products from register set `set`. */
  std::string mma_products(const MmaShape& f, int set) const;
  /** The end of the loop over blocks; a pipeline waits for its copies and its warpgroup
   *  instructions. */
  std::string pipeline_end() const;
  // The TMA's pipeline (backends/cuda_tile_tma.cpp).
  /** `N_tma`: whether this launch's maps of every operand were encoded and each operand's
   *  reduction runs over the whole of its dimension (the TMA's zeros then stand where the
   *  reduction ends); and each operand's box coordinates at the tile's origin, N_c<q>[]. */
  std::string tma_condition() const;
  /** The loop over blocks with the TMA: the stages' barriers set up, thread 0 issuing each
   *  block's boxes S - 2 blocks ahead (two with three stages) into the stage every warp
   *  released, the warps waiting on each stage's barrier and running render_warpgroup_steps;
   *  then every instruction done and every warp past the stages. */
  std::string tma_pipeline() const;
  /** Thread 0's copies of block `b` (a C expression) into its stage. */
  std::string tma_issue(const std::string& b, const std::string& indent) const;
  /** Each element stored and the statements after the reduction, from the accumulators or
   *  through shared memory (LoopNode::epilogue_staged). */
  std::string epilogue() const;
  /** One element's epilogue, its row and lane iterators bound, inside the domain only: its
   *  value from the accumulator (or from shared memory, staged), its store unless the result
   *  stays in registers, the statements after the reduction. */
  std::string element_epilogue() const;

  // The staged operands' copies (backends/cuda_tile_fill.cpp).
  /** lean: per operand, the address of the thread's first chunk at block 0, its strides along
   *  the chunks and the reduction, whether the tile's chunks are all inside and aligned. */
  std::string lean_addresses() const;
  /** strided: per operand, each chunk's address at block 0 and whether it is inside, and the
   *  operand's stride along the reduction. */
  std::string strided_addresses() const;
  /** The copies of block `base`'s operands into stage `stage` with cp.async. */
  std::string fill_async(const std::string& base, const std::string& stage,
                         const std::string& pad2) const;
  /** The guarded copy of a chunk of operand q that no cp.async copied: element by element,
   *  zeros outside the domain. */
  std::string copy_elements(size_t q, const std::string& base, const std::string& stage,
                            const std::string& p3) const;
  /** fill_async of a lean tile: from the operand's one address. */
  std::string fill_lean(const std::string& base, const std::string& stage,
                        const std::string& pad2) const;
  /** One buffer: the loads of block `base`'s operands into the thread's registers. */
  std::string fetch(const std::string& base, const std::string& pad2) const;
  /** One buffer: the thread's registers of this block into shared memory. */
  std::string registers_to_shared() const;

  // Code shared by the pieces.
  /** The dtype of staged operand q's values. */
  DType dtype_of(size_t q) const;
  /** `body` for each element of the thread, with the row and lane iterators bound. */
  std::string each_element(const std::string& body) const;
  /** The reduction loops' iterators at flattened iteration `f`. */
  std::string split_k(const std::string& f, const std::string& pad2) const;
  /** `body` for each chunk of operand q this thread copies (binding N_e, N_kk, N_x). */
  std::string share(size_t q, const std::string& pad2, const std::string& body) const;
  /** The iterators of element `i` of a chunk of operand q in the block at `base`. */
  std::string coords(size_t q, const std::string& base, const std::string& i) const;
  /** Whether that element is in the domain. */
  std::string in_domain(size_t q) const;
  /** Whether the last element of the chunk along its rows or lanes is in the domain too. */
  std::string last_in(size_t q) const;
  /** The offset of swizzled operand q's element (xi, ki) in its stage. */
  std::string swizzled_at(size_t q, const std::string& xi, const std::string& ki) const;
  /** Where chunk element `i` of operand q lies in shared memory (`stage` empty: one buffer). */
  std::string shared_at(size_t q, const std::string& stage, const std::string& i) const;
  /** strided: the address and the inside flag of the thread's chunk N_p of operand q. */
  std::string ptr(size_t q) const;
  std::string inside(size_t q) const;
  /** lean: how many rows (or k rows) a thread's consecutive chunks of operand q lie apart. */
  int64_t chunk_step(size_t q) const;
  /** lean: `const int N_x = ..., N_kk = ...;` for the thread's chunk N_p of operand q. */
  std::string chunk_at(size_t q, const std::string& indent) const;
};

/** The trip count of rectangular loop `l` as C. */
std::string tile_extent_c(const LoopNode& l);

}  // namespace kiln
