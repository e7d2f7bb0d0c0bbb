// The tuning database's export file: writing it, and parsing it line by line.
#include "driver/tune_transfer.h"

#include <optional>

namespace kiln {

namespace {

constexpr const char* kHeader = "kiln-tune-export 1";
constexpr const char* kEntryStart = "kiln-tune 1";

/** The lines of `text` without their "\n" or "\r\n". */
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    at = end + 1;
  }
  return lines;
}

/** The value of the entry's "key " line, or "". */
std::string key_of(const std::vector<std::string>& entry) {
  for (const std::string& line : entry)
    if (line.rfind("key ", 0) == 0) return line.substr(4);
  return "";
}

/** Checks one entry (its lines, from kEntryStart to the sha256 line) begun at line `first`. */
void add_entry(const std::vector<std::string>& entry, size_t first, TuneImport& out) {
  std::string key = key_of(entry), text, why;
  for (const std::string& line : entry)
    text += line + "\n";
  std::optional<TuneEntry> e;
  if (!valid_tune_key(key))
    why = "its key is not 64 hex digits";
  else
    e = parse_entry(key, text, why);
  if (e) {
    out.entries.emplace_back(key, *e);
    return;
  }
  std::string name = key.empty() ? "no key" : "key " + key.substr(0, 16);
  if (key.size() > 16) name += "...";
  out.warnings.push_back("skipped the entry at line " + std::to_string(first) + " (" + name +
                         "): " + why);
}

}  // namespace

std::string export_text(const TuneEntries& entries) {
  std::string text = std::string(kHeader) + "\n";
  for (const auto& [key, e] : entries)
    text += entry_text(key, e);
  return text;
}

TuneImport parse_export(const std::string& text) {
  std::vector<std::string> lines = lines_of(text);
  if (lines.empty() || lines[0] != kHeader)
    throw TuneImportError(
        1, "not a tuning export: the first line is not '" + std::string(kHeader) + "'");
  TuneImport out;
  std::vector<std::string> entry;
  size_t first = 0;  ///< the line the open entry began on; 0: none open
  for (size_t n = 1; n < lines.size(); ++n) {
    const std::string& line = lines[n];
    const size_t number = n + 1;
    if (first == 0) {
      if (line.empty()) continue;
      if (line != kEntryStart)
        throw TuneImportError(
            number, "expected '" + std::string(kEntryStart) + "', the first line of an entry");
      first = number;
      entry = {line};
      continue;
    }
    if (line == kEntryStart)
      throw TuneImportError(
          number, "the entry begun at line " + std::to_string(first) + " has no sha256 line");
    entry.push_back(line);
    if (line.rfind("sha256 ", 0) == 0) {
      add_entry(entry, first, out);
      first = 0;
    }
  }
  if (first != 0)
    throw TuneImportError(lines.size(), "the file ends inside the entry begun at line " +
                                            std::to_string(first) + " (no sha256 line)");
  return out;
}

}  // namespace kiln
