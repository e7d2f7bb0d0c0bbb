// Error cases of the spec language, one small spec per case in tests/error/*.toml. The first line
// of each case says where the error must point and what the message must say:
//
//   # expect: LINE:COL: substring of the message
//   # expect-file: other.toml        (optional: the error is in another file of the case)
//
// Helper files of a cross-file case have no expect line. Every case is loaded and lowered like
// `kiln check` does; when KILN_BIN names the kiln binary, the binary is run on every case too.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dsl/check.h"
#include "dsl/lower.h"
#include "ir/verifier.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/** One error case: the spec to load and the error it must raise. */
struct ErrorCase {
  fs::path spec;
  fs::path error_file;  ///< the file the error points into
  int line = 0;
  int col = 0;
  std::string message;  ///< a substring of the message
};

/** tests/error, found from the working directory (CTest runs in the source root) or from this
 *  file's own path. */
fs::path error_dir() {
  if (fs::is_directory("tests/error")) return "tests/error";
  return fs::path(__FILE__).parent_path();
}

std::optional<std::string> directive(const std::string& line, const std::string& key) {
  std::string prefix = "# " + key + ":";
  if (line.rfind(prefix, 0) != 0) return std::nullopt;
  auto b = line.find_first_not_of(' ', prefix.size());
  return b == std::string::npos ? "" : line.substr(b);
}

/** Parses the expect lines of `spec`; nullopt for a helper file without them. */
std::optional<ErrorCase> read_case(const fs::path& spec) {
  std::ifstream in(spec);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  auto expect = directive(first, "expect");
  if (!expect) return std::nullopt;
  ErrorCase c;
  c.spec = spec;
  auto other = directive(second, "expect-file");
  c.error_file = other ? spec.parent_path() / *other : spec;
  std::istringstream fields(*expect);
  char colon1 = 0, colon2 = 0;
  fields >> c.line >> colon1 >> c.col >> colon2;
  REQUIRE_MESSAGE((colon1 == ':' && colon2 == ':'), spec.string() << ": bad expect line");
  std::getline(fields >> std::ws, c.message);
  return c;
}

std::vector<ErrorCase> all_cases() {
  std::vector<fs::path> specs;
  for (const auto& entry : fs::directory_iterator(error_dir()))
    if (entry.path().extension() == ".toml") specs.push_back(entry.path());
  std::sort(specs.begin(), specs.end());
  std::vector<ErrorCase> out;
  for (const fs::path& p : specs)
    if (auto c = read_case(p)) out.push_back(*c);
  return out;
}

/** What `kiln check` does to a file. */
void check_spec(const std::string& path) {
  Library lib;
  check_file(lib, path);
}

bool same_file(const std::string& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

/** The caret line format_error prints under the source line. */
std::string caret_line(int col) {
  return "  " + std::string(col - 1, ' ') + "^\n";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/** Runs `command` through the shell; returns its exit status, or -1 when it did not exit. */
int run_status(const std::string& command) {
  int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

/** A path in the temporary directory private to this process. */
fs::path scratch_path(const std::string& name) {
  return fs::temp_directory_path() / ("kiln_error_" + std::to_string(::getpid()) + "_" + name);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

TEST_CASE("error: every spec in tests/error raises its expected error") {
  std::vector<ErrorCase> cases = all_cases();
  REQUIRE(cases.size() >= 20);
  for (const ErrorCase& c : cases) {
    INFO("case " << c.spec.string());
    std::optional<SpecError> error;
    try {
      check_spec(c.spec.string());
    } catch (const SpecError& e) {
      error = e;
    }
    CHECK_MESSAGE(error.has_value(), "no SpecError was raised");
    if (!error) continue;
    const SourceLoc& at = error->loc();
    std::string message = error->what();
    INFO("got " << at.file << ":" << at.line << ":" << at.col << ": " << message);
    CHECK(same_file(at.file, c.error_file));
    CHECK(at.line == c.line);
    CHECK(at.col == c.col);
    CHECK(message.find(c.message) != std::string::npos);
    std::string text = format_error(*error);
    CHECK(text.find(at.file + ":" + std::to_string(c.line) + ":" + std::to_string(c.col) +
                    ": error: ") == 0);
    CHECK(text.find(caret_line(c.col)) != std::string::npos);
    // Each call site of the trace is a note with its own source line and caret.
    for (const SourceLoc& call : error->trace) {
      std::string note = call.file + ":" + std::to_string(call.line) + ":" +
                         std::to_string(call.col) + ": note: in the composite called here\n";
      size_t at_note = text.find(note);
      CHECK_MESSAGE(at_note != std::string::npos, text);
      if (at_note == std::string::npos) continue;
      CHECK(text.find(caret_line(call.col), at_note) ==
            at_note + note.size() + 3 + source_line(call.file, call.line).size());
    }
  }
}

TEST_CASE("error: messages are one sentence without a trailing period") {
  for (const ErrorCase& c : all_cases()) {
    INFO("case " << c.spec.string());
    try {
      check_spec(c.spec.string());
    } catch (const SpecError& e) {
      std::string message = e.what();
      CHECK(message.find('\n') == std::string::npos);
      CHECK(!message.empty());
      CHECK(message.back() != '.');
    }
  }
}

TEST_CASE("error: malformed spec files raise a SpecError, never a crash") {
  struct Garbage {
    const char* name;
    std::string text;
  };
  std::string deep_parens = "y = " + std::string(100000, '(') + "x" + std::string(100000, ')');
  std::string long_chain = "y = x";
  for (int i = 0; i < 100000; ++i)
    long_chain += " + x";
  std::string many_minus = "y = " + std::string(100000, '-') + "x";
  std::string head = "[f]\nin = { x = \"T[N]\" }\nout = { y = \"T[N]\" }\nbody = \"\"\"\n";
  std::vector<Garbage> inputs = {
      {"binary", std::string("\x7f\x45\x4c\x46\x02\x01\x00\xff\xfe[[\x01", 12)},
      {"one_char_body", "[f]\nin = { x = \"T[N]\" }\nout = { y = \"T[N]\" }\nbody = \"(\"\n"},
      {"only_equals", "[f]\nin = { x = \"T[N]\" }\nout = { y = \"T[N]\" }\nbody = \"=\"\n"},
      {"empty_type", "[f]\nin = { x = \"\" }\nout = { y = \"T[N]\" }\nbody = \"y = x\"\n"},
      {"empty_dtype_list", "[f]\ntypes = { T = [] }\nout = { y = \"T[]\" }\nbody = \"y = 1\"\n"},
      {"deep_parens", head + deep_parens + "\n\"\"\"\n"},
      {"long_chain", head + long_chain + "\n\"\"\"\n"},
      {"many_minus", head + many_minus + "\n\"\"\"\n"},
      {"deep_brackets", head + "y = x[" + std::string(100000, '[') + "\n\"\"\"\n"},
      {"not_a_table", "f = 3\n"},
  };
  fs::path dir = scratch_path("garbage");
  fs::create_directories(dir);
  for (const Garbage& g : inputs) {
    INFO("input " << g.name);
    fs::path p = dir / (std::string(g.name) + ".toml");
    std::ofstream(p, std::ios::binary) << g.text;
    bool raised = false;
    try {
      check_spec(p.string());
    } catch (const SpecError& e) {
      raised = true;
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
    CHECK(raised);
  }
  fs::path empty = dir / "empty.toml";
  std::ofstream(empty).flush();
  CHECK_NOTHROW(check_spec(empty.string()));
  fs::remove_all(dir);
}

TEST_CASE("error: kiln check exits with 1 and prints the error with a caret") {
  const char* bin = std::getenv("KILN_BIN");
  if (!bin || !*bin || !fs::exists(bin)) {
    MESSAGE("KILN_BIN is not set to the kiln binary; skipping the command-line checks");
    return;
  }
  fs::path out = scratch_path("check.txt");
  for (const ErrorCase& c : all_cases()) {
    INFO("case " << c.spec.string());
    int status = run_status(shell_quote(bin) + " check " + shell_quote(c.spec.string()) +
                            " >/dev/null 2>" + shell_quote(out.string()));
    CHECK(status == 1);
    std::string text = read_text(out);
    CHECK(text.find(":" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: ") !=
          std::string::npos);
    CHECK(text.find(c.message) != std::string::npos);
    CHECK(text.find(caret_line(c.col)) != std::string::npos);
  }
  fs::remove(out);
}
