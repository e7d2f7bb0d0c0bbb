#include "dsl/diagnostic.h"

#include <fstream>

namespace kiln {

std::string source_line(const std::string& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 1; i <= line && std::getline(in, text); ++i)
    if (i == line) return text;
  return "";
}

namespace {

/** `  LINE\n  ^` under column `at.col` of its source line, or "" when the line is unreadable. */
std::string quoted_line(const SourceLoc& at) {
  std::string text = source_line(at.file, at.line);
  if (text.empty()) return "";
  std::string caret;
  for (int i = 1; i < at.col && i <= static_cast<int>(text.size()); ++i)
    caret += text[i - 1] == '\t' ? '\t' : ' ';
  return "  " + text + "\n  " + caret + "^\n";
}

std::string position(const SourceLoc& at) {
  return at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.col);
}

}  // namespace

std::string format_error(const SpecError& e) {
  const SourceLoc& l = e.loc();
  std::string out;
  if (l.valid())
    out = position(l) + ": ";
  else if (!l.file.empty())
    out = l.file + ": ";
  out += "error: " + std::string(e.what()) + "\n";
  if (l.valid()) out += quoted_line(l);
  for (const SourceLoc& c : e.trace)
    out += position(c) + ": note: in the composite called here\n" + quoted_line(c);
  return out;
}

}  // namespace kiln
