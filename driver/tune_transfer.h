/** \file
 * Exporting and importing the tuning database (docs/tuning.md, `kiln tune export|import`): every
 * valid entry in one text file that another machine adds to its own database. The file is a
 * header line, "kiln-tune-export 1", then the entries one after another, each exactly as a
 * database file holds it (tune_db.h's entry_text: from "kiln-tune 1" to its "sha256 ..." line),
 * so each is checked on import as a database file is checked when it is read.
 */
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "driver/tune_db.h"

namespace kiln {

/** Entries with their keys, as TuneDb::ls returns them. */
using TuneEntries = std::vector<std::pair<std::string, TuneEntry>>;

/** The export file of `entries`, in order. */
std::string export_text(const TuneEntries& entries);

/** A file that is not an export: the line (from 1) where it goes wrong, and what. */
class TuneImportError : public std::runtime_error {
 public:
  TuneImportError(size_t line, const std::string& what) : std::runtime_error(what), line(line) {}
  size_t line;
};

/** What an export file holds. */
struct TuneImport {
  TuneEntries entries;                ///< the entries that check, in file order
  std::vector<std::string> warnings;  ///< one per entry that does not, naming its line and key
};

/** Parses an export file. Throws TuneImportError on a malformed file (no header, a line outside
 *  any entry, an entry without its sha256 line); an entry whose text does not check (checksum,
 *  key, knob, value) is left out with a warning. Lines may end in "\r\n". */
TuneImport parse_export(const std::string& text);

}  // namespace kiln
