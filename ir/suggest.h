/** \file
 * "Did you mean …": the known name closest to a misspelt one, for error messages (unknown
 * composites, builtins, attributes, config keys).
 */
#pragma once

#include <string>
#include <vector>

namespace kiln {

/** Levenshtein distance: insertions, deletions and substitutions, one edit each. */
size_t edit_distance(const std::string& a, const std::string& b);

/** " (did you mean X?)" for the candidate X closest to `name`, when it is within two edits and
 *  fewer edits than the longer of the two has characters (so `x` never suggests `y`); else
 *  empty. Ties go to the first candidate. */
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace kiln
