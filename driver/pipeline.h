/** \file
 * The compilation pipeline: graph → kernel plan → buffer plan → isl schedules → source. The
 * stages are one table in pipeline.cpp; the driver (not each pass) times every stage and prints
 * its result under --debug.
 */
#pragma once

#include <chrono>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/gpu_tile.h"
#include "scheduler/schedule_kernel.h"
#include "simplifier/rule.h"

namespace kiln {

/** Options of one compilation; they travel from the command line down. */
struct CompileOptions {
  int debug =
      0;  ///< --debug level: 1 kernels and times, 2 graph and rules, 3 schedule, 4 source, 5 isl
  std::ostream* log = nullptr;                ///< where --debug output goes (nullptr: nowhere)
  ScheduleOptions schedule;                   ///< tiling, loop mappings, isl limits
  CutOptions cut;                             ///< where the plan is cut into kernels
  BuildOptions build;                         ///< how the graph becomes statements
  SimplifyOptions simplify;                   ///< FASTMATH, BLAS, SIMPLIFY
  std::vector<std::string> rule_files;        ///< --rules and [meta] rules, after the shipped
  std::map<std::string, std::string> config;  ///< --config items by knob (driver/config.h)
  bool checked = false;                       ///< CHECK=1: every buffer access bounds-checked
  /** THREADS=N: the threads a parallel runtime (openmp) runs kernels on; 0: every core. A
   *  run-time setting: it does not change the generated code and is not in the cache key. */
  int threads = 0;
  /** TUNED=1: the knobs `kiln tune` stored for this composite, runtime and sizes apply where
   *  --config does not pin them (driver/tune_db.h tuned_config). It steers which values other
   *  knobs take; those enter the cache key themselves, so it does not. */
  bool tuned = true;
};

/** A duration in milliseconds to three significant digits, no exponent above 1 µs:
 *  "0.0107 ms", "4.25 ms", "197 ms", "1504 ms". */
std::string format_ms(double ms);

/** How long one stage took, and when it began (for `kiln run --trace`). */
struct StageTime {
  std::string name;
  double milliseconds = 0;
  std::chrono::steady_clock::time_point start{};
};

/** A graph lowered to source for one backend. */
struct LoweredProgram {
  Graph graph;  ///< the simplified graph the plan is built from
  KernelPlan plan;
  /** The value planner's decision for each computed node, as text (scheduler/plan_values.h). */
  std::string values;
  std::vector<LoopNest> nests;          ///< one per kernel
  std::vector<std::string> transforms;  ///< each kernel's transform list, as text
  std::vector<std::string> symbols;     ///< the function name of each kernel
  /** A kernel compiled again at another tile shape (GpuTileShape::wgmma_variants; a fused
   *  attention kernel at 128 lanes, scheduler/softmax_tile.h softmax_launch_head): a function
   *  of its own in the same source, chosen at launch by the sizes (scheduler/tile_choice.h). */
  struct Variant {
    size_t kernel = 0;  ///< the kernel it is a variant of
    std::string label;  ///< its shape, as text: "tile shape 128x64x4", "128 lanes"
    LoopNest nest;
    std::string symbol;  ///< variant_symbol or softmax_lanes_symbol of symbols[kernel]
  };
  std::vector<Variant> variants;
  std::string source;  ///< one translation unit with every kernel and variant
  std::vector<StageTime> times;
};

/** The function name of kernel `k` of a composite named `name`. */
std::string kernel_symbol(const std::string& name, size_t k);

/** The function kernel `k` of `plan` launches: its own, or that of the kernel whose code it
 *  runs (Kernel::code_of). */
std::string code_symbol(const KernelPlan& plan, size_t k);

/** Runs every stage. Throws std::runtime_error when a stage fails. */
LoweredProgram lower_program(const Graph& g, const Backend& backend, const CompileOptions& opt);

/** The cheap stages only: simplification, kernels and buffers (what running a cached program
 *  needs). */
LoweredProgram plan_program(const Graph& g, const CompileOptions& opt);

/** The expensive stages on a planned program: isl schedules (with the loop mappings `backend`
 *  supports) and rendering by its renderer. */
void generate_code(LoweredProgram& p, const Backend& backend, const CompileOptions& opt);

/** Everything the generated source depends on: the graph, the plan, the knobs that enter the
 *  cache key (config_identity, driver/config.h), the backend and this build of Kiln. Two
 *  programs with equal identities render the same source, so the cache can be asked before
 *  scheduling. */
std::string program_identity(const LoweredProgram& p, const std::string& backend,
                             const CompileOptions& opt);

}  // namespace kiln
