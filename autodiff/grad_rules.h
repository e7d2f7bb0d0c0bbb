/** \file
 * The gradient rules of the primitive ops (internal to autodiff/): one rule per op, each the
 * vector-Jacobian product of its op written with the graph builder, in a table indexed by op.
 * `gradient` (gradient.h) walks the graph backwards and asks this table for each node that
 * receives a cotangent.
 */
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::autodiff {

/** What a rule works with: the backward graph under construction (it begins with a copy of the
 *  forward graph, so a forward node has the same id in both) and the adjoints so far. */
class GradContext {
 public:
  GradContext(Graph& g, std::vector<bool> active) : g(g), active_(std::move(active)) {
    adjoint_.assign(g.size(), -1);
  }
  Graph& g;
  /** Adds `contribution` to the adjoint of `node` when `node` is a float node that depends on
   *  an input the gradient is taken for; does nothing otherwise. */
  void accumulate(NodeId node, NodeId contribution);
  /** Whether a gradient must flow into `node`: it depends on a chosen input. */
  bool active(NodeId node) const { return node < NodeId(active_.size()) && active_[node]; }
  /** The adjoint of `node`, or -1 when none reached it. */
  NodeId adjoint(NodeId node) const { return adjoint_[node]; }
  /** Throws GradError at `node`: "at %N = <node>: WHY". */
  [[noreturn]] void refuse(NodeId node, const std::string& why) const;
  /** refuse(n, why) when an operand of `n` is active. */
  void refuse_if_active(NodeId n, const std::string& why) const;
  /** A constant of node's dtype and shape. */
  NodeId constant_like(NodeId node, double value);

 private:
  std::vector<bool> active_;
  std::vector<NodeId> adjoint_;
};

/** Applies the rule of node `n`'s op: adds to the adjoints of n's operands the vector-Jacobian
 *  product of `ct`, n's adjoint. Refuses (GradError) an op with no derivative whose operand is
 *  active. */
void apply_rule(GradContext& ctx, NodeId n, NodeId ct);

}  // namespace kiln::autodiff
