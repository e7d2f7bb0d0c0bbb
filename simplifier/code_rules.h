/** \file
 * Rules that need code, registered in one table by name (docs/rules.md, "Rules in C++"): constant
 * folding of any op, view folding, reductions over size-1 axes, and the target rewrites. Each entry
 * says its root ops and, in algebra form, what it does.
 */
#pragma once

#include <vector>

#include "simplifier/rule.h"

namespace kiln {

/** Every C++ rule, in the order the engine tries them. */
std::vector<Rule> code_rules();

}  // namespace kiln
