// The tuning database's export file (driver/tune_transfer.h): a round trip, and hostile input —
// malformed files (one error with its line) and bad entries (a warning each, the rest kept).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "driver/tune_transfer.h"
#include "runtimes/cache.h"

using kiln::TuneEntries;
using kiln::TuneEntry;
using kiln::TuneImport;
using kiln::TuneImportError;

namespace {

const std::string kKeyA(64, 'a');
const std::string kKeyB(64, 'b');

TuneEntry entry(const std::string& micro) {
  TuneEntry e;
  e.knobs = {{"MICRO", micro}, {"TILE", "64x64x64"}};
  e.label = "matmul [K=8,M=8,N=8] on cc";
  e.default_ms = 2;
  e.best_ms = 1;
  return e;
}

/** An entry whose checksum is right but whose knob value MICRO refuses. */
std::string planted(const std::string& key) {
  std::string body =
      "kiln-tune 1\nkey " + key + "\nlabel x\ndefault_ms 1\nbest_ms 1\n" + "knob MICRO=99x1x1\n";
  return body + "sha256 " + kiln::sha256_hex(body.data(), body.size()) + "\n";
}

}  // namespace

TEST_CASE("tune export: a round trip keeps every entry") {
  TuneEntries entries = {{kKeyA, entry("6x2x256x32")}, {kKeyB, entry("3x8x256x32")}};
  std::string text = kiln::export_text(entries);
  CHECK(text.rfind("kiln-tune-export 1\n", 0) == 0);
  TuneImport back = kiln::parse_export(text);
  CHECK(back.warnings.empty());
  REQUIRE(back.entries.size() == 2);
  CHECK(back.entries[0].first == kKeyA);
  CHECK(back.entries[0].second.knobs == entries[0].second.knobs);
  CHECK(back.entries[1].second.label == entries[1].second.label);
  CHECK(back.entries[1].second.best_ms == 1);
  // An empty database exports a header alone, which imports nothing.
  CHECK(kiln::parse_export(kiln::export_text({})).entries.empty());
  // Windows line ends are read as well.
  std::string crlf;
  for (char c : text)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  CHECK(kiln::parse_export(crlf).entries.size() == 2);
}

TEST_CASE("tune import: a bad entry is one warning naming it; the others are kept") {
  const std::string good = kiln::entry_text(kKeyA, entry("6x2x256x32"));
  std::string flipped = kiln::entry_text(kKeyB, entry("6x2x256x32"));
  flipped[flipped.find("6x2")] = '4';  // the checksum no longer holds
  struct Case {
    std::string bad, warning;
  };
  const Case cases[] = {
      {flipped, "(key bbbbbbbbbbbbbbbb...): checksum mismatch"},
      {planted(kKeyB), "(key bbbbbbbbbbbbbbbb...): "},
      {planted("12"), "(key 12): its key is not 64 hex digits"},
      {planted(std::string(64, 'G')), "its key is not 64 hex digits"},
      {"kiln-tune 1\nlabel no key\nsha256 00\n", "(no key): its key is not 64 hex digits"},
      {"kiln-tune 1\n" + std::string(100000, 'x') + "\nsha256 00\n", "(no key)"},
      {"kiln-tune 1\nkey " + kKeyB + "\n\x01\x02\xff\nsha256 zz\n", "checksum mismatch"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.bad);
    TuneImport got = kiln::parse_export("kiln-tune-export 1\n" + c.bad + good);
    REQUIRE(got.warnings.size() == 1);
    CHECK(got.warnings[0].find("skipped the entry at line 2 ") == 0);
    CHECK(got.warnings[0].find(c.warning) != std::string::npos);
    REQUIRE(got.entries.size() == 1);
    CHECK(got.entries[0].first == kKeyA);
  }
}

TEST_CASE("tune import: a malformed file is one error with its line") {
  const std::string good = kiln::entry_text(kKeyA, entry("6x2x256x32"));  // 8 lines
  struct Case {
    std::string text;
    size_t line;
    std::string message;
  };
  const Case cases[] = {
      {"", 1, "not a tuning export"},
      {"garbage\n", 1, "not a tuning export"},
      {std::string("\0\0\x7f"
                   "ELF\n",
                   6),
       1, "not a tuning export"},
      {good, 1, "not a tuning export"},  // an entry file, not an export
      {"kiln-tune-export 2\n" + good, 1, "not a tuning export"},
      {"kiln-tune-export 1\nhello\n", 2, "expected 'kiln-tune 1'"},
      {"kiln-tune-export 1\n" + good + "key " + kKeyB + "\n", 10, "expected 'kiln-tune 1'"},
      {"kiln-tune-export 1\nkiln-tune 1\nkey " + kKeyA + "\n", 3,
       "the file ends inside the entry begun at line 2"},
      {"kiln-tune-export 1\nkiln-tune 1\nkey " + kKeyA + "\n" + good, 4,
       "the entry begun at line 2 has no sha256 line"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    try {
      kiln::parse_export(c.text);
      FAIL("no error");
    } catch (const TuneImportError& e) {
      CHECK(e.line == c.line);
      CHECK(std::string(e.what()).find(c.message) != std::string::npos);
    }
  }
}
