/** \file
 * What the Graphviz writers (ir/graph_dot.h, ir/kernel_dot.h, ir/loop_dot.h) share: labels
 * quoted and escaped for the dot language, and long text clipped and wrapped into lines.
 */
#pragma once

#include <string>

namespace kiln {

/** How the lines of a label are aligned. */
enum class DotAlign { center, left };

/** `text` as a quoted dot string: `"` and `\` escaped, each '\n' a line break of `align` (a
 *  left-aligned label also ends with one, as dot wants). */
std::string dot_string(const std::string& text, DotAlign align = DotAlign::center);

/** `text` cut to `max_chars` (with "..." where it was cut) and broken at spaces into lines of
 *  at most `width` characters where it can be; continuation lines are indented by two spaces.
 *  Existing line breaks stay. */
std::string dot_wrap(const std::string& text, size_t width = 64, size_t max_chars = 480);

}  // namespace kiln
