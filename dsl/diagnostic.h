/** \file
 * Source locations and spec errors. Every problem in a spec is reported as one SpecError with
 * the file, line and column, the offending line with a caret under the column, and a sentence
 * saying what was found and what was expected.
 */
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

/** A position in a spec file; line and column are 1-based. */
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
};

/** A user-facing error in a spec, with its location. */
class SpecError : public std::runtime_error {
 public:
  SpecError(SourceLoc loc, const std::string& message)
      : std::runtime_error(message), loc_(std::move(loc)) {}
  const SourceLoc& loc() const { return loc_; }
  /** Call sites that led here, innermost first, when the error is inside a called composite. */
  std::vector<SourceLoc> trace;

 private:
  SourceLoc loc_;
};

/** Formats `file:line:col: error: message`, the source line and a caret, plus the call trace:
 *  a note with its own line and caret for each call site. Reads the lines from disk, or from the
 *  text remembered for the file (remember_source). */
std::string format_error(const SpecError& e);

/** Keeps `text` as the contents of the spec called `file` for the source lines of diagnostics:
 *  a spec parsed from a string (parse_spec_text) has no file to read. The latest text given for
 *  a name wins; thread-safe. */
void remember_source(const std::string& file, const std::string& text);

/** Formats `file:line:col: SEVERITY: message` ("warning", "note"), the source line and a caret,
 *  plus a note for each call site of `trace`, as format_error does. */
std::string format_diagnostic(const SourceLoc& at, const std::string& severity,
                              const std::string& message, const std::vector<SourceLoc>& trace);

/** The text of line `line` (1-based) of `file`, or "" when unreadable. */
std::string source_line(const std::string& file, int line);

}  // namespace kiln
