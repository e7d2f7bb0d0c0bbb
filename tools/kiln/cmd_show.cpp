// `kiln show FILE[:COMPOSITE] --stage graph|simplified|kernels|schedule|code`: prints a pipeline
// stage — the graph (as text or dot), the simplified graph (with --stats, the rules applied and
// their match statistics), the kernel plan with its buffer slots, each kernel's loop nest with
// the stage times, or the source a runtime's backend renders. Every stage but code also draws
// as Graphviz dot (ir/graph_dot.h, ir/kernel_dot.h, ir/loop_dot.h), and as SVG or PNG through
// Graphviz's `dot` (tools/kiln/graphviz.h); the graph also as a spec (--format spec).
#include <fstream>
#include <iostream>

#include "ir/graph_dot.h"
#include "ir/graph_spec.h"
#include "ir/kernel_dot.h"
#include "ir/loop_dot.h"
#include "simplifier/engine.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/graphviz.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct ShowOptions {
  CodeRequest req;
  std::string stage = "graph", format = "text", output;
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

std::string schedule_text(const LoweredProgram& p) {
  std::string out;
  for (size_t k = 0; k < p.nests.size(); ++k)
    out +=
        "// kernel " + p.symbols[k] + ": " + p.transforms[k] + "\n" + loop_nest_to_text(p.nests[k]);
  for (const LoweredProgram::Variant& v : p.variants)
    out += "// kernel " + v.symbol + ": " + p.symbols[v.kernel] + " at " + v.label +
           ", chosen at launch by the sizes\n" + loop_nest_to_text(v.nest);
  return out + "// stages:" + format_stage_times(p.times) + "\n";
}

std::string schedule_dot(const LoweredProgram& p, const std::string& name) {
  std::vector<NestPicture> nests;
  for (size_t k = 0; k < p.nests.size(); ++k)
    nests.push_back({&p.plan.kernels.at(k), &p.nests[k], p.symbols.at(k), p.transforms.at(k)});
  return loop_nests_to_dot(p.plan, nests, name + ": loop nests");
}

/** The stage as text, or as dot where `dot`. */
std::string stage_output(const ShowOptions& o, bool dot) {
  Loaded l;
  load_selection(o.req.sel, l);
  Graph g = lower_loaded(l, o.req.test, o.req.specialize);
  if (o.stage == "graph" && o.format == "spec") return graph_to_spec(g);
  if (o.stage == "graph") return dot ? graph_to_dot(g) : graph_to_text(g);
  if (o.stage == "simplified") {
    CompileOptions opt = options_for(o.req, l);
    SimplifyResult r = simplify(g, rules_with(opt.rule_files), opt.simplify);
    if (dot) return graph_to_dot(r.graph);
    std::string out;
    if (o.stats) {
      for (const std::string& line : r.trace)
        out += "// rule " + line + "\n";
      out += stats_to_text(g, r);
    }
    return out + graph_to_text(r.graph);
  }
  if (o.stage == "kernels") {
    LoweredProgram p = plan_program(g, options_for(o.req, l));
    return dot ? plan_to_dot(p.plan, g.name) : p.values + plan_to_text(p.plan);
  }
  if (o.stage == "schedule") {
    LoweredProgram p = generate(g, o.req, l);
    return dot ? schedule_dot(p, g.name) : schedule_text(p);
  }
  return generate(g, o.req, l).source;
}

void show(const ShowOptions& o) {
  bool picture = o.format != "text" && o.format != "spec";
  if (picture && o.stage == "code")
    throw UsageError("--format " + o.format +
                     " draws --stage graph, simplified, kernels or schedule; --stage code is "
                     "source text (--format text)");
  if (o.format == "spec" && o.stage != "graph")
    throw UsageError("--format spec prints --stage graph, the lowered graph, as a composite");
  if (o.stats && o.stage != "simplified") throw UsageError("--stats applies to --stage simplified");
  if (o.stats && picture)
    throw UsageError("--stats prints text; it does not combine with --format " + o.format);
  config_items(o.req.config);  // checked for the stages that read no knob too
  if (o.format == "svg" || o.format == "png") {
    std::string dot = require_graphviz(o.format);  // before the work: a missing one says so
    render_with_graphviz(dot, stage_output(o, true), o.format, o.output);
    return;
  }
  std::string out = stage_output(o, o.format == "dot");
  if (o.output.empty()) {
    std::cout << out;
    return;
  }
  std::ofstream file(o.output, std::ios::binary);
  file << out;
  if (!file.flush()) throw std::runtime_error("cannot write '" + o.output + "'");
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
  cmd->add_option("--format", o->format,
                  "Output format: text, dot (Graphviz), svg or png (drawn by Graphviz's dot, "
                  "which must be on PATH); dot, svg and png for every stage but code; spec: "
                  "--stage graph as a composite of the spec language (ir/graph_spec.h)")
      ->check(CLI::IsMember({"text", "dot", "svg", "png", "spec"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Write to this file instead of standard output");
  cmd->callback([o, &exit_code] {
    show(*o);
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
