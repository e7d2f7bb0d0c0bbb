/** \file
 * Pictures through Graphviz: `kiln show --format svg|png` hands the dot text to Graphviz's
 * `dot` executable, found on PATH, and lets it write the picture.
 */
#pragma once

#include <optional>
#include <string>

namespace kiln::cli {

/** The full path of executable `name` in a folder of $PATH, or nothing. */
std::optional<std::string> find_on_path(const std::string& name);

/** The path of Graphviz's `dot` on PATH; throws std::runtime_error saying that `--format
 *  FORMAT` needs it, and how to install it, when there is none. */
std::string require_graphviz(const std::string& format);

/** Runs `DOT -T<format>` (DOT from require_graphviz) on `dot_text`, given on its stdin; the
 *  picture goes to `output`, or to this process's stdout when `output` is empty. Throws
 *  std::runtime_error when `output` cannot be written or dot fails (its own messages go to
 *  stderr). */
void render_with_graphviz(const std::string& dot, const std::string& dot_text,
                          const std::string& format, const std::string& output);

}  // namespace kiln::cli
