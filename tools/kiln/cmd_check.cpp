// `kiln check FILE...`: parses every composite and lowers it for each dtype its type variables
// allow (with and without batch dimensions), verifying every graph.
#include <iostream>

#include "ir/verifier.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

/** Every combination of allowed dtypes of the composite's type variables (at most `cap`). */
std::vector<std::map<std::string, DType>> dtype_choices(const Composite& c, size_t cap) {
  std::vector<std::map<std::string, DType>> out = {{}};
  for (const TypeVar& tv : c.types) {
    std::vector<std::map<std::string, DType>> next;
    for (const auto& partial : out)
      for (DType d : tv.allowed) {
        if (next.size() >= cap) break;
        auto m = partial;
        m[tv.name] = d;
        next.push_back(m);
      }
    out = next;
  }
  return out;
}

int check_file(const std::string& path) {
  Library lib;
  const SpecFile& f = lib.load(path);
  for (const auto& c : f.composites) {
    bool batched = false;
    for (const Param& p : c->inputs)
      batched |= p.type.batch;
    for (const auto& dtypes : dtype_choices(*c, 64))
      for (int rank : batched ? std::vector<int>{0, 2} : std::vector<int>{0}) {
        LowerOptions opt;
        opt.dtypes = dtypes;
        opt.batch_rank = rank;
        Graph g = lower_composite(lib, *c, opt);
        verify_or_throw(g);
      }
  }
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
        check_file(f);
      } catch (const SpecError& e) {
        std::cerr << format_error(e);
        exit_code = Exit::spec_error;
      }
    }
  });
}

}  // namespace kiln::cli
