// `kiln check FILE...`: parses every composite and lowers it for each dtype its type variables
// allow (with and without batch dimensions), verifying every graph.
#include <iostream>

#include "dsl/check.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

/** What lowering could not prove: a stated fact is a note, an assumed shape equality a
 *  warning; both are checked when the sizes are bound. */
void report_deferred(const std::vector<SizeCheck>& deferred) {
  for (const SizeCheck& c : deferred) {
    SpecError e = size_check_error(c, c.claim);
    std::cerr << format_diagnostic(
        e.loc(), c.stated ? "note" : "warning",
        c.stated ? c.claim + " is checked when the sizes are bound"
                 : c.claim +
                       " is not proved: it is checked when the sizes are bound (state it "
                       "with where = [\"" +
                       c.relation.str() + "\"] if it is meant)",
        e.trace);
  }
}

int check_one(const std::string& path) {
  Library lib;
  std::vector<SizeCheck> deferred;
  const SpecFile& f = check_file(lib, path, &deferred);
  report_deferred(deferred);
  std::cout << path << ": ok, " << f.composites.size() << " composite"
            << (f.composites.size() == 1 ? "" : "s");
  size_t facts = 0;
  for (const SizeCheck& c : deferred)
    facts += c.stated ? 1 : 0;
  if (!deferred.empty())
    std::cout << "; " << facts << " fact" << (facts == 1 ? "" : "s") << " and "
              << deferred.size() - facts << " shape equalit"
              << (deferred.size() - facts == 1 ? "y" : "ies") << " checked when sizes are bound";
  std::cout << "\n";
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
