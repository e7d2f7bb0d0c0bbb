/** \file
 * Shape facts: relations between size expressions (`C == F`, `C % groups == 0`, `K >= 1`) that a
 * composite states with `where` (docs/spec-language.md, "Shape facts"), or that lowering needs
 * and cannot prove, such as two dimensions that must be equal. SizeFacts proves or refutes a
 * relation from the facts assumed so far; one that is neither proved nor refuted becomes a
 * SizeCheck of the graph, evaluated when the sizes are bound (check_size_facts).
 */
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/int_expr.h"

namespace kiln {

/** A comparison of two integers. */
enum class Relation { eq, ne, lt, le, gt, ge };

/** "==", "!=", "<", "<=", ">", ">=". */
const char* relation_name(Relation r);

/** The relation an operator spells, or nullopt. */
std::optional<Relation> parse_relation(const std::string& op);

/** `lhs rel rhs` on size expressions. */
struct SizeRelation {
  IntExpr lhs;
  Relation rel = Relation::eq;
  IntExpr rhs;
  /** "C / 24 == 1" */
  std::string str() const;
  /** Whether it holds for the bound sizes; throws as IntExpr::eval does. */
  bool holds(const std::map<std::string, int64_t>& sizes) const;
};

/** What SizeFacts knows about a relation. */
enum class Truth { proved, refuted, unknown };

/** The facts known about the sizes of one graph, and the prover that uses them. Equalities are
 *  kept as a substitution (`F == C` replaces F by C; `C % g == 0` replaces C by g times a fresh
 *  variable, so that `(C / g) * g` becomes C); inequalities as expressions known to be
 *  non-negative. Size variables are never negative. */
class SizeFacts {
 public:
  /** Proved when the relation follows from the facts, refuted when its negation does. */
  Truth decide(const SizeRelation& r) const;
  /** Adds `r` to the facts (a relation refuted by them is the caller's error to report). */
  void assume(const SizeRelation& r);
  /** `e` with the equalities substituted: two expressions equal under the facts normalise to
   *  the same expression. */
  IntExpr normalize(const IntExpr& e) const;

 private:
  Truth decide_normalized(const IntExpr& d, Relation rel) const;
  bool nonnegative(const IntExpr& d) const;
  void assume_zero(IntExpr d);
  void substitute_everywhere(const std::string& var, const IntExpr& value);

  std::map<std::string, IntExpr> subst_;  ///< variable -> its value; no value uses a key
  std::vector<IntExpr> zero_;             ///< expressions known to be 0 that solved for nothing
  std::vector<IntExpr> nonzero_;          ///< expressions known not to be 0
  std::vector<IntExpr> nonnegative_;      ///< expressions known to be >= 0
  int fresh_ = 0;
};

/** A position in a spec file (1-based line and column). */
struct CheckSite {
  std::string file;
  int line = 0;
  int col = 0;
  /** "file:line:col" */
  std::string str() const;
  friend bool operator==(const CheckSite&, const CheckSite&) = default;
};

/** A relation the sizes must satisfy, checked when they are bound: a stated fact lowering could
 *  not prove, or a shape equality it assumed. */
struct SizeCheck {
  SizeRelation relation;
  /** What it is, for messages: "fact 'C % groups == 0' of 'conv'", "shape equality 'C / 24 ==
   *  1' (dimension 1 of input 'w' of 'conv2d')". */
  std::string claim;
  CheckSite site;
  std::vector<CheckSite> trace;  ///< the call sites that led to `site`, innermost first
  bool stated = false;           ///< a fact of `where`; false: an equality lowering assumed
};

/** A SizeCheck that does not hold for the bound sizes. what() is "SITE: PROBLEM". */
struct SizeCheckError : std::invalid_argument {
  SizeCheckError(SizeCheck check, std::string problem);
  SizeCheck check;
  std::string problem;  ///< the message without the site: "fact '...' of '...' does not hold ..."
};

/** Why `c` fails for `sizes` ("fact 'C % 4 == 0' of 'conv' does not hold with C = 6"), or
 *  nullopt when it holds or uses a size `sizes` does not bind. */
std::optional<std::string> size_check_failure(const SizeCheck& c,
                                              const std::map<std::string, int64_t>& sizes);

/** Throws SizeCheckError for the first check that fails for `sizes`. */
void check_size_facts(const std::vector<SizeCheck>& checks,
                      const std::map<std::string, int64_t>& sizes);

}  // namespace kiln
