/** \file
 * Matching a pattern against a node, checking a guard, and building a replacement. Shared by
 * the engine and the rule checker.
 */
#pragma once

#include <map>
#include <optional>
#include <string>

#include "simplifier/rule.h"

namespace kiln {

/** Matched pattern variables: name -> node. */
using Bindings = std::map<std::string, NodeId>;

/** The engine's side of a rewrite: the graph being built, and a way to add nodes to it. */
class Rewriter {
 public:
  virtual ~Rewriter() = default;
  virtual const Graph& graph() const = 0;
  /** Simplifies `n` and adds it (or finds an equal node); returns its id. */
  virtual NodeId emit(Node n) = 0;
  virtual const SimplifyOptions& options() const = 0;
  const Node& operator[](NodeId id) const { return graph()[id]; }
};

/** A Rewriter that adds nodes as they come, without simplifying or sharing them: builds the
 *  graphs of patterns and replacements for the checker and for tests. */
class GraphBuilder : public Rewriter {
 public:
  Graph g;
  SimplifyOptions opt;
  const Graph& graph() const override { return g; }
  NodeId emit(Node n) override { return g.add(std::move(n)); }
  const SimplifyOptions& options() const override { return opt; }
};

/** Matches `p` against `root` (whose operands are nodes of `g`); fills `b`. */
bool match_root(const Pattern& p, const Node& root, const Graph& g, Bindings& b);

/** Evaluates a guard on the bindings: a bool expression of comparisons, `and`-style operators
 *  (`&`, `|`, `!`) and the predicates of docs/rules.md. Throws SpecError for an unknown name. */
bool guard_holds(const Expr& guard, const Bindings& b, const Graph& g, const SimplifyOptions& opt);

/** Checks a guard's names and calls without bindings, so errors show when a file is loaded. */
void check_guard(const Expr& guard, const Pattern& pattern);

/** The replacement of a matched root; nothing when a fold() cannot be evaluated (an integer
 *  division by zero), which declines the rule. */
std::optional<Rewrite> instantiate(const Pattern& replacement, const Bindings& b, const Node& root,
                                   Rewriter& rw);

/** A scalar constant node of dtype `t` and shape `shape` holding `value`. */
Node constant_node(DType t, const Shape& shape, double value);

/** Evaluates `op` on constant operands with the interpreter's semantics; nothing when an
 *  operand is not a plain constant or evaluation fails (integer division by zero). */
std::optional<Node> fold_op(Op op, DType result, const Shape& shape,
                            const std::vector<const Node*>& operands);

/** True for a constant node that is not a run-time size. */
bool is_plain_constant(const Node& n);

}  // namespace kiln
