// `kiln check FILE...`: parses every composite and lowers it for each dtype its type variables
// allow (with and without batch dimensions), verifying every graph.
#include <iostream>

#include "dsl/check.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

int check_one(const std::string& path) {
  Library lib;
  const SpecFile& f = check_file(lib, path);
  std::cout << path << ": ok, " << f.composites.size() << " composite"
            << (f.composites.size() == 1 ? "" : "s") << "\n";
  return Exit::ok;
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "Parse and type-check every composite of spec files");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, "Spec files (TOML)")->required();
  cmd->callback([files, &exit_code] {
    for (const std::string& f : *files) {
      try {
        check_one(f);
      } catch (const SpecError& e) {
        std::cerr << format_error(e);
        exit_code = Exit::spec_error;
      }
    }
  });
}

}  // namespace kiln::cli
