// `kiln run FILE[:COMPOSITE] --runtime interp --test M=..,N=.. --seed S`: lowers the composite,
// runs it on seeded random inputs and prints a summary of every output with the time taken.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "ir/verifier.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run a composite on seeded random inputs");
  struct Opts {
    Selection sel;
    std::string runtime = "interp", test;
    uint64_t seed = 0;
    int debug = 0;
    bool specialize = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("target", o->sel.target, "FILE[:COMPOSITE]")->required();
  cmd->add_option("--runtime", o->runtime, "Runtime that executes the composite")
      ->capture_default_str();
  cmd->add_option("--test", o->test,
                  "Size bindings, e.g. M=100,N=7 (default: the composite's first test case)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--dtype", o->sel.dtypes, "Type variable choice, e.g. T=f16");
  cmd->add_option("--attr", o->sel.attrs, "Attribute value, e.g. alpha=0.2");
  cmd->add_option("--batch", o->sel.batch, "Batch dimensions for '...', e.g. 3,5");
  cmd->add_flag("--specialize", o->specialize,
                "Compile for the bound sizes only (they become constants in the graph)");
  cmd->add_option("--debug", o->debug, "Debug level 0..5")->check(CLI::Range(0, 5));
  cmd->callback([o, &exit_code] {
    if (o->runtime != "interp")
      throw UsageError("unknown runtime '" + o->runtime + "'; available: interp");
    Loaded l;
    load_selection(o->sel, l);
    SizeBindings sizes = o->test.empty() ? l.comp->test.case_sizes(0) : parse_sizes(o->test);
    for (size_t k = 0; k < l.batch.size(); ++k)
      sizes["batch" + std::to_string(k)] = l.batch[k];
    if (o->specialize) l.options.fixed_sizes = sizes;
    Graph g = lower_composite(l.lib, *l.comp, l.options);
    verify_or_throw(g);
    if (o->debug >= 2) std::cout << graph_to_text(g);
    for (const std::string& v : g.size_vars)
      if (!sizes.count(v))
        throw UsageError("size variable " + v + " of '" + l.comp->name +
                         "' is not bound; pass --test " + v + "=...");
    std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, o->seed);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> outs = interpret(g, sizes, inputs);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::string bound;
    for (const auto& [k, v] : sizes)
      bound += (bound.empty() ? "" : ",") + k + "=" + std::to_string(v);
    std::cout << l.comp->name << " [" << bound << "] on " << o->runtime << "\n";
    for (size_t k = 0; k < inputs.size(); ++k)
      std::cout << "  in  " << g[g.inputs[k]].name << " : " << tensor_type_str(inputs[k]) << "\n";
    for (size_t k = 0; k < outs.size(); ++k)
      std::cout << "  out " << g.outputs[k].name << " : " << tensor_type_str(outs[k]) << "  "
                << tensor_summary(outs[k]) << "\n";
    char line[64];
    std::snprintf(line, sizeof line, "  time %.3f ms (reference interpreter)\n", ms);
    std::cout << line;
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
