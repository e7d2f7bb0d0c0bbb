/** \file
 * The value planner: for every computed node of a graph, whether build_statements stores it in a
 * buffer or inlines it into the statements that read it, from a cost model (docs/decisions.md,
 * "Values are stored when inlining would multiply their work").
 *
 * A node is *evaluated* once per point of each statement that computes it inline: inlined into
 * a contraction y[s, c] = sum_j f[s, j] * w[j, c], the value f is evaluated once per (s, c, j),
 * C times per element. The planner walks the graph from its last node to its first, so every
 * reader of a node is decided before the node; a node's *factor* is its evaluations over its
 * element count if it were inlined, summed over the statements that reach it: for each one the
 * product of the extents of the statement's iterators its index does not use. Then:
 * - reduce, scan, scatter and extern nodes, graph inputs and the sources of gathers and calls
 *   have buffers of their own (`materialized`);
 * - an output that other nodes read is computed once, into the output, and read back
 *   (`output read back`);
 * - a node with arithmetic is stored when its factor exceeds ValueOptions::max_factor
 *   (`stored: multiplied`) unless its inline expression reads one element and its extra
 *   evaluations cost at most one memory access, (factor - 1) × cost <= kMemoryCost (`inline:
 *   one load, cheaper than a store`: attention's scaled score, read by the max and the
 *   exponential, is recomputed from the scores rather than written as a second copy), or when it is
 * read more than once and recomputing it costs more than storing it and reading it back (`stored:
 * shared`): per element, (factor - 1) times the cost of its inline expression against kMemoryCost
 * for the store and each read;
 * - everything else is inlined. Views, constants and index ops cost nothing and are always
 *   inlined (they are index arithmetic), and so is a node whose inline expression divides
 *   integers (stored over its whole shape it could divide by zero where a `where` guarded it).
 *
 * A symbolic factor counts every size variable as kNominalSize. Under
 * ValueOptions::online_softmax (GPU backends) a softmax-weighted sum in f16 or bf16 does not
 * charge the weights it reads: the fused online-softmax kernel evaluates them once per key (in
 * f32 and f64 the sum is a plain contraction and the weights are costed as anywhere else).
 */
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

/** What the planner decides for one node. */
struct ValueDecision {
  enum class Kind { inlined, stored, materialized, free } kind = Kind::free;
  std::string reason;  ///< why, for `kiln show --stage kernels`
  /** Evaluations of the node over its element count as the plan computes it: 1 for a stored or
   *  materialized node, the summed factor for an inlined one. */
  IntExpr factor = 0;
  IntExpr inline_factor = 0;  ///< the factor it would have inlined
};

/** The planner's knobs. */
struct ValueOptions {
  /** The most evaluations per element an inlined value may take (read by several statements,
   *  or by one whose extra iterators multiply it). */
  int64_t max_factor = 2;
  /** GPU backends: weights of a softmax-weighted sum stay inline (scheduler/online_softmax.h). */
  bool online_softmax = false;
  /** The cost of one evaluation of a masked view (pad) past the factor bound: its bounds tests.
   *  0: views are index arithmetic, always inline; above 0 a masked view read more than
   *  max_factor times per element is stored or inlined like a computed value (CPU backends,
   *  after scheduler/split_padding.h). */
  int64_t masked_view_cost = 0;
  /** Whether the planner stores anything (0: every value inline, as before the planner). */
  bool enabled = true;
};

/** The decisions, one per node. */
struct ValuePlan {
  std::vector<ValueDecision> nodes;
  /** Whether build_statements gives node `id` a buffer of its own. */
  bool stored(int id) const { return nodes.at(id).kind == ValueDecision::Kind::stored; }
};

/** Cost units of one element's store or load (an add is 1, see plan_values.cpp). */
constexpr int64_t kMemoryCost = 4;
/** The cost of one evaluation of `op`, in units of an add: divisions, square roots and
 *  transcendentals take several; data ops (views, copies, constants) cost nothing. */
int64_t op_cost(Op op);
/** The cost of a masked view's evaluation on a CPU: its bounds tests and the masked vector load
 *  they make of a register tile's plain one (ValueOptions::masked_view_cost). */
constexpr int64_t kMaskedViewCost = 3;
/** The size a symbolic factor assumes for each size variable. */
constexpr int64_t kNominalSize = 64;

/** Plans the values of verified graph `g`. */
ValuePlan plan_values(const Graph& g, const ValueOptions& opt);

/** One line per computed node: `%7 mul f32[S, 3072]: stored: multiplied (x768 inline)`. */
std::string value_plan_to_text(const Graph& g, const ValuePlan& plan);

}  // namespace kiln
