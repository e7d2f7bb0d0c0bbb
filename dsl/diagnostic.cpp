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

std::string format_error(const SpecError& e) {
  const SourceLoc& l = e.loc();
  std::string out;
  if (l.valid())
    out = l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col) + ": ";
  else if (!l.file.empty())
    out = l.file + ": ";
  out += "error: " + std::string(e.what()) + "\n";
  if (l.valid()) {
    std::string text = source_line(l.file, l.line);
    if (!text.empty()) {
      std::string caret;
      for (int i = 1; i < l.col && i <= static_cast<int>(text.size()); ++i)
        caret += text[i - 1] == '\t' ? '\t' : ' ';
      out += "  " + text + "\n  " + caret + "^\n";
    }
  }
  for (const SourceLoc& c : e.trace)
    out += c.file + ":" + std::to_string(c.line) + ":" + std::to_string(c.col) +
           ": note: in the composite called here\n";
  return out;
}

}  // namespace kiln
