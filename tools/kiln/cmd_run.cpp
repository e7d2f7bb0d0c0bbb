// `kiln run FILE[:COMPOSITE] --runtime R --test M=..,N=.. --seed S`: lowers the composite, runs
// the interpreter on seeded random inputs, and under a compiled runtime runs the compiled code
// too and compares every output with the interpreter (PASS/FAIL, exit code 3 on a mismatch);
// --no-check runs the compiled code alone.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "driver/compare.h"
#include "driver/config.h"
#include "driver/executable.h"
#include "ir/verifier.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/run_files.h"
#include "tools/kiln/session.h"
#include "tools/kiln/trace.h"

namespace kiln::cli {

namespace {

struct RunOptions : RunRequest {
  RunOptions() { runtime = "interp"; }
  int debug = 0;
  bool no_check = false;  ///< no interpreter: the compiled code's outputs are not compared
  std::vector<std::string> inputs;  ///< --input NAME=FILE.npy
  std::string weights;              ///< --weights FILE.safetensors
  std::string save;                 ///< --save DIR
  std::string trace;                ///< --trace FILE.json
};

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string format_err(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/** Compiles for the runtime, runs, and compares every output with the interpreter's (`want`,
 *  which is empty under --no-check: the outputs are summarised instead). */
bool run_compiled(const RunOptions& o, Runtime* rt, const Loaded& l, const Graph& g,
                  const std::vector<Tensor>& inputs, const std::vector<Tensor>& want,
                  const SizeBindings& sizes, double interp_ms, Trace* trace) {
  std::vector<Tensor> got;
  CompileOptions copt = tuned_compile_options(o.config, o.debug, *rt, l, g, sizes);
  auto t0 = std::chrono::steady_clock::now();
  Executable exe(g, *rt, copt);
  double build_ms = elapsed_ms(t0);
  if (trace) trace->build(exe, t0, build_ms);
  for (const std::string& w : exe.build_info().compile.warnings)
    std::cerr << "kiln: warning: " << w << "\n";
  if (o.debug >= 1) {
    print_build(std::cout, exe, build_ms);
    for (size_t k = 0; k < exe.program().plan.kernels.size(); ++k) {
      std::string shape = exe.tile_shape_for(k, sizes);
      if (!shape.empty())
        std::cout << "  kernel " << k << " launches at tile shape " << shape
                  << " (of the shapes compiled, the one these sizes make fastest)\n";
    }
  }
  std::cout.flush();  // a fault inside a kernel ends the process (driver/fault_guard.h)
  std::vector<LaunchSpan> launches;
  t0 = std::chrono::steady_clock::now();
  exe.run(inputs, sizes, trace ? &launches : nullptr);  // warm-up
  if (trace) trace->run(exe, "run (warm-up)", t0, elapsed_ms(t0), launches);
  launches.clear();
  t0 = std::chrono::steady_clock::now();
  got = exe.run(inputs, sizes, trace ? &launches : nullptr);
  double run_ms = elapsed_ms(t0);
  if (trace) trace->run(exe, "run", t0, run_ms, launches);
  bool all_ok = true;
  for (size_t k = 0; k < got.size() && want.empty(); ++k)
    std::cout << "  out " << g.outputs[k].name << " : " << tensor_type_str(got[k]) << "  "
              << tensor_summary(got[k]) << "\n";
  for (size_t k = 0; k < got.size() && !want.empty(); ++k) {
    Tolerance tol = tolerance_for(want[k].dtype, l.comp->test.rtol, l.comp->test.atol, want[k]);
    Comparison c = compare(got[k], want[k], tol);
    all_ok &= c.ok;
    std::cout << "  out " << g.outputs[k].name << " : " << tensor_type_str(got[k])
              << "  max abs err " << format_err(c.max_abs) << ", max rel err "
              << format_err(c.max_rel) << "  " << (c.ok ? "PASS" : "FAIL") << "\n";
    if (!c.ok)
      std::cout << "      element " << c.first_bad << ": got " << c.got << ", interpreter "
                << c.want << " (rtol " << tol.rtol << ", atol " << tol.atol << ")\n";
  }
  std::cout << "  time " << format_ms(run_ms) << " (" << rt->name() << ", including copies)";
  if (!want.empty()) std::cout << "; reference interpreter " << format_ms(interp_ms);
  std::cout << "\n";
  if (!o.save.empty()) save_outputs(o.save, g, got);
  return all_ok;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run a composite on seeded random inputs");
  auto o = std::make_shared<RunOptions>();
  add_run_request_options(*cmd, *o,
                          "interp (the reference interpreter), a runtime name (clang, openmp, "
                          "cc) or a descriptor path");
  cmd->add_option("--debug", o->debug,
                  "Debug level 0..5 (default: $KILN_DEBUG, else 0): 1 kernels, stage times, cache; "
                  "2 graph, rules, stages; 3 schedules; 4 source; 5 isl")
      ->check(CLI::Range(0, 5));
  cmd->add_flag("--no-check", o->no_check,
                "Run the compiled code only: no reference interpreter, each output summarised");
  cmd->add_option("--input", o->inputs,
                  "An input from a NumPy file, NAME=FILE.npy (repeatable); its shape binds the "
                  "sizes it spells and the batch dimensions")
      ->delimiter(',');
  cmd->add_option("--weights", o->weights,
                  "Inputs from a safetensors file: each input the file holds under its name (or "
                  "with '.' for '_'); their shapes bind sizes as --input's do");
  cmd->add_option("--save", o->save, "Write each output to DIR/NAME.npy");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome/Perfetto trace (JSON) of lowering, the pipeline stages, "
                  "compile, load and each kernel launch to this file");
  cmd->callback([o, &exit_code] {
    if (o->debug == 0) o->debug = usage_error_of([] { return debug_level_from_env(); });
    // Checked under interp too, which compiles nothing but checks gathers under CHECK=1.
    const bool checked = config_options(config_items(o->config), nullptr).checked;
    std::optional<Trace> trace;
    if (!o->trace.empty()) trace.emplace("kiln run " + o->sel.target);
    auto t0 = std::chrono::steady_clock::now();
    // The runtime first: one with no device says so before the interpreter's work.
    std::unique_ptr<Runtime> rt;
    if (o->runtime != "interp") {
      rt = open_runtime(o->runtime, /*interp_too=*/true);
      rt->probe();
      if (trace) trace->span_since("open runtime", "runtime", t0, {{"runtime", rt->name()}});
    }
    t0 = std::chrono::steady_clock::now();
    Loaded l;
    load_selection(o->sel, l);
    if (trace) trace->span_since("load spec", "front end", t0);
    GivenInputs given = read_inputs(o->inputs);
    if (!o->weights.empty()) read_weights(o->weights, l, given);
    GivenInputs cotangents;
    if (!o->grad.empty()) cotangents = take_cotangents(given, l);
    SizeBindings sizes = given.empty() ? bind_sizes(l, o->test)
                                       : bind_from_inputs(l, given, o->test, o->sel.batch.empty());
    if (o->specialize) l.options.fixed_sizes = sizes;
    t0 = std::chrono::steady_clock::now();
    Graph g = lower_checked(l, &sizes, true);  // the interpreter holds every node
    if (!o->grad.empty()) {
      g = differentiate(g, o->grad, l);
      check_cotangents(g, cotangents, sizes);
      given.merge(cotangents);
    }
    if (trace) trace->span_since("lower", "front end", t0);
    if (o->debug >= 2) std::cout << graph_to_text(g);
    std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, o->seed);
    use_given_inputs(g, given, inputs);
    t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> want;
    bool interpreted = !o->no_check || !rt;
    if (interpreted) want = interpret(g, sizes, inputs, checked && !rt);
    double interp_ms = elapsed_ms(t0);
    if (trace && interpreted) trace->span("interpret", "reference", t0, interp_ms);
    std::string bound;
    for (const auto& [k, v] : sizes)
      bound += (bound.empty() ? "" : ",") + k + "=" + std::to_string(v);
    std::cout << g.name << " [" << bound << "] on " << (rt ? rt->name() : o->runtime)
              << (rt && o->no_check ? " (not checked)" : "") << "\n";
    for (size_t k = 0; k < inputs.size(); ++k)
      std::cout << "  in  " << g[g.inputs[k]].name << " : " << tensor_type_str(inputs[k]) << "\n";
    if (o->runtime == "interp") {
      for (size_t k = 0; k < want.size(); ++k)
        std::cout << "  out " << g.outputs[k].name << " : " << tensor_type_str(want[k]) << "  "
                  << tensor_summary(want[k]) << "\n";
      std::cout << "  time " << format_ms(interp_ms) << " (reference interpreter)\n";
      if (!o->save.empty()) save_outputs(o->save, g, want);
      if (trace) trace->write(o->trace);
      exit_code = Exit::ok;
      return;
    }
    bool ok =
        run_compiled(*o, rt.get(), l, g, inputs, want, sizes, interp_ms, trace ? &*trace : nullptr);
    if (trace) trace->write(o->trace);
    exit_code = ok ? Exit::ok : Exit::test_failed;
  });
}

}  // namespace kiln::cli
