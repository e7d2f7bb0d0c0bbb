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

}  // namespace kiln
