/** \file
 * The little JSON the `kiln` command writes by hand (`bench --json`, the torch helper's
 * request, `run --trace`): string literals with their escapes.
 */
#pragma once

#include <string>

namespace kiln::cli {

/** `s` as a JSON string literal, quotes and escapes included. */
std::string json_string(const std::string& s);

}  // namespace kiln::cli
