/** \file
 * Symbolic integer expressions: the sizes of tensors (`M`, `N + 2*pad`, `(H - R) / stride + 1`)
 * and the index maps of views (`%0 * N + %1`). Expressions are kept in one canonical form — a
 * sum of terms, each an integer coefficient times a product of atoms — so two expressions that
 * are equal as polynomials compare equal (and `(a % b) + b * (a / b)` is `a`). An atom is a named
 * variable, a floor division or a modulus. Variables named `%k` are the index variables of a view;
 * any other name is a size variable. Expressions are immutable values, cheap to copy.
 */
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln {

struct IntAtom;

/** A symbolic integer in canonical sum-of-products form. */
class IntExpr {
 public:
  /** One term: `coeff * factors[0] * factors[1] * ...`; the constant term has no factors. */
  struct Term {
    int64_t coeff = 0;
    std::vector<std::shared_ptr<const IntAtom>> factors;
  };

  IntExpr() = default;
  IntExpr(int64_t c);  // NOLINT: integers convert implicitly, as in the spec language
  static IntExpr var(const std::string& name);
  /** The index variable `%k` of a view's index space. */
  static IntExpr index(int k);

  /** Arithmetic; a coefficient that overflows int64 throws std::overflow_error. */
  friend IntExpr operator+(const IntExpr& a, const IntExpr& b);
  friend IntExpr operator-(const IntExpr& a, const IntExpr& b);
  friend IntExpr operator*(const IntExpr& a, const IntExpr& b);
  friend IntExpr operator-(const IntExpr& a);
  /** Floor division (rounds toward minus infinity, like Python's `//`). */
  friend IntExpr floordiv(const IntExpr& a, const IntExpr& b);
  /** Floor modulus: the result has the sign of `b`. */
  friend IntExpr mod(const IntExpr& a, const IntExpr& b);

  std::optional<int64_t> as_constant() const;
  /** The variable's name when the expression is exactly one variable. */
  std::optional<std::string> as_var() const;
  bool is_constant() const { return as_constant().has_value(); }

  /** Evaluates with every variable bound; throws std::runtime_error naming an unbound one, and
   *  std::overflow_error when a value or an intermediate result overflows int64. */
  int64_t eval(const std::map<std::string, int64_t>& env) const;
  /** Replaces variables by expressions; unlisted variables stay. */
  IntExpr substitute(const std::map<std::string, IntExpr>& sub) const;
  /** Adds the names of all variables (including `%k`) to `out`. */
  void collect_vars(std::set<std::string>& out) const;
  /** True when the expression is affine: no products of variables, no div or mod atoms. */
  bool is_affine() const;

  std::string str() const;
  const std::vector<Term>& terms() const { return terms_; }

  friend bool operator==(const IntExpr& a, const IntExpr& b) { return a.key() == b.key(); }
  friend bool operator!=(const IntExpr& a, const IntExpr& b) { return !(a == b); }
  friend bool operator<(const IntExpr& a, const IntExpr& b) { return a.key() < b.key(); }

  /** Canonical text used for equality and ordering. */
  const std::string& key() const;

 private:
  static IntExpr from_terms(std::vector<Term> terms);
  /** `c * X * (a % b) + c * X * b * (a / b)` (b one term) merged into `c * X * a`: floor division
   *  and modulus recombine for every a and every b other than 0 (a reshape's flattened index). */
  IntExpr merge_div_mod() const;
  std::vector<Term> terms_;  // sorted by monomial key, no zero coefficients
  mutable std::shared_ptr<const std::string> key_;
};

/** A variable, `a / b` (floor) or `a % b`. */
struct IntAtom {
  enum class Kind { var, floordiv, mod } kind;
  std::string name;  // for var
  IntExpr a, b;      // for floordiv and mod
  std::string key;   // canonical text
};

/** A tensor shape: one size expression per dimension. */
using Shape = std::vector<IntExpr>;

/** "[M, N + 1]" */
std::string shape_str(const Shape& s);

/** True when the shapes have equal rank and canonically equal dimensions. */
bool same_shape(const Shape& a, const Shape& b);

/** The coefficient of variable `var` in `e` when e is affine in it (0 when unused), else
 *  nullopt. */
std::optional<int64_t> affine_coefficient(const IntExpr& e, const std::string& var);

/** Whether `e` is never negative with its variables never negative (sizes, iterators): every
 *  term a positive coefficient times plain variables. */
bool nonnegative_over_vars(const IntExpr& e);

/** Evaluates every dimension. */
std::vector<int64_t> eval_shape(const Shape& s, const std::map<std::string, int64_t>& env);

/** `e` with every variable in it at `value` (a cost model's nominal size); nullopt where it does
 *  not evaluate (a division by zero). */
std::optional<int64_t> eval_at(const IntExpr& e, int64_t value);

}  // namespace kiln
