/** \file
 * Rendering of IntExpr sizes and indices as isl's affine text, with fresh parameters standing
 * for non-affine size products (isl cannot express `M * N`).
 */
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/int_expr.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Renders IntExprs as isl text and remembers the parameters it used and introduced. */
class IslTextRenderer {
 public:
  /** `size_vars`: the plan's size variables; every other variable is a statement iterator. */
  explicit IslTextRenderer(const std::vector<std::string>& size_vars)
      : plan_sizes_(size_vars.begin(), size_vars.end()) {}
  /** isl text of `e`, or nullopt when it is not affine. With `allow_fresh`, a non-affine term
   *  free of iterators becomes a fresh parameter instead (domains); without it, the caller
   *  over-approximates (accesses). */
  std::optional<std::string> render(const IntExpr& e, bool allow_fresh);
  /** "[M, N, kiln_p0]": every parameter seen so far. */
  std::string params() const;
  /** The parameter context: every size variable >= 1, every fresh product of them >= 1. */
  std::string context() const;
  /** Each fresh parameter's expression, for substituting it back into the loop IR. */
  std::map<std::string, AstExprPtr> substitutions() const;

 private:
  std::optional<std::string> render_monomial(const IntExpr::Term& t, bool allow_fresh);
  std::optional<std::string> render_atom(const IntAtom& a);
  std::string fresh_param(const IntExpr::Term& t);

  bool has_iterator(const IntExpr& e) const;

  std::set<std::string> plan_sizes_;                 ///< the plan's size variables
  std::set<std::string> size_vars_;                  ///< those seen so far
  std::map<std::string, std::string> fresh_by_key_;  ///< monomial key -> parameter name
  std::map<std::string, IntExpr> fresh_;             ///< parameter name -> monomial
  std::set<std::string> positive_fresh_;             ///< fresh products of variables only
};

/** The loop IR expression of an IntExpr (floor division becomes "fdiv_q"). */
AstExprPtr int_expr_to_ast(const IntExpr& e);

}  // namespace kiln
