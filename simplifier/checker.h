/** \file
 * The rule checker behind `kiln rules check` (docs/rules.md, "Checking rules"): a rule written as
 * pattern -> replacement is instantiated for several dtypes, with its constants drawn from special
 * values (0, -0, ±1, ±inf, NaN, extremes of the dtype, random ones), and both sides are evaluated
 * by the interpreter on inputs that mix special and random values. A rule fails when the
 * replacement changes a result beyond rounding: a different NaN-ness, sign of zero or integer,
 * or a float further apart than a few units in the last place. Rules marked fastmath are held
 * to finite inputs and compared where both results are finite (fast math assumes no NaN and no
 * infinity), with a looser tolerance.
 */
#pragma once

#include <cstdint>
#include <string>

#include "ir/tensor.h"
#include "simplifier/rule.h"

namespace kiln {

/** What checking one rule found. */
struct RuleCheck {
  bool ok = true;
  int dtypes = 0;       ///< dtypes for which the pattern is well typed
  int cases = 0;        ///< instantiations whose guard held and that were compared
  int declined = 0;     ///< instantiations the guard declined
  std::string failure;  ///< the first counterexample, when !ok
};

/** Checks a pattern rule (a C++ rule is checked on the ops/ composites instead). */
RuleCheck check_rule(const Rule& rule, uint64_t seed = 1, int trials = 64);

/** The first element where `got` and `want` differ beyond what `fastmath` allows, as text;
 *  "" when they agree. */
std::string compare_results(const Tensor& got, const Tensor& want, bool fastmath);

}  // namespace kiln
