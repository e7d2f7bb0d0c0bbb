// `kiln bench FILE[:COMPOSITE] --runtime R [--test ...] [--vs BASELINE] [--json]`: compiles the
// composite once (through the cache, as `run` does), makes seeded random inputs, warms up, then
// times repeated runs of the compiled kernels, alternated run by run with a baseline timed in
// the same process, and reports median, min and max with GFLOP/s and GB/s from the cost model
// (ir/cost.h). docs/performance.md "Benchmarks with kiln bench" describes the method.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "backends/backend.h"
#include "driver/compare.h"
#include "ir/cost.h"
#include "ir/sizes.h"
#include "tools/kiln/bench_subjects.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"
#include "tools/kiln/torch_baseline.h"
#include "tools/kiln/trace.h"

namespace kiln::cli {

namespace {

struct BenchOptions : RunRequest {
  BenchOptions() { runtime = "clang"; }
  std::string vs;
  int repeat = 0;  ///< 0: at least kMinRepeats, until the loop took kTargetMs
  int warmup = 3;
  bool json = false;
  std::string trace;  ///< --trace FILE.json
};

constexpr int kMinRepeats = 10;
constexpr int kMaxRepeats = 100000;
constexpr double kTargetMs = 1000;

/** An unknown --vs is a UsageError that lists the known baselines (checked before compiling). */
void check_baseline_name(const std::string& vs) {
  if (vs.empty() || vs == "copy" || vs == "openblas" || vs == "torch" || vs == "torch.compile" ||
      (vs.rfind("runtime:", 0) == 0 && vs.size() > 8) ||
      (vs.rfind("composite:", 0) == 0 && vs.size() > 10))
    return;
  throw UsageError("unknown baseline '" + vs +
                   "' for --vs; known baselines: openblas, torch, torch.compile, copy, "
                   "runtime:NAME (NAME a runtime name or descriptor path, e.g. runtime:cc), "
                   "composite:[FILE:]NAME (another composite with the same inputs)");
}

/** The thread count of the runtime `opt` compiles for: one, unless its backend has threads
 *  (THREADS; 0: every core). A peer library runs on as many. */
int runtime_threads(const Runtime& rt, CompileOptions opt) {
  backend_for(rt.backend()).configure(opt.schedule);
  if (!opt.schedule.backend_threads || !opt.schedule.parallel) return 1;
  return opt.threads > 0 ? opt.threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

/** An attribute value as JSON. */
std::string attr_json(const AttrValue& v) {
  switch (v.kind) {
    case AttrValue::Kind::integer:
      return std::to_string(v.integer);
    case AttrValue::Kind::number: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v.number);
      return std::isfinite(v.number) ? buf : "null";
    }
    case AttrValue::Kind::boolean:
      return v.boolean ? "true" : "false";
    case AttrValue::Kind::string:
      return json_string(v.string);
    case AttrValue::Kind::list: {
      std::string s = "[";
      for (size_t i = 0; i < v.list.size(); ++i)
        s += (i ? ", " : "") + attr_json(v.list[i]);
      return s + "]";
    }
  }
  return "null";
}

/** --vs torch and --vs torch.compile: the composite's `baseline.torch` in a PyTorch helper, on
 *  the runtime's device and thread count. */
std::unique_ptr<Subject> make_torch(const BenchOptions& o, const Loaded& l, const Graph& g,
                                    const std::vector<Tensor>& inputs, const SizeBindings& sizes) {
  const Composite& c = *l.comp;
  auto it = c.baselines.find("torch");
  if (it == c.baselines.end())
    throw UsageError("--vs " + o.vs + ": composite '" + c.name +
                     "' has no PyTorch baseline; give it one, e.g. baseline = { torch = "
                     "\"F.softmax(x, -1)\" } (docs/spec-language.md, \"Baselines\")");
  TorchRequest r;
  r.expr = it->second.code;
  const SourceLoc& at = it->second.loc;
  r.where = at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.col);
  r.mode = o.vs == "torch.compile" ? "compile" : "eager";
  std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
  r.device = rt->backend() == "cuda" ? "cuda" : "cpu";
  r.threads = r.device == "cpu" ? runtime_threads(*rt, compile_options(o.config, 0, *rt, l)) : 0;
  // Idle OpenMP threads wait passively on both sides: the helper's (PyTorch's pool) and this
  // process's (libomp reads it at the first launch, which comes after this) would otherwise
  // spin between their own runs on the cores the other's run needs (two threads on two cores:
  // Kiln's median doubled, docs/decisions.md). A value set by the user is kept.
  if (r.device == "cpu" && r.threads > 1) setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  auto tensor = [&](const std::string& name, NodeId id) {
    const Node& n = g[id];
    return TorchTensor{name, n.dtype,
                       eval_checked_shape("'" + name + "'", n.dtype, n.shape, sizes)};
  };
  for (NodeId id : g.inputs)
    r.inputs.push_back(tensor(g[id].name, id));
  for (const GraphOutput& out : g.outputs)
    r.outputs.push_back(tensor(out.name, out.node));
  r.attrs_json = "{";
  for (const AttrDecl& a : c.attrs) {
    auto set = l.options.attrs.find(a.name);
    r.attrs_json += (r.attrs_json.size() > 1 ? ", " : "") + json_string(a.name) + ": " +
                    attr_json(set != l.options.attrs.end() ? set->second : a.value);
  }
  r.attrs_json += "}";
  r.sizes_json = "{";
  for (const auto& [name, v] : sizes)
    r.sizes_json +=
        (r.sizes_json.size() > 1 ? ", " : "") + json_string(name) + ": " + std::to_string(v);
  r.sizes_json += "}";
  return make_torch_baseline(r, inputs);
}

/** --vs composite:[FILE:]NAME: another composite (of the same file when FILE is left out) with
 *  the same dtype and batch choices and the --attr choices it declares, which must take the
 *  same inputs and give outputs of the same types, compiled for the same runtime. */
std::unique_ptr<Subject> make_composite_baseline(const BenchOptions& o, const Loaded& l,
                                                 const Graph& g, const std::vector<Tensor>& inputs,
                                                 const SizeBindings& sizes) {
  const std::string name = o.vs.substr(10);
  Selection sel = o.sel;
  sel.target =
      name.find(':') == std::string::npos ? split_target(o.sel.target).first + ":" + name : name;
  // --attr choices that it does not declare are the composite's own (attention's causal=true
  // against a causal_attention that has no such attribute).
  std::vector<std::string> attrs = sel.attrs;
  sel.attrs.clear();
  Loaded other;
  load_selection(sel, other);
  for (const std::string& a : attrs)
    for (const AttrDecl& d : other.comp->attrs)
      if (a.substr(0, a.find('=')) == d.name) sel.attrs.push_back(a);
  if (!sel.attrs.empty()) load_selection(sel, other = Loaded{});
  Graph h = lower_checked(other, &sizes, false);
  auto types = [&](const Graph& x, const std::vector<NodeId>& ids) {
    std::string out;
    for (NodeId id : ids) {
      out += (out.empty() ? "" : ", ") + std::string(dtype_name(x[id].dtype)) + "[";
      std::vector<int64_t> dims = eval_shape(x[id].shape, sizes);
      for (size_t d = 0; d < dims.size(); ++d)
        out += (d ? ", " : "") + std::to_string(dims[d]);
      out += "]";
    }
    return out;
  };
  std::vector<NodeId> g_out, h_out;
  for (const GraphOutput& out : g.outputs)
    g_out.push_back(out.node);
  for (const GraphOutput& out : h.outputs)
    h_out.push_back(out.node);
  if (types(g, g.inputs) != types(h, h.inputs) || types(g, g_out) != types(h, h_out))
    throw UsageError("--vs " + o.vs + ": '" + other.comp->name + "' takes (" + types(h, h.inputs) +
                     ") and gives (" + types(h, h_out) + "), but '" + l.comp->name + "' takes (" +
                     types(g, g.inputs) + ") and gives (" + types(g, g_out) + ")");
  std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
  CompileOptions opt = compile_options(o.config, 0, *rt, other);
  return std::make_unique<CompiledSubject>(h, std::move(rt), opt, inputs, sizes);
}

/** The baseline --vs names (check_baseline_name passed), or nullptr for none. */
std::unique_ptr<Subject> make_baseline(const BenchOptions& o, const Loaded& l, const Graph& g,
                                       const std::vector<Tensor>& inputs, const SizeBindings& sizes,
                                       const GraphCost& cost) {
  if (o.vs.empty()) return nullptr;
  if (o.vs == "copy") {  // on as many threads as the runtime, or on its device
    std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
    if (backend_for(rt->backend()).memory() == MemoryKind::device && rt->can_copy_device())
      return make_device_copy_baseline(cost.bytes, std::move(rt));
    return make_copy_baseline(cost.bytes,
                              runtime_threads(*rt, compile_options(o.config, 0, *rt, l)));
  }
  if (o.vs == "openblas") {
    // Kiln's own rule (gemm-to-blas) decides what is a GEMM: the graph simplified as under
    // --config BLAS=openblas must be one gemm call on the inputs.
    std::vector<std::string> config = o.config;
    config.push_back("BLAS=openblas");
    std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
    CompileOptions opt = compile_options(config, 0, *rt, l);
    LoweredProgram p = plan_program(g, opt);
    // OpenBLAS runs on as many threads as Kiln's runtime; OPENBLAS_NUM_THREADS, when set,
    // decides instead.
    int threads = std::getenv("OPENBLAS_NUM_THREADS") ? 0 : runtime_threads(*rt, opt);
    std::string why_not;
    std::optional<GemmShape> shape = gemm_shape(p.graph, sizes, why_not);
    if (!shape)
      throw UsageError("--vs openblas needs a composite that is a single matrix product; '" +
                       l.comp->name + "' is not: " + why_not);
    return make_gemm_baseline(*shape, inputs, threads);
  }
  if (o.vs == "torch" || o.vs == "torch.compile") return make_torch(o, l, g, inputs, sizes);
  if (o.vs.rfind("runtime:", 0) == 0) {
    std::string name = o.vs.substr(8);
    if (name == "interp")
      throw UsageError("--vs runtime:interp: the interpreter is not a compiled runtime");
    std::unique_ptr<Runtime> rt = open_runtime(name);
    CompileOptions opt = tuned_compile_options(o.config, 0, *rt, l, g, sizes);
    return std::make_unique<CompiledSubject>(g, std::move(rt), opt, inputs, sizes);
  }
  if (o.vs.rfind("composite:", 0) == 0) return make_composite_baseline(o, l, g, inputs, sizes);
  throw std::logic_error("check_baseline_name let '" + o.vs + "' through");
}

/** Compares Kiln's outputs with the baseline's; prints the first mismatch and returns false. */
bool outputs_match(const Graph& g, const Composite& c, const std::vector<Tensor>& got,
                   const std::vector<Tensor>& want, const std::string& baseline) {
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    Tolerance tol = tolerance_for(want[k].dtype, c.test.rtol, c.test.atol, want[k]);
    Comparison cmp = compare(got[k], want[k], tol);
    if (!cmp.ok) {
      std::cerr << "kiln: error: output '" << g.outputs[k].name << "' differs from " << baseline
                << "'s at element " << cmp.first_bad << ": kiln " << cmp.got << ", " << baseline
                << " " << cmp.want << " (rtol " << tol.rtol << ", atol " << tol.atol
                << "); no timing is reported\n";
      return false;
    }
  }
  return true;
}

/** `v` with `digits` significant digits. */
std::string num(double v, int digits = 6) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

/** What one bench measured. */
struct Report {
  std::string composite, runtime, baseline;
  SizeBindings sizes;
  GraphCost cost;
  int warmup = 0, repeats = 0;
  double build_ms = 0;
  bool cache_hit = false;
  Stats kiln, base;
  std::optional<Stats> device;  ///< the runtime's device time, where it measures one
  /** The baseline's device time, where both it and Kiln's are measured (a GPU's events). */
  std::optional<Stats> base_device;
  bool has_base = false, compared = false;
  /** "kernel K at RxLxS" for each kernel compiled at several tile shapes (the launch's). */
  std::vector<std::string> tile_shapes;
};

/** A JSON number; null for an infinity or NaN (a rate over a zero time). */
std::string json_num(double v) {
  return std::isfinite(v) ? num(v) : "null";
}

/** One JSON object on one line (toml++'s JSON writer breaks lines and has no null). */
void print_json(std::ostream& out, const Report& r) {
  double s = r.kiln.median / 1000;
  out << "{\"composite\": " << json_string(r.composite)
      << ", \"runtime\": " << json_string(r.runtime) << ", \"sizes\": {";
  bool first = true;
  for (const auto& [k, v] : r.sizes) {
    out << (first ? "" : ", ") << json_string(k) << ": " << v;
    first = false;
  }
  out << "}, \"flops\": " << r.cost.flops << ", \"bytes\": " << r.cost.bytes
      << ", \"warmup\": " << r.warmup << ", \"repeats\": " << r.repeats
      << ", \"compile_ms\": " << json_num(r.build_ms)
      << ", \"cache_hit\": " << (r.cache_hit ? "true" : "false")
      << ", \"median_ms\": " << json_num(r.kiln.median) << ", \"min_ms\": " << json_num(r.kiln.min)
      << ", \"max_ms\": " << json_num(r.kiln.max)
      << ", \"gflops\": " << json_num(r.cost.flops / s / 1e9)
      << ", \"gbps\": " << json_num(r.cost.bytes / s / 1e9)
      << ", \"device_median_ms\": " << (r.device ? json_num(r.device->median) : "null")
      << ", \"device_gbps\": "
      << (r.device ? json_num(r.cost.bytes / (r.device->median / 1000) / 1e9) : "null");
  if (r.has_base)
    out << ", \"baseline\": " << json_string(r.baseline)
        << ", \"baseline_median_ms\": " << json_num(r.base.median)
        << ", \"baseline_min_ms\": " << json_num(r.base.min)
        << ", \"baseline_max_ms\": " << json_num(r.base.max)
        << ", \"ratio\": " << json_num(r.base.median / r.kiln.median)
        << ", \"baseline_device_median_ms\": "
        << (r.base_device ? json_num(r.base_device->median) : "null") << ", \"device_ratio\": "
        << (r.base_device ? json_num(r.base_device->median / r.device->median) : "null")
        << ", \"outputs_match\": " << (r.compared ? "true" : "null");
  else
    out << ", \"baseline\": null, \"baseline_median_ms\": null, \"ratio\": null";
  out << "}\n";
}

void print_text(std::ostream& out, const Report& r) {
  double s = r.kiln.median / 1000;
  std::string bound;
  for (const auto& [k, v] : r.sizes)
    bound += (bound.empty() ? "" : ",") + k + "=" + std::to_string(v);
  out << r.composite << " [" << bound << "] on " << r.runtime << ": compile " << num(r.build_ms, 4)
      << " ms (cache " << (r.cache_hit ? "hit" : "miss") << ")\n"
      << "  work     " << num(r.cost.flops / 1e6, 4) << " MFLOP, " << num(r.cost.bytes / 1e6, 4)
      << " MB read and written\n"
      << "  kiln     median " << num(r.kiln.median, 4) << " ms, min " << num(r.kiln.min, 4)
      << " ms, max " << num(r.kiln.max, 4) << " ms  " << num(r.cost.flops / s / 1e9, 4)
      << " GFLOP/s, " << num(r.cost.bytes / s / 1e9, 4) << " GB/s\n";
  if (r.device)
    out << "  device   median " << num(r.device->median, 4) << " ms, min " << num(r.device->min, 4)
        << " ms (the runtime's events around the kernels)  "
        << num(r.cost.bytes / (r.device->median / 1000) / 1e9, 4) << " GB/s\n";
  if (r.has_base)
    out << "  " << r.baseline << std::string(r.baseline.size() < 9 ? 9 - r.baseline.size() : 1, ' ')
        << "median " << num(r.base.median, 4) << " ms, min " << num(r.base.min, 4) << " ms, max "
        << num(r.base.max, 4) << " ms\n"
        << "  ratio    " << num(r.base.median / r.kiln.median, 4) << " (" << r.baseline
        << " time / kiln time; > 1: kiln is faster)"
        << (r.compared ? ", outputs match" : ", outputs not compared") << "\n";
  if (r.base_device)
    out << "  device   ratio " << num(r.base_device->median / r.device->median, 4) << " ("
        << r.baseline << " device median " << num(r.base_device->median, 4)
        << " ms / kiln's; the GPU's events, without launch and wait)\n";
  for (const std::string& t : r.tile_shapes)
    out << "  tiles    " << t << " (of the shapes compiled, the one these sizes make fastest)\n";
  out << "  " << r.repeats << " runs after " << r.warmup << " warm-ups"
      << (r.has_base ? ", alternated with the baseline" : "") << "\n";
}

int bench(const BenchOptions& o) {
  if (o.runtime == "interp")
    throw UsageError("kiln bench times compiled code; --runtime interp is the interpreter");
  check_baseline_name(o.vs);
  std::optional<Trace> trace;
  if (!o.trace.empty()) trace.emplace("kiln bench " + o.sel.target);
  Loaded l;
  load_selection(o.sel, l);
  SizeBindings sizes = bind_sizes(l, o.test);
  if (o.specialize) l.options.fixed_sizes = sizes;
  Graph g = lower_checked(l, &sizes, false);
  if (!o.grad.empty()) {
    if (!o.vs.empty() && o.vs != "copy" && !o.vs.starts_with("runtime:"))
      throw UsageError("--grad times the backward composite, which --vs " + o.vs +
                       " does not compute; compare it with --vs copy or --vs runtime:NAME");
    g = differentiate(g, o.grad, l);
  }
  std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, o.seed);

  std::unique_ptr<Runtime> rt = open_runtime(o.runtime);
  rt->probe();
  CompileOptions opt = tuned_compile_options(o.config, 0, *rt, l, g, sizes);
  CompiledSubject kiln(g, std::move(rt), opt, inputs, sizes);
  std::vector<LaunchSpan> launches;
  if (trace) {
    trace->build(kiln.executable(), kiln.build_start(), kiln.build_ms());
    kiln.record_launches(&launches);
  }
  // Each run of Kiln's in the trace, with its launches; the baseline's runs beside them.
  auto traced = [&](const std::string& name, std::chrono::steady_clock::time_point t0, double ms) {
    if (!trace) return;
    trace->run(kiln.executable(), name, t0, ms, launches);
    launches.clear();
  };
  for (const std::string& w : kiln.executable().build_info().compile.warnings)
    std::cerr << "kiln: warning: " << w << "\n";
  Report r;
  r.composite = g.name;
  r.runtime = o.runtime;
  r.baseline = o.vs;
  r.sizes = sizes;
  r.cost = graph_cost(kiln.executable().program().graph, sizes);
  r.warmup = o.warmup;
  r.build_ms = kiln.build_ms();
  r.cache_hit = kiln.executable().build_info().compile.cache_hit;
  for (size_t k = 0; k < kiln.executable().program().plan.kernels.size(); ++k) {
    std::string shape = kiln.executable().tile_shape_for(k, sizes);
    if (!shape.empty()) r.tile_shapes.push_back("kernel " + std::to_string(k) + " at " + shape);
  }
  std::unique_ptr<Subject> base = make_baseline(o, l, g, inputs, sizes, r.cost);
  r.has_base = base != nullptr;

  std::cout.flush();  // a fault inside a kernel ends the process (driver/fault_guard.h)
  for (int k = 0; k < o.warmup; ++k) {  // the first also gives the outputs compared below
    std::chrono::steady_clock::time_point t0;
    double ms = time_ms(kiln, &t0);
    traced("warm-up " + std::to_string(k), t0, ms);
    if (base) base->run();
  }
  if (base) {
    std::optional<std::vector<Tensor>> want = base->outputs();
    if (want) {
      if (!outputs_match(g, *l.comp, *kiln.outputs(), *want, o.vs)) return Exit::test_failed;
      r.compared = true;
    }
  }
  std::vector<double> kiln_ms, base_ms, device_ms, base_device_ms;
  auto start = std::chrono::steady_clock::now();
  auto more = [&] {
    size_t n = kiln_ms.size();
    if (o.repeat > 0) return n < static_cast<size_t>(o.repeat);
    std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - start;
    return n < kMinRepeats || (spent.count() < kTargetMs && n < kMaxRepeats);
  };
  while (more()) {  // Kiln, baseline, Kiln, ...: drift hits both alike
    std::chrono::steady_clock::time_point t0;
    kiln_ms.push_back(time_ms(kiln, &t0));
    traced("run " + std::to_string(kiln_ms.size() - 1), t0, kiln_ms.back());
    if (std::optional<double> d = kiln.device_ms()) device_ms.push_back(*d);
    if (base) {
      double ms = time_ms(*base, &t0);
      if (trace) trace->span(o.vs, "baseline", t0, ms);
      base_ms.push_back(base->own_ms().value_or(ms));
      if (std::optional<double> d = base->device_ms()) base_device_ms.push_back(*d);
    }
  }
  r.repeats = static_cast<int>(kiln_ms.size());
  r.kiln = stats_of(kiln_ms);
  if (device_ms.size() == kiln_ms.size()) r.device = stats_of(device_ms);
  if (base) r.base = stats_of(base_ms);
  if (r.device && base && base_device_ms.size() == base_ms.size())
    r.base_device = stats_of(base_device_ms);
  if (o.json)
    print_json(std::cout, r);
  else
    print_text(std::cout, r);
  if (trace) trace->write(o.trace);
  return Exit::ok;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "bench", "Time a compiled composite on seeded random inputs, against a baseline");
  auto o = std::make_shared<BenchOptions>();
  add_run_request_options(*cmd, *o, "A runtime name (clang, openmp, cc) or a descriptor path");
  cmd->add_option(
      "--vs", o->vs,
      "Baseline timed alternately with Kiln's runs: openblas (cblas gemm, for a "
      "single matrix product, on the runtime's thread count unless "
      "OPENBLAS_NUM_THREADS is set), torch or torch.compile (the composite's "
      "baseline.torch in PyTorch eager or compiled, run by KILN_PYTHON or python3, on "
      "the runtime's thread count), copy (a memcpy of the same bytes on as many threads), "
      "runtime:NAME (the "
      "composite on another runtime), composite:[FILE:]NAME (another composite with the same "
      "inputs and output types, on the same runtime)");
  cmd->add_option("--repeat", o->repeat, "Timed runs (default: at least 10, until 1 s has passed)")
      ->check(CLI::Range(1, kMaxRepeats));
  cmd->add_option("--warmup", o->warmup, "Untimed runs first (at least 1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", o->json, "Print one JSON object on one line");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome/Perfetto trace (JSON) of the pipeline stages, compile, load, "
                  "every run and each kernel launch in it to this file");
  cmd->callback([o, &exit_code] { exit_code = bench(*o); });
}

}  // namespace kiln::cli
