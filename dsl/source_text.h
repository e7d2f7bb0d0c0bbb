/** \file
 * Positions of the characters of a TOML string value, so that errors inside an expression
 * written in a string point at the right line and column of the file. Shared by spec files and
 * rule files.
 */
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dsl/ast.h"

namespace kiln {

/** The (line, col) in `lines` (the file's text) of each character of the parsed string `value`
 *  whose opening quote is at (line, col), plus one entry for the end. */
std::vector<std::pair<int, int>> string_positions(const std::vector<std::string>& lines, int line,
                                                  int col, const std::string& value);

/** The string value `value` of file `file`, whose opening quote is at (line, col) of `lines`,
 *  with the position of each character. */
SourceText source_text(const std::string& file, const std::vector<std::string>& lines, int line,
                       int col, const std::string& value);

}  // namespace kiln
