/** \file
 * Patterns of rewrite rules, written in the body expression language (docs/rules.md):
 *
 *     (x * c0) * c1        x, y, z...: any node; c0, c1...: any constant; 0, 1.5, true: that
 *                          constant; operators and primitive names (add, exp2, where...) match
 *                          nodes of that op; `a - b` is add(a, neg(b)) as in bodies
 *     x * fold(c0 * c1)    a replacement; fold(...) evaluates on the matched constants
 *
 * Commutative ops match their operands in either order.
 */
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "ir/op.h"

namespace kiln {

struct Pattern;
using PatternPtr = std::shared_ptr<const Pattern>;

/** One node of a pattern tree. */
struct Pattern {
  enum class Kind {
    any,       ///< a pattern variable: `x`
    constant,  ///< a constant matcher: `c0`
    literal,   ///< a constant with this value: `0`, `-1`, `0.5`, `true`
    op,        ///< a primitive op over sub-patterns
    fold,      ///< replacement only: `fold(expr)`, evaluated on the matched constants
  };
  Kind kind = Kind::any;
  std::string name;         ///< any, constant: the variable
  Op op = Op::add;          ///< op
  double value = 0;         ///< literal
  bool is_integer = false;  ///< literal: written as an integer (or a bool)
  bool is_bool = false;     ///< literal: true or false
  std::vector<PatternPtr> args;
  SourceLoc loc;
};

/** Parses a pattern (`replacement` = false) or a replacement. Throws SpecError with the location
 *  of the offending part: an unknown op, a wrong operand count, fold() in a pattern. */
PatternPtr parse_pattern(const SourceText& text, bool replacement);

/** The pattern as text, in primitive form: `mul(mul(x, c0), c1)`. */
std::string pattern_str(const Pattern& p);

/** Adds the names of the pattern's variables and constant matchers to `out`. */
void pattern_variables(const Pattern& p, std::set<std::string>& out);

/** True for a name that is a constant matcher: `c` followed by digits. */
bool is_constant_matcher(const std::string& name);

/** True for ops whose two operands may be swapped. */
bool is_commutative(Op op);

}  // namespace kiln
