/** \file
 * Attention as one GPU kernel: a contraction weighted by the softmax of another contraction,
 * computed with an online softmax (the scores never reach memory).
 *
 * The kernel IR of attention is eight statements (rows r, keys j, head d, output lanes c; batch
 * iterators in front of r):
 *
 *     s[r, j]  = 0;    s[r, j] += a[r, d] · b[j, d]           // the scores, a contraction
 *     m[r]     = -inf; m[r] max= X(s[r, j], r, j)            // X: scale, causal mask, ...
 *     l[r]     = 0;    l[r] += W(X, m[r])                     // W = exp2(C · (X - m))
 *     o[r, c]  = 0;    o[r, c] += W(X, m[r]) · F(r) · G(r, j) · v[j, c]
 *                                                         // F: 1 / l[r]; G: a gate, a mask
 *     y[r, c]  = E(o[r, c])                                   // epilogue statements
 *
 * Since W(X, m') = W(X, m) · W(m, m') (W is an exponential of X - m), the three reductions over
 * j run in one pass over blocks of keys: per block the scores of the block, their maximum m',
 * then l and o rescaled by W(m, m') before the block's terms are added, and at the end o · F.
 * The match is structural (any scale, mask, batch rank or epilogue, the output's iterators in any
 * order: a [B, L, H, D] layout); the scores' operands and v
 * must be unmasked f16 or bf16 loads (the kernel runs both products on tensor cores), and s, m,
 * l and o temporaries that nothing else reads but the epilogue, which may read m and l at its
 * row. The four updates may share a bounded domain over (r, j) (a causal triangle), where a
 * score outside it counts as -inf. The renderer is backends/cuda_attention.cpp.
 */
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** A softmax-weighted contraction found in a kernel's statements; pointers into them. */
struct SoftmaxContraction {
  int first = 0;                  ///< the scores' init; the updates are first + 1, 3, 5 and 7
  int end = 0;                    ///< one past the last epilogue statement
  int n = 0;                      ///< rank of the scores' domain (batch..., r, j)
  const ScalarExpr* a = nullptr;  ///< the scores' operand along the rows
  const ScalarExpr* b = nullptr;  ///< the scores' operand along the keys
  const ScalarExpr* v = nullptr;  ///< the output's operand along the keys and lanes
  const ScalarExpr* weight_score = nullptr;    ///< X inside W (the sum's value)
  const ScalarExpr* weight_max = nullptr;      ///< the load of m inside W
  std::vector<const ScalarExpr*> row_factors;  ///< F: the output's factors along the rows only
  /** G: the output's factors along the keys, not the rows or lanes (a gate on the values,
   *  g[j]). They scale the weights P·V reads, not the row sum; being the same for every row, a
   *  block's are computed once per key. */
  std::vector<const ScalarExpr*> key_factors;
  /** G: the output's factors along the rows and keys, not the lanes (a dropout mask on the
   *  weights, keep[r, j]): they scale the weights P·V reads, each element its own. */
  std::vector<const ScalarExpr*> weight_factors;
  /** Where X = k · X' with k > 0 invariant (attention's scale 1 / sqrt(D), under a mask's
   *  where or not): the product of the scores' load and k's factors inside the max's value, X'
   *  being X with that product read as the load alone; null elsewhere. Since max X = k · max X'
   *  and W = exp2(C k (X' - max X')), the kernel may run the max and the weights on X', k folded
   *  into the exponent's constant (one multiply a score fewer), its row maximum M' in X' units
   *  (M = k M'). */
  const ScalarExpr* scaled_score = nullptr;
  std::vector<const ScalarExpr*> score_scale;  ///< k's factors (surely_positive invariants)
  /** The bounds of the updates' domain over the max's iterators (batch..., r, j), each >= 0;
   *  empty for the whole box. Outside it a score weighs nothing. */
  std::vector<IntExpr> domain;
  /** The output's statements (o's init and update, the epilogue) walk the canonical iterators
   *  (batch..., r, c, j), numbered 0..n, in their own order: their iterator p is canonical
   *  position out_axes[p] (a [B, L, H, D] output: b, r, h, c, j). */
  std::vector<int> out_axes;
  /** The output's iterators renamed to the scores' (the lanes' to "@c"). */
  std::map<std::string, IntExpr> out_rename;
  /** Statement k of the eight, k = 0..7 (8: the first of the epilogue). */
  int statement(int k) const { return first + k; }
};

/** The softmax-weighted contraction whose scores' init is statement `from` of `k`, or none. */
std::optional<SoftmaxContraction> find_softmax_contraction(const KernelPlan& plan, const Kernel& k,
                                                           int from);

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

/** Moves assignments that sit among the statements of a softmax-weighted contraction and
 *  depend on none of them (the layout copy of a view that P·V reads, build_statements) to just
 *  before its first statement, where that makes the eight contiguous; the order stays legal.
 *  And where the output is read right after by an assignment through a permute, or a permute
 *  and a reshape that splits a dimension by a constant (attention's [B, H, L, D] result read as
 *  [B, L, H·D]: `y[b, l, c] = o[b, c / D, l, c % D]`), that assignment walks the output's
 *  element instead (`y[b, l, D·h + d] = o[b, h, l, d]`: the same points, one for one), so it
 *  becomes the fused kernel's epilogue. Either change is kept only where the contraction then
 *  forms. Returns how many statements moved or were rewritten. */
int gather_softmax_contractions(const KernelPlan& plan, Kernel& k);

/** Whether a contraction of kernel `k` (not a fused softmax contraction) recomputes an
 *  exponential of a difference from a max reduction along an iterator the exponential does not
 *  use: softmax weights left inline for an online softmax (plan_values' online_softmax) that
 *  did not form, evaluated once per output lane. The pipeline then plans the values again with
 *  the weights stored. */
bool recomputes_softmax_weights(const KernelPlan& plan, const Kernel& k);

/** Whether the whole of kernel `k` is one softmax-weighted contraction and its epilogue. */
bool is_softmax_contraction_kernel(const KernelPlan& plan, const Kernel& k);

/** The loop nest of such a kernel: one `block.x` loop over the (batch, row tile, lane tile)
 *  triples around an alloc in shared space with key_block > 0 (ir/loop_ir.h), whose body holds
 *  a stmt node per statement with its iterators bound to the row, lane, key and head iterators
 *  c1, c2, c3, c4 and the batch iterators to the block's. */
LoopNest softmax_contraction_nest(const KernelPlan& plan, const Kernel& k,
                                  const SoftmaxTileShape& shape);

}  // namespace kiln
