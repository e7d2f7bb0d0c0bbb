/** \file
 * Rule files: TOML, one rule per line, the key being the rule's name (docs/rules.md):
 *
 *     mul-one = { pattern = "x * 1", replacement = "x", comment = "x * 1 = x, NaN and -0 too" }
 *
 * Keys: pattern and replacement (required), guard, comment, fastmath (optional). Errors are
 * SpecErrors pointing at the line and column in the file.
 */
#pragma once

#include <string>
#include <vector>

#include "simplifier/rule.h"

namespace kiln {

/** The rules of one file; their set is the file's stem. */
std::vector<Rule> load_rule_file(const std::string& path);

/** The rules of TOML text `text`, reported as coming from `path`. */
std::vector<Rule> parse_rule_text(const std::string& text, const std::string& path);

}  // namespace kiln
