// `kiln test-runtime RUNTIME [--ops FILE...] [--report OUT.md]`: the conformance check of a
// runtime (a plugin and its backend), from a build tree or an installed Kiln: every composite of
// the standard library (or of --ops) at each dtype, batch shape and size of its test table,
// compiled by the runtime and compared with the interpreter, as `kiln test` does. A progress bar
// on a terminal; each failure as a line; a Markdown report with a row per composite and a column
// per dtype (pass, fail with the first bad element, compile error with its first line, skipped;
// empty where the composite does not take the dtype); exit code 3 on any failure.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "driver/pipeline.h"
#include "ir/data_dirs.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"
#include "tools/kiln/test_subjects.h"

namespace kiln::cli {

namespace {

struct Options {
  std::string runtime;
  std::vector<std::string> ops;  ///< empty: every file of the standard library
  std::string report;            ///< the Markdown report's path; empty: none
  TestSettings settings;
};

/** What a table cell says: the worst of the subjects (batch shapes) it covers. */
struct Cell {
  int cases = 0, ok = 0;
  SubjectResult::Status status = SubjectResult::Status::passed;
  std::string first;  ///< the first problem of the worst status
};

int severity(SubjectResult::Status s) {
  using S = SubjectResult::Status;
  return s == S::cannot_compile ? 3 : s == S::failed ? 2 : s == S::skipped ? 1 : 0;
}

/** `text` on one line — its first line, or of a compiler's message the first that says
 *  "error" — at most `n` characters, with `|` escaped for a Markdown table. */
std::string cell_text(std::string text, size_t n = 160) {
  std::string line = text.substr(0, text.find('\n'));
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = std::min(text.find('\n', at), text.size());
    std::string l = text.substr(at, end - at);
    if (at > 0 && l.find("error") != std::string::npos) {
      line += " " + l;
      break;
    }
  }
  text = line;
  if (text.size() > n) text = text.substr(0, n - 3) + "...";
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string render(const Cell& c) {
  using S = SubjectResult::Status;
  switch (c.status) {
    case S::passed:
      return "pass (" + std::to_string(c.cases) + ")";
    case S::failed:
      return "**fail** (" + std::to_string(c.cases - c.ok) + " of " + std::to_string(c.cases) +
             "): " + cell_text(c.first);
    case S::cannot_compile:
      return "**compile error**: " + cell_text(c.first);
    case S::skipped:
      return "skipped: " + cell_text(c.first, 80);
  }
  return "";
}

std::vector<std::string> standard_library() {
  std::vector<std::string> files;
  const std::string dir = data_dir(DataDir::ops);
  if (dir.empty()) throw UsageError("the standard library (ops/) is not found; give --ops FILES");
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace

void add_test_runtime_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "test-runtime",
      "The conformance check of a runtime: every composite of the standard library (or --ops) "
      "at each dtype, batch shape and size of its test table against the interpreter, with a "
      "Markdown report");
  auto o = std::make_shared<Options>();
  cmd->add_option("runtime", o->runtime, "A runtime name or descriptor path")->required();
  cmd->add_option("--ops", o->ops,
                  "Spec files (FILE or FILE:COMPOSITE) to test instead of the standard library");
  cmd->add_option("--report", o->report,
                  "Write a Markdown report here: a row per composite, a column per dtype");
  cmd->add_option("--config", o->settings.config,
                  "Compiler knobs KEY=VALUE, e.g. TILE=64,PARALLEL=0")
      ->delimiter(',');
  cmd->add_option("--seed", o->settings.seed, "Seed of the random inputs")->capture_default_str();
  cmd->callback([o, &exit_code] {
    config_items(o->settings.config);
    std::unique_ptr<Runtime> rt = open_runtime(o->runtime);
    rt->probe();
    const std::vector<std::string> targets = o->ops.empty() ? standard_library() : o->ops;
    std::vector<std::unique_ptr<Loaded>> files;
    std::vector<Subject> subjects = load_subjects(targets, false, files);
    int total = 0;
    for (const Subject& s : subjects)
      total += static_cast<int>(s.comp->test.case_count());
    const bool tty = isatty(STDOUT_FILENO);
    const auto start = std::chrono::steady_clock::now();
    // Rows in the order met; a row's cells by dtype ("" for a composite without a type variable).
    std::vector<std::string> rows;
    std::map<std::string, std::map<std::string, Cell>> table;
    std::vector<std::string> columns;
    int done = 0, passed = 0, failed = 0, broken = 0, skipped = 0;
    int tenths = 0;  // off a terminal, a line each tenth of the cases (a log shows it is moving)
    for (const Subject& s : subjects) {
      const std::string what = subject_name(s, true);
      SubjectResult r = run_subject(s, *rt, o->settings, [&](int k) {
        progress(tty, done + k, total, what);
        if (!tty && total > 0 && (done + k) * 10 / total > tenths) {
          tenths = (done + k) * 10 / total;
          std::cout << "test-runtime: " << done + k << " of " << total << " cases, at " << what
                    << " ("
                    << format_ms(std::chrono::duration<double, std::milli>(
                                     std::chrono::steady_clock::now() - start)
                                     .count())
                    << ")\n"
                    << std::flush;
        }
      });
      done += r.cases;
      using Status = SubjectResult::Status;
      if (tty) std::cout << "\r\x1b[K";
      if (r.status == Status::failed || r.status == Status::cannot_compile)
        std::cout << "FAIL " << what << ": "
                  << (r.status == Status::cannot_compile ? "cannot compile: " : "")
                  << r.problems.at(0) << "\n";
      passed += r.ok;
      switch (r.status) {
        case Status::passed:
          break;
        case Status::failed:
          failed += r.cases - r.ok;
          break;
        case Status::cannot_compile:
          broken += r.cases;
          break;
        case Status::skipped:
          skipped += r.cases;
          break;
      }
      const std::string file =
          s.path.starts_with("std:") ? s.path.substr(4) : s.path;  // a standard library file
      const std::string row = std::filesystem::path(file).filename().string() + ":" + s.comp->name +
                              (s.grad ? " (backward)" : "");
      const std::string col =
          s.dtype_choice.empty() ? "" : s.dtype_choice.substr(s.dtype_choice.find('=') + 1);
      if (!table.count(row)) rows.push_back(row);
      if (std::find(columns.begin(), columns.end(), col) == columns.end()) columns.push_back(col);
      Cell& c = table[row][col];
      c.cases += r.cases;
      c.ok += r.ok;
      const std::string first = r.problems.empty() ? "" : r.problems[0];
      if (severity(r.status) > severity(c.status)) {
        c.status = r.status;
        c.first = first;
      } else if (r.status == c.status && c.first.empty()) {
        c.first = first;
      }
    }
    if (tty) std::cout << "\r\x1b[K";
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << passed << " passed, " << failed << " failed, " << broken
              << " in programs that did not compile, " << skipped << " skipped (" << rt->name()
              << ", " << subjects.size() << " programs, " << static_cast<int>(seconds) << " s)\n";
    if (!o->report.empty()) {
      std::ofstream out(o->report);
      if (!out) throw UsageError("cannot write the report " + o->report);
      // Columns in dtype order as the standard library lists them: floats, then integers.
      std::vector<std::string> order = {"f32", "f64", "f16", "bf16", "i8",  "u8",   "i16",
                                        "u16", "i32", "u32", "i64",  "u64", "bool", ""};
      std::sort(columns.begin(), columns.end(), [&](const std::string& a, const std::string& b) {
        auto pos = [&](const std::string& x) {
          return std::find(order.begin(), order.end(), x) - order.begin();
        };
        return pos(a) < pos(b);
      });
      out << "# Conformance of the `" << rt->name() << "` runtime\n\n"
          << "`kiln test-runtime " << o->runtime << "`, " << today() << ": descriptor "
          << rt->descriptor().path << ", backend `" << rt->backend() << "`, plugin "
          << rt->plugin_path() << "; " << rt->describe_device() << ".\n\n"
          << subjects.size() << " programs (composite × dtype × batch shape), " << total
          << " cases: " << passed << " passed, " << failed << " failed, " << broken
          << " in programs that did not compile, " << skipped << " skipped; "
          << static_cast<int>(seconds) << " s.\n\n"
          << "A cell covers every batch shape and size of the composite's test table at that "
             "dtype: `pass (cases)`, `fail (failed of cases)` with the first bad element, "
             "`compile error` with its first line, `skipped` with why; empty where the "
             "composite does not take the dtype.\n\n| composite |";
      for (const std::string& c : columns)
        out << " " << (c.empty() ? "untyped" : c) << " |";
      out << "\n| --- |";
      for (size_t i = 0; i < columns.size(); ++i)
        out << " --- |";
      out << "\n";
      for (const std::string& row : rows) {
        out << "| " << row << " |";
        for (const std::string& c : columns) {
          auto it = table[row].find(c);
          out << " " << (it == table[row].end() ? "" : render(it->second)) << " |";
        }
        out << "\n";
      }
      std::cout << "report: " << o->report << "\n";
    }
    exit_code = failed + broken > 0 ? Exit::test_failed : Exit::ok;
  });
}

}  // namespace kiln::cli
