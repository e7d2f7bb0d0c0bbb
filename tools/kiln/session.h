/** \file
 * What the `kiln` subcommands share: naming a composite as FILE[:COMPOSITE], loading it,
 * choosing dtypes, batch rank and attributes from the command line, binding sizes, and making
 * seeded random inputs. Exit codes live here too (README "Exit codes").
 */
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "driver/executable.h"
#include "driver/instantiate.h"
#include "dsl/lower.h"
#include "ir/interpreter.h"

namespace kiln::cli {

/** Process exit codes. */
enum Exit : int { ok = 0, spec_error = 1, usage_error = 2, test_failed = 3, run_error = 4 };

/** A command-line mistake: printed as one line, exit code 2. */
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** Options that pick and instantiate a composite. */
struct Selection {
  std::string target;               ///< FILE[:COMPOSITE]
  std::vector<std::string> dtypes;  ///< T=f32
  std::vector<std::string> attrs;   ///< name=value
  std::string batch;                ///< "3,5"; empty: the composite's test batch
  std::vector<std::string> rules;   ///< --rules FILE: rule files after the shipped ones
};

/** A loaded composite, ready to lower. */
struct Loaded {
  Library lib;
  const SpecFile* file = nullptr;
  const Composite* comp = nullptr;
  CompileSettings settings;    ///< --dtype, --attr and the batch rank, as the public API takes them
  LowerOptions options;        ///< settings as lower_options reads them
  std::vector<int64_t> batch;  ///< batch dimensions bound to batch0, batch1, ...
  std::vector<std::string> rules;  ///< the selection's --rules files
};

/** `f()`, with a std::invalid_argument it throws reported as a UsageError. */
template <class F>
auto usage_error_of(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

/** FILE[:COMPOSITE] split into the file and the composite ("" when not named); FILE may be
 *  `std:NAME`, a file of the standard library (dsl/library.h). */
std::pair<std::string, std::string> split_target(const std::string& target);

/** Loads the target and applies dtype, attribute and batch choices. Throws SpecError or
 *  UsageError. */
void load_selection(const Selection& sel, Loaded& out);

/** Parses "M=100,N=7" into bindings. */
SizeBindings parse_sizes(const std::string& text);

/** The sizes of a run: --test's bindings (default: the composite's first test case) plus the
 *  batch dimensions as batch0, batch1, ... */
SizeBindings bind_sizes(const Loaded& l, const std::string& test);

/** What `show` and `compile` need to generate code: the composite, the sizes to specialize
 *  on, the runtime and its --config knobs. */
struct CodeRequest {
  Selection sel;
  std::string test;                 ///< --test; used with --specialize only
  bool specialize = false;          ///< the bound sizes become constants
  std::string runtime = "clang";    ///< whose backend renders the code
  std::vector<std::string> config;  ///< KEY=VALUE
};

/** Registers the options of a CodeRequest (target, --dtype, --attr, --batch, --test,
 *  --specialize, --runtime, --config) on a subcommand. */
void add_code_options(CLI::App& cmd, CodeRequest& r);

/** Lowers and verifies the loaded composite with l.options. With `sizes`, also checks that they
 *  bind every size variable and that every tensor fits the limits of ir/sizes.h (every node held
 *  in memory when `interpreted`); a failure is a UsageError naming the tensor and the sizes. */
Graph lower_checked(Loaded& l, const SizeBindings* sizes, bool interpreted);

/** The backward graph of `forward`, the loaded composite's graph, with respect to the inputs
 *  `wrt` (autodiff/gradient.h): a bad name is a UsageError, a gradient that cannot be taken a
 *  SpecError at the composite's body naming the node where it stops. */
Graph differentiate(const Graph& forward, const std::vector<std::string>& wrt, const Loaded& l);

/** The same under the save policy `save` (autodiff/gradient.h GradSave). */
Backward differentiate(const Graph& forward, const std::vector<std::string>& wrt, const Loaded& l,
                       GradSave save);

/** The names of the float inputs of `g`, in order: what `kiln test --grad` differentiates. */
std::vector<std::string> float_inputs(const Graph& g);

/** Lowers and verifies the loaded composite, specialized on bind_sizes(l, test) when asked. */
Graph lower_loaded(Loaded& l, const std::string& test, bool specialize);

/** " kernels 0.1 ms, buffers 0.0 ms, ...": the time of each pipeline stage. */
std::string format_stage_times(const std::vector<StageTime>& times);

/** Seeded random inputs for every graph input; ranges from the composite's test table. */
std::vector<Tensor> random_inputs(const Graph& g, const Composite& c, const SizeBindings& sizes,
                                  uint64_t seed);

/** Opens a runtime by name or descriptor path; a missing or bad one is a UsageError, which
 *  lists the known runtimes (and `interp` where `interp_too`, as `run` takes it). */
std::unique_ptr<Runtime> open_runtime(const std::string& name, bool interp_too = false);

/** The --config KEY=VALUE items as a map, each checked against the knobs of driver/config.h
 *  (a UsageError for an unknown key or a bad value). */
std::map<std::string, std::string> config_items(const std::vector<std::string>& config);

/** The runtime's --config defaults overridden by the command line's KEY=VALUE items, and the
 *  rule files: the spec's [meta] rules, then --rules. */
CompileOptions compile_options(const std::vector<std::string>& config, int debug, const Runtime& rt,
                               const Loaded& l);

/** compile_options, then the tuning database's knobs for `g` at `sizes` (driver/tune_db.h)
 *  where the --config items do not pin them and TUNED=0 is not given: what `run` and `bench`
 *  compile with. */
CompileOptions tuned_compile_options(const std::vector<std::string>& config, int debug,
                                     const Runtime& rt, const Loaded& l, const Graph& g,
                                     const SizeBindings& sizes);

/** Registers --rules on a subcommand. */
void add_rules_option(CLI::App& cmd, Selection& sel);

/** What `run` and `bench` share: the composite instance, its runtime and knobs, the sizes and
 *  the inputs' seed. */
struct RunRequest {
  Selection sel;
  std::string runtime, test;
  std::vector<std::string> config;
  uint64_t seed = 0;
  bool specialize = false;
  /** --grad x,w: the backward composite with respect to these inputs instead (autodiff/). */
  std::vector<std::string> grad;
};

/** Registers the options of a RunRequest (target, --runtime with `runtime_help`, --config,
 *  --test, --seed, --dtype, --attr, --batch, --rules, --specialize, --grad) on a subcommand. */
void add_run_request_options(CLI::App& cmd, RunRequest& r, const std::string& runtime_help);

/** --debug 1: each kernel, the stage times, compile time, cache hit or miss, load time. */
void print_build(std::ostream& out, const Executable& exe, double build_ms);

}  // namespace kiln::cli
