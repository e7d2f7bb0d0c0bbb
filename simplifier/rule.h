/** \file
 * Rewrite rules and rule sets (docs/rules.md). A rule is a name, a pattern, a replacement and
 * an optional guard, read from the TOML files in simplifier/rules/ (rule_file.h), or a C++ function
 * registered by name in code_rules.h. Rules are indexed by the op of their root.
 */
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "ir/graph.h"
#include "simplifier/pattern.h"

namespace kiln {

/** What the simplifier may do; part of CompileOptions (the driver fills it from --config). */
struct SimplifyOptions {
  bool enabled = true;             ///< SIMPLIFY=0 turns the simplifier off
  bool fastmath = false;           ///< FASTMATH=1: rules marked `fastmath` apply
  std::string blas;                ///< BLAS=openblas: gemm becomes an extern call
  int max_passes = 16;             ///< passes over the graph before non-convergence is reported
  int max_rewrites = 64;           ///< rewrites at one node before a rule cycle is reported
  std::vector<std::string> trace;  ///< filled by simplify(): one line per applied rule
};

class Rewriter;

/** The node a rule puts in place of the root: an existing node, or a new one that the engine
 *  simplifies further before adding it. */
struct Rewrite {
  std::optional<NodeId> existing;
  Node node;
};

/** A rule written in C++: returns nothing to decline. */
using CodeRule = std::function<std::optional<Rewrite>(const Node& root, Rewriter& rw)>;

/** One rule. Exactly one of `pattern` (with `replacement`) and `code` is set. */
struct Rule {
  std::string name;     ///< stable: traces and statistics use it
  std::string set;      ///< the file stem or C++ set it comes from
  std::string comment;  ///< why it holds, in algebra form
  SourceLoc loc;        ///< where it is written (rule files)
  std::vector<Op> roots;
  PatternPtr pattern, replacement;
  ExprPtr guard;          ///< optional; the rule declines unless it is true
  bool fastmath = false;  ///< applies only under FASTMATH=1
  CodeRule code;
};

/** Rules indexed by root op. */
class RuleSet {
 public:
  /** Adds a rule; a second rule of the same name replaces the first (a user file may redefine a
   *  shipped rule). */
  void add(Rule rule);
  const std::vector<Rule>& rules() const { return rules_; }
  /** The rules whose root is `op`, in the order they were added. */
  std::vector<const Rule*> for_op(Op op) const;
  const Rule* find(const std::string& name) const;

 private:
  std::vector<Rule> rules_;
};

/** The rules Kiln ships: the C++ rules of code_rules.h and every file in the rules folder, read
 *  once per process. */
const RuleSet& shipped_rules();

/** The folder of the shipped rule files: simplifier/rules in the source tree, share/kiln/rules
 *  in an install (ir/data_dirs.h); throws DataDirError when there is none. */
std::string shipped_rules_dir();

/** shipped_rules() plus the rules of `files`, which may redefine shipped ones. */
RuleSet rules_with(const std::vector<std::string>& files);

}  // namespace kiln
