/** \file
 * The rewrite engine: rebuilds a graph bottom-up, applying at every node the rules indexed by
 * its op until none applies (each new node is simplified the same way), shares equal nodes
 * (common subexpressions) and drops nodes no output needs (dead code). Passes repeat until the
 * graph stops changing. A rule cycle at one node, or a graph that keeps changing, is reported
 * with the names of the rules involved.
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "simplifier/rule.h"

namespace kiln {

/** How often a rule was tried at a node of its root op, matched, and applied (a match whose
 *  guard declined is not applied). */
struct RuleStats {
  int64_t attempts = 0;
  int64_t matches = 0;
  int64_t applied = 0;
};

/** The simplified graph and what it took. */
struct SimplifyResult {
  Graph graph;
  std::map<std::string, RuleStats> stats;  ///< by rule name
  std::vector<std::string> trace;          ///< one line per applied rule, in order
  int passes = 0;
  int64_t shared = 0;   ///< nodes merged with an equal node (common subexpressions)
  int64_t removed = 0;  ///< nodes no output needs (dead code)
};

/** Simplifies `g` with `rules`. Throws std::runtime_error when the rules do not converge. */
SimplifyResult simplify(const Graph& g, const RuleSet& rules, const SimplifyOptions& opt);

/** The --stats table: node counts before and after, then one line per rule that was tried. */
std::string stats_to_text(const Graph& before, const SimplifyResult& r);

}  // namespace kiln
