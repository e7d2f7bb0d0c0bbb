#include "driver/pipeline.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <ostream>
#include <sstream>

#include "driver/config.h"
#include "kiln_build_id.h"
#include "scheduler/build_statements.h"
#include "scheduler/coalesce_dims.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/demanded_domains.h"
#include "scheduler/flatten_statements.h"
#include "scheduler/gpu_tile.h"
#include "scheduler/online_softmax.h"
#include "scheduler/plan_buffers.h"
#include "scheduler/register_tile.h"
#include "scheduler/schedule_cache.h"
#include "scheduler/share_kernels.h"
#include "scheduler/softmax_tile.h"
#include "scheduler/split_column_sums.h"
#include "scheduler/split_padding.h"
#include "scheduler/split_reduce_runs.h"
#include "scheduler/split_reduces.h"
#include "scheduler/store_shared.h"
#include "scheduler/tile_bounded.h"
#include "scheduler/window_buffers.h"
#include "simplifier/engine.h"

namespace kiln {

namespace {

/** What the stages pass along; out.graph starts as the lowered graph. */
struct State {
  const Backend* backend;  ///< phase 1 only
  const CompileOptions& opt;
  LoweredProgram out;
  int vector_bytes = 32;  ///< the register tiles' vectors, as the schedule stage chose them
};

/** The values' plan and the kernel IR built from it (online: weights of a softmax-weighted
 *  sum stay inline for an online softmax). */
void plan_kernels(State& s, bool online) {
  ValueOptions values;
  values.online_softmax = online;
  split_reduces(s.out.graph);
  if (s.opt.build.split_reduce_runs) split_reduce_runs(s.out.graph);
  if (s.opt.build.store_padding) {
    split_padding(s.out.graph);
    values.masked_view_cost = kMaskedViewCost;
  }
  ValuePlan plan = plan_values(s.out.graph, values);
  s.out.values = value_plan_to_text(s.out.graph, plan);
  s.out.plan = build_statements(s.out.graph, plan, s.opt.build);
}

/** Bounded contractions made rectangular where block tiles want them, then the kernels cut. */
std::string cut(State& s) {
  int demanded = s.opt.cut.restrict_demanded ? restrict_demanded_domains(s.out.plan) : 0;
  int rectangular = s.opt.cut.tile_bounded_contractions
                        ? tile_bounded_contractions(s.out.plan, s.opt.cut.tile_bounded_for_registers
                                                                    ? BoundedTiles::cpu_registers
                                                                    : BoundedTiles::gpu_blocks)
                        : 0;
  // Column sums apart from the rows (scheduler/split_column_sums.h).
  int columns = split_column_sums(s.out.plan);
  CutCount n = cut_kernels(s.out.plan, s.opt.cut);
  return "// " + std::to_string(demanded) + " value(s) computed where read only, " +
         std::to_string(rectangular) + " bounded contraction(s) made rectangular for tiles, " +
         std::to_string(columns) + " column reduction(s) given a kernel of their own, " +
         std::to_string(n.kernels) + " kernel(s), " + std::to_string(n.materialized) +
         " value(s) stored across a cut";
}

/** Schedules every kernel with a warpgroup tile again at each other shape of
 *  GpuTileShape::wgmma_variants, keeping those whose nest tiles at that shape, and every fused
 *  attention kernel whose head is known only at run time again as each of
 *  softmax_lane_variants (softmax_launch_head) (LoweredProgram::variants); returns what --debug
 *  prints. */
std::string schedule_variants(State& s, const ScheduleOptions& options) {
  std::string text;
  auto keep = [&](size_t k, ScheduledKernel sk, std::string label, std::string symbol) {
    text += "\n// " + s.out.plan.kernels[k].name + " at " + label + " (" + symbol +
            ", chosen at launch by the sizes)\n" + loop_nest_to_text(sk.nest);
    s.out.variants.push_back({k, std::move(label), std::move(sk.nest), std::move(symbol)});
  };
  const GpuTileShape& shape = options.gpu_tile;
  const bool wgmma = shape.wgmma && shape.wgmma_rows > 0 && !shape.wgmma_variants.empty();
  for (size_t k = 0; k < s.out.nests.size(); ++k) {
    const Kernel& kernel = s.out.plan.kernels[k];
    if (kernel.code_of >= 0) continue;
    if (options.attention_lanes == 0 && options.attention_variants &&
        softmax_launch_head(s.out.plan, kernel)) {
      const LoopNode* own = find_softmax_tile(s.out.nests[k]);
      const std::vector<SoftmaxLaneVariant>& variants = softmax_lane_variants();
      for (size_t i = 0; own && i < variants.size(); ++i) {
        const SoftmaxLaneVariant& v = variants[i];
        // At the kernel's own lanes a variant differs only by the heads it is launched at.
        if (v.lanes == own->tile_lanes && !softmax_head_is_lanes(s.out.plan, kernel)) continue;
        ScheduleOptions other = options;
        other.attention_variant = static_cast<int>(i);
        ScheduledKernel sk = ScheduleCache(other).schedule(s.out.plan, kernel);
        const LoopNode* tile = find_softmax_tile(sk.nest);
        if (!tile || tile->tile_lanes != v.lanes) continue;
        keep(k, std::move(sk),
             std::to_string(v.lanes) + " lanes for lanes " + std::to_string(v.min_lanes) + "-" +
                 std::to_string(v.max_lanes),
             softmax_lanes_symbol(s.out.symbols[k], v.lanes));
      }
    }
    if (!wgmma || !warpgroup_tile(s.out.nests[k])) continue;
    for (const WgmmaShape& v : shape.wgmma_variants) {
      ScheduleOptions other = options;
      other.gpu_tile.wgmma_rows = v.rows;
      other.gpu_tile.wgmma_lanes = v.lanes;
      other.gpu_tile.wgmma_stages = v.stages;
      other.gpu_tile.wgmma_variants.clear();
      ScheduledKernel sk = ScheduleCache(other).schedule(s.out.plan, kernel);
      const LoopNode* tile = warpgroup_tile(sk.nest);
      if (!tile || tile->tile_rows != v.rows || tile->tile_lanes != v.lanes) continue;
      keep(k, std::move(sk), "tile shape " + wgmma_text(v), variant_symbol(s.out.symbols[k], v));
    }
  }
  return text;
}

/** One stage: its name, the --debug level that prints its result, and the work. Stages of
 *  phase 0 plan the program, those of phase 1 generate its code. */
struct Stage {
  const char* name;
  int phase;
  int print_level;
  std::function<std::string(State&)> run;  ///< returns the text --debug prints
};

const std::vector<Stage>& stages() {
  static const std::vector<Stage> table = {
      {"simplified", 0, 2,
       [](State& s) {
         if (!s.opt.simplify.enabled) return graph_to_text(s.out.graph);
         SimplifyResult r = simplify(s.out.graph, rules_with(s.opt.rule_files), s.opt.simplify);
         std::string text;
         for (const std::string& line : r.trace)
           text += "// rule " + line + "\n";
         text += stats_to_text(s.out.graph, r) + graph_to_text(r.graph);
         s.out.graph = std::move(r.graph);
         return text;
       }},
      {"kernels", 0, 2,
       [](State& s) {
         plan_kernels(s, s.opt.cut.fuse_softmax_contractions);
         return s.out.values + plan_to_text(s.out.plan);
       }},
      {"cut", 0, 2,
       [](State& s) {
         std::string text = cut(s);
         // Softmax weights left inline for an online softmax that did not form would be
         // recomputed per output lane (scheduler/online_softmax.h): plan again, weights stored.
         bool recomputed = false;
         if (s.opt.cut.fuse_softmax_contractions)
           for (const Kernel& k : s.out.plan.kernels)
             recomputed = recomputed || recomputes_softmax_weights(s.out.plan, k);
         if (!recomputed) return text;
         plan_kernels(s, false);
         return "// no online softmax formed: the values planned again without it\n" + cut(s);
       }},
      {"store", 0, 2,
       [](State& s) {
         int n = s.opt.cut.store_shared ? store_shared_values(s.out.plan) : 0;
         return "// " + std::to_string(n) + " value(s) stored once for a reduction and an output";
       }},
      {"windows", 0, 2,
       [](State& s) {
         // Before coalesce and flatten, which may read a buffer at a leading 0 and a linear
         // index past the next dimension's extent: here every index lies inside its dimension.
         int windows = s.opt.cut.buffer_windows ? window_buffers(s.out.plan) : 0;
         return "// " + std::to_string(windows) + " window(s) of stacked buffers";
       }},
      {"coalesce", 0, 2,
       [](State& s) {
         CoalesceCount n = coalesce_dims(s.out.plan);
         return "// " + std::to_string(n.dropped) + " size-1 dimension(s) dropped, " +
                std::to_string(n.merged) + " dimension(s) merged into a neighbour";
       }},
      {"flatten", 0, 2,
       [](State& s) {
         int n = flatten_statements(s.out.plan);
         return "// " + std::to_string(n) + " statement(s) flattened to one loop";
       }},
      {"buffers", 0, 2,
       [](State& s) {
         plan_buffers(s.out.plan);
         return plan_to_text(s.out.plan);
       }},
      {"share", 0, 2,
       [](State& s) {
         int shared = s.opt.cut.share_kernels ? share_kernels(s.out.plan) : 0;
         return "// " + std::to_string(shared) + " kernel(s) running an earlier kernel's code";
       }},
      {"schedule", 1, 3,
       [](State& s) {
         std::string text;
         ScheduleOptions options = s.opt.schedule;
         if (options.micro_auto && options.micro.rows > 0) {
           options.micro = automatic_tile_shape(s.out.plan, options.full_width_bytes);
           options.micro.block_bytes = options.pack_block_bytes;
         }
         options.micro.amx_bf16 = options.amx_bf16;
         options.micro.pack_rows = options.pack_rows;
         if (!options.prefetch_rows) options.micro.prefetch_k = 0;
         options.micro.amx_int8 = options.amx_int8;
         options.micro.dot_bytes = options.dot_bytes;
         options.micro.bf16_dot_bytes = options.bf16_dot_bytes;
         // 6 rows of 4 64-byte vectors: 24 of AVX-512's 32 registers; of 2 32-byte: 12 of 16.
         options.micro.dot_vectors = options.dot_bytes == 32 ? 2 : 4;
         s.vector_bytes = options.micro.vector_bytes;
         s.backend->configure(options);
         ScheduleCache cache(options);
         // isl's debug output (--debug 5) is per kernel: one thread keeps it in order.
         std::vector<ScheduledKernel> scheduled =
             cache.schedule_all(s.out.plan, options.debug_isl ? 1 : 0);
         for (size_t i = 0; i < scheduled.size(); ++i) {
           const Kernel& k = s.out.plan.kernels[i];
           ScheduledKernel& sk = scheduled[i];
           s.out.transforms.push_back(transforms_to_text(sk.transforms));
           text += "// " + k.name + ": " + s.out.transforms.back() + "\n";
           if (!sk.schedule_text.empty()) text += sk.schedule_text + "\n";
           text += loop_nest_to_text(sk.nest);
           s.out.nests.push_back(std::move(sk.nest));
           s.out.symbols.push_back(code_symbol(s.out.plan, i));
         }
         text += "// " + std::to_string(cache.hits()) + " of " +
                 std::to_string(s.out.nests.size()) + " kernel(s) reused an earlier schedule";
         return text + schedule_variants(s, options);
       }},
      {"render", 1, 4,
       [](State& s) {
         // The kernels with code of their own; each variant one more: its kernel's statements,
         // its own nest.
         KernelPlan plan = s.out.plan;
         plan.kernels.clear();
         std::vector<LoopNest> nests;
         std::vector<std::string> symbols;
         for (size_t k = 0; k < s.out.plan.kernels.size(); ++k) {
           if (s.out.plan.kernels[k].code_of >= 0) continue;
           plan.kernels.push_back(s.out.plan.kernels[k]);
           nests.push_back(s.out.nests[k]);
           symbols.push_back(s.out.symbols[k]);
         }
         for (const LoweredProgram::Variant& v : s.out.variants) {
           plan.kernels.push_back(s.out.plan.kernels[v.kernel]);
           nests.push_back(v.nest);
           symbols.push_back(v.symbol);
         }
         s.out.source =
             s.backend->renderer().render(plan, nests, symbols, {s.opt.checked, s.vector_bytes});
         return s.out.source;
       }},
  };
  return table;
}

void run_stages(State& s, int phase);

}  // namespace

std::string kernel_symbol(const std::string& name, size_t k) {
  std::string s = "kiln_";
  for (char c : name)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s + "_" + std::to_string(k);
}

std::string code_symbol(const KernelPlan& plan, size_t k) {
  size_t code = code_kernel(plan, k);
  return kernel_symbol(plan.kernels[code].name, code);
}

LoweredProgram lower_program(const Graph& g, const Backend& backend, const CompileOptions& opt) {
  LoweredProgram p = plan_program(g, opt);
  generate_code(p, backend, opt);
  return p;
}

LoweredProgram plan_program(const Graph& g, const CompileOptions& opt) {
  State s{nullptr, opt, {}};
  s.out.graph = g;
  run_stages(s, 0);
  return s.out;
}

std::string format_ms(double ms) {
  char buf[48];
  const double a = std::fabs(ms);
  if (a >= 100)
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  else if (a >= 10)
    std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  else if (a >= 1)
    std::snprintf(buf, sizeof buf, "%.2f ms", ms);
  else
    std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

void generate_code(LoweredProgram& p, const Backend& backend, const CompileOptions& opt) {
  State s{&backend, opt, std::move(p)};
  run_stages(s, 1);
  p = std::move(s.out);
}

std::string program_identity(const LoweredProgram& p, const std::string& backend,
                             const CompileOptions& opt) {
  std::ostringstream id;
  id << "kiln build " << kKilnBuildId << "\nbackend " << backend << "\n"
     << graph_to_text(p.graph) << plan_to_text(p.plan) << config_identity(opt);
  return id.str();
}

namespace {

void run_stages(State& s, int phase) {
  const CompileOptions& opt = s.opt;
  for (const Stage& stage : stages()) {
    if (stage.phase != phase) continue;
    auto t0 = std::chrono::steady_clock::now();
    std::string text = stage.run(s);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.out.times.push_back({stage.name, ms, t0});
    if (opt.log && opt.debug >= 2) *opt.log << "-- " << stage.name << " (" << ms << " ms)\n";
    if (opt.log && opt.debug >= stage.print_level) *opt.log << text << "\n";
  }
}

}  // namespace

}  // namespace kiln
