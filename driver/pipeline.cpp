#include "driver/pipeline.h"

#include <chrono>
#include <functional>
#include <ostream>
#include <sstream>

#include "kiln_build_id.h"
#include "scheduler/build_statements.h"
#include "scheduler/coalesce_dims.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/flatten_statements.h"
#include "scheduler/plan_buffers.h"
#include "scheduler/schedule_cache.h"
#include "simplifier/engine.h"

namespace kiln {

namespace {

/** What the stages pass along; out.graph starts as the lowered graph. */
struct State {
  const CStyleRenderer* renderer;  ///< phase 1 only
  const CompileOptions& opt;
  LoweredProgram out;
};

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
         s.out.plan = build_statements(s.out.graph);
         return plan_to_text(s.out.plan);
       }},
      {"cut", 0, 2,
       [](State& s) {
         CutCount n = cut_kernels(s.out.plan, s.opt.cut);
         return "// " + std::to_string(n.kernels) + " kernel(s), " +
                std::to_string(n.materialized) + " value(s) stored across a cut";
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
      {"schedule", 1, 3,
       [](State& s) {
         std::string text;
         ScheduleCache cache(s.opt.schedule);
         for (const Kernel& k : s.out.plan.kernels) {
           ScheduledKernel sk = cache.schedule(s.out.plan, k);
           if (!sk.schedule_text.empty()) text += sk.schedule_text + "\n";
           text += loop_nest_to_text(sk.nest);
           s.out.nests.push_back(sk.nest);
           s.out.symbols.push_back(kernel_symbol(k.name, s.out.symbols.size()));
         }
         return text + "// " + std::to_string(cache.hits()) + " of " +
                std::to_string(s.out.nests.size()) + " kernel(s) reused an earlier schedule";
       }},
      {"render", 1, 4,
       [](State& s) {
         s.out.source = s.renderer->render(s.out.plan, s.out.nests, s.out.symbols, {s.opt.checked});
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

LoweredProgram lower_program(const Graph& g, const CStyleRenderer& renderer,
                             const CompileOptions& opt) {
  LoweredProgram p = plan_program(g, opt);
  generate_code(p, renderer, opt);
  return p;
}

LoweredProgram plan_program(const Graph& g, const CompileOptions& opt) {
  State s{nullptr, opt, {}};
  s.out.graph = g;
  run_stages(s, 0);
  return s.out;
}

void generate_code(LoweredProgram& p, const CStyleRenderer& renderer, const CompileOptions& opt) {
  State s{&renderer, opt, std::move(p)};
  run_stages(s, 1);
  p = std::move(s.out);
}

std::string program_identity(const LoweredProgram& p, const std::string& backend,
                             const CompileOptions& opt) {
  std::ostringstream id;
  id << "kiln build " << kKilnBuildId << "\nbackend " << backend << "\n"
     << graph_to_text(p.graph) << plan_to_text(p.plan) << "tile " << opt.schedule.tile;
  for (int64_t t : opt.schedule.tile_sizes)
    id << " " << t;
  id << " parallel " << opt.schedule.parallel << " vector " << opt.schedule.vectorize << "\n";
  for (const auto& [k, v] : opt.config)
    id << k << "=" << v << "\n";
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
    s.out.times.push_back({stage.name, ms});
    if (opt.log && opt.debug >= 2) *opt.log << "-- " << stage.name << " (" << ms << " ms)\n";
    if (opt.log && opt.debug >= stage.print_level) *opt.log << text << "\n";
  }
}

}  // namespace

std::string apply_config(CompileOptions& opt) {
  for (const auto& [key, value] : opt.config) {
    if (key == "TILE") {
      std::vector<int64_t> sizes;
      std::stringstream in(value);
      std::string part;
      while (std::getline(in, part, 'x')) {
        try {
          sizes.push_back(std::stoll(part));
        } catch (const std::exception&) {
          return "--config TILE expects sizes such as 32 or 64x64x8, got '" + value + "'";
        }
      }
      opt.schedule.tile = !(sizes.size() == 1 && sizes[0] == 0);
      if (sizes.size() == 1) sizes.assign(3, sizes[0]);
      opt.schedule.tile_sizes = sizes;
    } else if (key == "PARALLEL" || key == "VECTORIZE") {
      if (value != "0" && value != "1") return "--config " + key + " expects 0 or 1";
      (key == "PARALLEL" ? opt.schedule.parallel : opt.schedule.vectorize) = value == "1";
    } else if (key == "CHECK") {
      if (value != "0" && value != "1") return "--config CHECK expects 0 or 1";
      opt.checked = value == "1";
    } else if (key == "FASTMATH" || key == "SIMPLIFY") {
      if (value != "0" && value != "1") return "--config " + key + " expects 0 or 1";
      (key == "FASTMATH" ? opt.simplify.fastmath : opt.simplify.enabled) = value == "1";
    } else if (key == "ISL_OPS" || key == "ISL_MS") {
      try {
        size_t used = 0;
        unsigned long v = std::stoul(value, &used);
        if (used != value.size() || value[0] == '-') throw std::invalid_argument(value);
        (key == "ISL_OPS" ? opt.schedule.max_operations : opt.schedule.max_milliseconds) = v;
      } catch (const std::exception&) {
        return "--config " + key + " expects a count of isl " +
               (key == "ISL_OPS" ? "operations" : "milliseconds") + " (0: no limit), got '" +
               value + "'";
      }
    } else if (key == "BLAS") {
      if (value != "openblas" && value != "none")
        return "--config BLAS expects openblas or none, got '" + value + "'";
      opt.simplify.blas = value == "none" ? "" : value;
    }
  }
  return "";
}

}  // namespace kiln
