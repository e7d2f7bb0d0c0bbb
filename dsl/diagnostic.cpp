#include "dsl/diagnostic.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace kiln {

namespace {

std::mutex remembered_mutex;
/** Spec texts that have no file (parse_spec_text), by name. */
std::map<std::string, std::string>& remembered() {
  static std::map<std::string, std::string> texts;
  return texts;
}

}  // namespace

void remember_source(const std::string& file, const std::string& text) {
  std::lock_guard<std::mutex> lock(remembered_mutex);
  remembered()[file] = text;
}

std::string source_line(const std::string& file, int line) {
  {
    std::lock_guard<std::mutex> lock(remembered_mutex);
    if (auto it = remembered().find(file); it != remembered().end()) {
      std::istringstream in(it->second);
      std::string text;
      for (int i = 1; i <= line && std::getline(in, text); ++i)
        if (i == line) return text;
      return "";
    }
  }
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

std::string format_diagnostic(const SourceLoc& l, const std::string& severity,
                              const std::string& message, const std::vector<SourceLoc>& trace) {
  std::string out;
  if (l.valid())
    out = position(l) + ": ";
  else if (!l.file.empty())
    out = l.file + ": ";
  out += severity + ": " + message + "\n";
  if (l.valid()) out += quoted_line(l);
  for (const SourceLoc& c : trace)
    out += position(c) + ": note: in the composite called here\n" + quoted_line(c);
  return out;
}

std::string format_error(const SpecError& e) {
  return format_diagnostic(e.loc(), "error", e.what(), e.trace);
}

}  // namespace kiln
