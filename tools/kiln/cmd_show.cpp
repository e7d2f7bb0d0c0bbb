// `kiln show FILE[:COMPOSITE] --stage graph --format text|dot`: prints a pipeline stage.
#include <iostream>

#include "ir/verifier.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

void add_show_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("show", "Print a composite at a stage of the pipeline");
  struct Opts {
    Selection sel;
    std::string stage = "graph", format = "text";
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("target", o->sel.target, "FILE[:COMPOSITE]")->required();
  cmd->add_option("--stage", o->stage, "Stage to print")
      ->check(CLI::IsMember({"graph"}))
      ->capture_default_str();
  cmd->add_option("--format", o->format, "Output format")
      ->check(CLI::IsMember({"text", "dot"}))
      ->capture_default_str();
  cmd->add_option("--dtype", o->sel.dtypes, "Type variable choice, e.g. T=f16");
  cmd->add_option("--attr", o->sel.attrs, "Attribute value, e.g. alpha=0.2");
  cmd->add_option("--batch", o->sel.batch, "Batch dimensions for '...', e.g. 3,5");
  cmd->callback([o, &exit_code] {
    Loaded l;
    load_selection(o->sel, l);
    Graph g = lower_composite(l.lib, *l.comp, l.options);
    verify_or_throw(g);
    std::cout << (o->format == "dot" ? graph_to_dot(g) : graph_to_text(g));
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
