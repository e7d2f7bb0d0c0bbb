// `kiln show FILE[:COMPOSITE] --stage graph|simplified|kernels|schedule|code`: prints a pipeline
// stage — the graph (as text or dot), the simplified graph (with --stats, the rules applied and
// their match statistics), the kernel plan with its buffer slots, each kernel's loop nest with
// the stage times, or the source a runtime's backend renders.
#include <iostream>

#include "simplifier/engine.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct ShowOptions {
  CodeRequest req;
  std::string stage = "graph", format = "text";
  bool stats = false;
};

CompileOptions options_for(const CodeRequest& req, const Loaded& l) {
  std::unique_ptr<Runtime> rt = open_runtime(req.runtime);
  return compile_options(req.config, 0, *rt, l);
}

/** Plans, schedules and renders the graph for the requested runtime's backend. */
LoweredProgram generate(const Graph& g, const CodeRequest& req, const Loaded& l) {
  std::unique_ptr<Runtime> rt = open_runtime(req.runtime);
  CompileOptions opt = compile_options(req.config, 0, *rt, l);
  LoweredProgram p = plan_program(g, opt);
  generate_code(p, backend_for(rt->backend()), opt);
  return p;
}

void print_schedule(std::ostream& out, const LoweredProgram& p) {
  for (size_t k = 0; k < p.nests.size(); ++k)
    out << "// kernel " << p.symbols[k] << ": " << p.transforms[k] << "\n"
        << loop_nest_to_text(p.nests[k]);
  out << "// stages:" << format_stage_times(p.times) << "\n";
}

void show(const ShowOptions& o) {
  if (o.format == "dot" && o.stage != "graph")
    throw UsageError("--format dot applies to --stage graph only");
  config_items(o.req.config);  // checked for the stages that read no knob too
  Loaded l;
  load_selection(o.req.sel, l);
  Graph g = lower_loaded(l, o.req.test, o.req.specialize);
  if (o.stats && o.stage != "simplified") throw UsageError("--stats applies to --stage simplified");
  if (o.stage == "graph") {
    std::cout << (o.format == "dot" ? graph_to_dot(g) : graph_to_text(g));
  } else if (o.stage == "simplified") {
    CompileOptions opt = options_for(o.req, l);
    SimplifyResult r = simplify(g, rules_with(opt.rule_files), opt.simplify);
    if (o.stats) {
      for (const std::string& line : r.trace)
        std::cout << "// rule " << line << "\n";
      std::cout << stats_to_text(g, r);
    }
    std::cout << graph_to_text(r.graph);
  } else if (o.stage == "kernels") {
    std::cout << plan_to_text(plan_program(g, options_for(o.req, l)).plan);
  } else if (o.stage == "schedule") {
    print_schedule(std::cout, generate(g, o.req, l));
  } else {
    std::cout << generate(g, o.req, l).source;
  }
}

}  // namespace

void add_show_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("show", "Print a composite at a stage of the pipeline");
  auto o = std::make_shared<ShowOptions>();
  add_code_options(*cmd, o->req);
  cmd->add_option("--stage", o->stage,
                  "Stage to print: graph (as lowered), simplified (after the rewrite rules), "
                  "kernels (the kernel and buffer plan), schedule (the loop nest of each "
                  "kernel), code (the source for --runtime's backend)")
      ->check(CLI::IsMember({"graph", "simplified", "kernels", "schedule", "code"}))
      ->capture_default_str();
  cmd->add_flag("--stats", o->stats,
                "With --stage simplified: every rule applied, and how often each rule was "
                "tried, matched and applied");
  cmd->add_option("--format", o->format, "Output format (dot: --stage graph only)")
      ->check(CLI::IsMember({"text", "dot"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] {
    show(*o);
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
