/** \file
 * The builtin functions of the body language: primitive ops by name (sqrt, exp2, where...),
 * reductions (sum, max, prod), views (reshape, permute, expand, slice, pad, flip, squeeze,
 * unsqueeze), casts and tensor sources (full, iota, size). Builtins take precedence over
 * composites of the same name. docs/spec-language.md lists them.
 */
#pragma once

#include <string>
#include <vector>

namespace kiln {

/** True when `name` is a builtin function. */
bool is_builtin(const std::string& name);

/** All builtin names, sorted (for help text and suggestions). */
const std::vector<std::string>& builtin_names();

}  // namespace kiln
