// `kiln show FILE[:COMPOSITE] --stage graph|kernels|schedule|code`: prints a pipeline stage —
// the graph (as text or dot), the kernel plan with its buffer slots, each kernel's loop nest
// with the stage times, or the source a runtime's backend renders.
#include <iostream>

#include "driver/renderers.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct ShowOptions {
  CodeRequest req;
  std::string stage = "graph", format = "text";
};

/** Plans, schedules and renders the graph for the requested runtime's backend. */
LoweredProgram generate(const Graph& g, const CodeRequest& req) {
  std::unique_ptr<Runtime> rt = open_runtime(req.runtime);
  CompileOptions opt = compile_options(req.config, 0, *rt);
  LoweredProgram p = plan_program(g, opt);
  generate_code(g, p, renderer_for(rt->backend()), opt);
  return p;
}

void print_schedule(std::ostream& out, const LoweredProgram& p) {
  for (size_t k = 0; k < p.nests.size(); ++k)
    out << "// kernel " << p.symbols[k] << "\n" << loop_nest_to_text(p.nests[k]);
  out << "// stages:" << format_stage_times(p.times) << "\n";
}

void show(const ShowOptions& o) {
  if (o.format == "dot" && o.stage != "graph")
    throw UsageError("--format dot applies to --stage graph only");
  Loaded l;
  load_selection(o.req.sel, l);
  Graph g = lower_loaded(l, o.req.test, o.req.specialize);
  if (o.stage == "graph") {
    std::cout << (o.format == "dot" ? graph_to_dot(g) : graph_to_text(g));
  } else if (o.stage == "kernels") {
    std::cout << plan_to_text(plan_program(g, CompileOptions()).plan);
  } else if (o.stage == "schedule") {
    print_schedule(std::cout, generate(g, o.req));
  } else {
    std::cout << generate(g, o.req).source;
  }
}

}  // namespace

void add_show_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("show", "Print a composite at a stage of the pipeline");
  auto o = std::make_shared<ShowOptions>();
  add_code_options(*cmd, o->req);
  cmd->add_option("--stage", o->stage,
                  "Stage to print: graph, kernels (the kernel and buffer plan), schedule (the "
                  "loop nest of each kernel), code (the source for --runtime's backend)")
      ->check(CLI::IsMember({"graph", "kernels", "schedule", "code"}))
      ->capture_default_str();
  cmd->add_option("--format", o->format, "Output format (dot: --stage graph only)")
      ->check(CLI::IsMember({"text", "dot"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] {
    show(*o);
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
