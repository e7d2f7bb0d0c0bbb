// The subcommands of `kiln tune` on the tuning database (driver/tune_db.h): `ls` and `clear` list
// and empty it; `export FILE` writes every valid entry to one file and `import FILE` adds such a
// file's entries, each checked (driver/tune_transfer.h). docs/tuning.md.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "driver/tune_db.h"
#include "driver/tune_transfer.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

void list_entries() {
  TuneDb db;
  std::vector<std::string> warnings;
  auto entries = db.ls(&warnings);
  for (const std::string& w : warnings)
    std::cerr << "kiln: warning: " << w << "\n";
  for (const auto& [key, e] : entries) {
    std::printf("%s  %s  %s", key.substr(0, 12).c_str(), e.label.c_str(),
                candidate_text(e.knobs).c_str());
    if (e.best_ms > 0) std::printf("  %.4g ms (default %.4g ms)", e.best_ms, e.default_ms);
    std::printf("\n");
  }
  std::cout << entries.size() << " entr" << (entries.size() == 1 ? "y" : "ies") << " in "
            << (db.enabled() ? db.dir() : "no folder (KILN_CACHE=off)") << "\n";
}

/** `kiln tune export FILE`: every valid entry to one file. */
void export_entries(const std::string& path) {
  TuneDb db;
  std::vector<std::string> warnings;
  auto entries = db.ls(&warnings);
  for (const std::string& w : warnings)
    std::cerr << "kiln: warning: " << w << " (not exported)\n";
  std::string text = export_text(entries);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush())
    throw std::runtime_error("cannot write " + path);
  std::cout << "exported " << entries.size() << " tuning entr"
            << (entries.size() == 1 ? "y" : "ies") << " to " << path << "\n";
}

/** `kiln tune import FILE`: adds a file's entries, each checked; a malformed file is a
 *  UsageError naming the line, and nothing is imported. */
void import_entries(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("cannot read " + path + ": a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  TuneImport parsed;
  try {
    parsed = parse_export(text.str());
  } catch (const TuneImportError& e) {
    throw UsageError(path + ":" + std::to_string(e.line) + ": " + e.what() + "; nothing imported");
  }
  for (const std::string& w : parsed.warnings)
    std::cerr << "kiln: warning: " << path << ": " << w << "\n";
  TuneDb db;
  if (!db.enabled()) throw UsageError("the tuning database is off (KILN_CACHE=off)");
  size_t stored = 0;
  for (const auto& [key, e] : parsed.entries) {
    std::string warning;
    if (db.put(key, e, &warning))
      ++stored;
    else
      std::cerr << "kiln: warning: " << warning << "\n";
  }
  std::cout << "imported " << stored << " tuning entr" << (stored == 1 ? "y" : "ies") << " into "
            << db.dir();
  if (!parsed.warnings.empty()) std::cout << " (" << parsed.warnings.size() << " skipped)";
  std::cout << "\n";
}

}  // namespace

void add_tune_db_commands(CLI::App& tune, int& exit_code) {
  auto* ls = tune.add_subcommand("ls", "List the tuning database");
  auto* clear = tune.add_subcommand("clear", "Delete every entry of the tuning database");
  auto file = std::make_shared<std::string>();
  auto* exp = tune.add_subcommand("export", "Write every valid entry of the database to FILE");
  exp->add_option("file", *file, "The export file")->required();
  auto* imp = tune.add_subcommand("import", "Add the entries of an export FILE to the database");
  imp->add_option("file", *file, "The export file")->required();
  exp->callback([file, &exit_code] {
    export_entries(*file);
    exit_code = Exit::ok;
  });
  imp->callback([file, &exit_code] {
    import_entries(*file);
    exit_code = Exit::ok;
  });
  ls->callback([&exit_code] {
    list_entries();
    exit_code = Exit::ok;
  });
  clear->callback([&exit_code] {
    TuneDb db;
    size_t n = db.clear();
    std::cout << "deleted " << n << " tuning entr" << (n == 1 ? "y" : "ies") << "\n";
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
