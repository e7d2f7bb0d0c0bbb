#include "ir/dot.h"

namespace kiln {

std::string dot_string(const std::string& text, DotAlign align) {
  const char* brk = align == DotAlign::left ? "\\l" : "\\n";
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += brk;
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  if (align == DotAlign::left && (text.empty() || text.back() != '\n')) out += brk;
  return out + "\"";
}

namespace {

/** One line (no '\n') broken into lines of at most `width` characters at spaces. */
std::string wrap_line(const std::string& line, size_t width) {
  std::string out, rest = line;
  bool first = true;
  while (true) {
    size_t room = first ? width : width - 2;
    std::string lead = first ? "" : "  ";
    if (rest.size() <= room) return out + lead + rest;
    size_t cut = rest.rfind(' ', room);
    if (cut == std::string::npos || cut == 0) cut = room;  // no space: a hard break
    out += lead + rest.substr(0, cut) + "\n";
    rest = rest.substr(cut);
    if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
    first = false;
  }
}

}  // namespace

std::string dot_wrap(const std::string& text, size_t width, size_t max_chars) {
  if (width < 8) width = 8;
  std::string s = text;
  if (s.size() > max_chars) {
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80)
      --cut;  // not inside a UTF-8 sequence
    s = s.substr(0, cut) + "...";
  }
  std::string out;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find('\n', begin);
    if (end == std::string::npos) end = s.size();
    out += (begin ? "\n" : "") + wrap_line(s.substr(begin, end - begin), width);
    begin = end + 1;
  }
  return out;
}

}  // namespace kiln
