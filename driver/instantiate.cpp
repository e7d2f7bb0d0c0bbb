// The steps from a caller's choices to a compiled program that the public API and the `kiln`
// command line share (driver/instantiate.h).
#include "driver/instantiate.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <iostream>

#include "autodiff/gradient.h"
#include "backends/backend.h"
#include "driver/host_cpu.h"
#include "dsl/choices.h"
#include "ir/sizes.h"
#include "ir/suggest.h"
#include "ir/verifier.h"
#include "simplifier/rule.h"

namespace kiln {

const Composite& find_composite(const Library& lib, const SpecFile& file, const std::string& name) {
  if (const Composite* c = lib.resolve(file, name)) return *c;
  std::string names;
  std::vector<std::string> known;
  for (const auto& c : file.composites) {
    names += " " + c->name;
    known.push_back(c->name);
  }
  throw std::invalid_argument("no composite '" + name + "' in " + file.path +
                              did_you_mean(name, known) + " (it has:" + names + ")");
}

LowerOptions lower_options(const Composite& c, const CompileSettings& s) {
  LowerOptions opt;
  for (const auto& [name, spelling] : s.dtypes)
    opt.dtypes[name] = parse_dtype_choice(c, name, spelling);
  for (const auto& [name, text] : s.attrs) {
    const AttrDecl* decl = c.attr(name);
    if (!decl) {
      std::vector<std::string> known;
      for (const AttrDecl& a : c.attrs)
        known.push_back(a.name);
      throw std::invalid_argument("composite '" + c.name + "' has no attribute '" + name + "'" +
                                  did_you_mean(name, known));
    }
    opt.attrs[name] = parse_attr_choice(text, *decl);
  }
  if (s.batch_rank < 0) throw std::invalid_argument("batch_rank must not be negative");
  if (s.batch_rank > kMaxRank)
    throw std::invalid_argument("batch_rank " + std::to_string(s.batch_rank) +
                                " is more than the limit of " + std::to_string(kMaxRank) +
                                " dimensions");
  for (const auto& [name, value] : s.fixed_sizes)
    if (value < 0) throw std::invalid_argument("fixed size " + name + " is negative");
  opt.batch_rank = s.batch_rank;
  opt.fixed_sizes = s.fixed_sizes;
  return opt;
}

Graph lower_verified(const Library& lib, const Composite& c, const LowerOptions& opt,
                     bool interpreted) {
  Graph g;
  try {
    g = lower_composite(lib, c, opt);
  } catch (const std::overflow_error& e) {  // a size expression with the fixed sizes
    if (!opt.fixed_sizes.empty()) {         // name the tensor: check the sizes on the generic graph
      LowerOptions generic = opt;
      generic.fixed_sizes.clear();
      try {
        check_graph_sizes(lower_composite(lib, c, generic), opt.fixed_sizes, interpreted);
      } catch (const SizeError& size) {
        throw std::invalid_argument(size.what());
      }
    }
    throw std::invalid_argument("'" + c.name + "' with the fixed sizes: " + e.what());
  }
  if (!opt.fixed_sizes.empty()) {  // a size to fix that the composite lacks is a caller's typo
    LowerOptions generic = opt;
    generic.fixed_sizes.clear();
    std::vector<std::string> vars = lower_composite(lib, c, generic).size_vars;
    for (const auto& [name, value] : opt.fixed_sizes)
      if (std::find(vars.begin(), vars.end(), name) == vars.end())
        throw std::invalid_argument("'" + c.name + "' has no size variable '" + name +
                                    "' to specialise" + did_you_mean(name, vars));
  }
  verify_or_throw(g);
  return g;
}

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

Graph differentiate(const Graph& forward, const std::vector<std::string>& wrt, const Composite& c) {
  return differentiate(forward, wrt, c, GradSave::recompute).graph;
}

Backward differentiate(const Graph& forward, const std::vector<std::string>& wrt,
                       const Composite& c, GradSave save) {
  try {
    return gradient(forward, wrt, save);
  } catch (const GradError& e) {
    std::vector<std::string> outs;
    for (const GraphOutput& o : forward.outputs)
      outs.push_back(o.name);
    throw SpecError(c.body_loc, "cannot differentiate " + quoted_list(outs) + " of '" + c.name +
                                    "' with respect to " + quoted_list(wrt) + ": " + e.what());
  }
}

UnboundSize::UnboundSize(const std::string& var, const std::string& composite)
    : std::invalid_argument("size variable " + var + " of '" + composite + "' is not bound"),
      var(var) {}

void check_bound_sizes(const Graph& g, const std::map<std::string, int64_t>& sizes,
                       bool interpreted) {
  for (const std::string& v : g.size_vars) {
    auto it = sizes.find(v);
    if (it == sizes.end()) throw UnboundSize(v, g.name);
    if (it->second < 0) throw std::invalid_argument("size variable " + v + " is negative");
  }
  check_size_facts(g.checks, sizes);
  try {
    check_graph_sizes(g, sizes, interpreted);
  } catch (const SizeError& e) {
    throw std::invalid_argument(e.what());
  }
}

std::unique_ptr<Runtime> open_runtime(const std::string& name, bool interp_too,
                                      const std::string& argument) {
  // A compile or a cache hit is coming: a second core reads the rules the compile will simplify
  // with while this one loads the plugin (on the caller's thread: a GPU plugin makes its context
  // current on the thread that opens it) and the plugin prepares its loader. The future waits
  // for the read when it goes, also when the open throws.
  std::future<void> rules = std::async(std::launch::async, [] {
    try {
      shipped_rules();
    } catch (...) {
      // the compile that needs the rules reads them again and reports what is wrong
    }
  });
  try {
    std::unique_ptr<Runtime> rt = Runtime::open(name);
    rt->prepare();
    return rt;
  } catch (const UnknownRuntime& e) {
    std::vector<std::string> known = e.known();
    if (interp_too) known.push_back("interp");
    std::string hint = e.not_a_descriptor()
                           ? "; " + argument + " takes a runtime name or a descriptor .toml file"
                           : "";
    throw std::invalid_argument(e.problem() + hint + "; known runtimes: " + join_names(known));
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

int debug_level_from_env() {
  const char* v = std::getenv("KILN_DEBUG");
  if (!v || !*v) return 0;
  std::string text = v;
  if (text.size() != 1 || text[0] < '0' || text[0] > '5')
    throw std::invalid_argument("KILN_DEBUG expects a debug level 0..5, got '" + text + "'");
  return text[0] - '0';
}

CompileOptions compile_options(const SpecFile& file,
                               const std::map<std::string, std::string>& config,
                               const Runtime& rt) {
  CompileOptions opt = config_options(config, &rt.descriptor());
  opt.debug = debug_level_from_env();
  opt.schedule.debug_isl = opt.debug >= 5;
  opt.log = &std::cerr;
  opt.rule_files = file.rules;
  backend_for(rt.backend()).configure_cuts(opt.cut);
  backend_for(rt.backend()).configure_build(opt.build);
  // Host runtimes compile for this CPU (-march=native): MICRO=auto fits its vector units.
  if (backend_for(rt.backend()).memory() == MemoryKind::host) {
    HostCpu cpu = host_cpu();
    opt.schedule.full_width_bytes = full_width_vector_bytes(cpu);
    opt.schedule.pack_block_bytes = pack_block_bytes(cpu);
    if (opt.schedule.simd_auto) opt.schedule.simd_bytes = opt.schedule.full_width_bytes;
    if (opt.schedule.amx_auto) {
      opt.schedule.amx_bf16 = cpu.amx_bf16;
      opt.schedule.amx_int8 = cpu.amx_int8;
    }
    if (opt.schedule.dot_auto) opt.schedule.dot_bytes = dot_vector_bytes(cpu);
    if (opt.schedule.bf16_dot_auto) opt.schedule.bf16_dot_bytes = bf16_dot_vector_bytes(cpu);
  } else {
    // Device runtimes name the architecture they compile for first ("sm_90a NVIDIA H100 ...").
    opt.schedule.gpu_tile.wgmma = rt.target().rfind("sm_90a", 0) == 0;
    opt.schedule.gpu_tile.tma = opt.schedule.gpu_tile.wgmma && opt.schedule.gpu_tma;
  }
  opt.cut.fuse_softmax_contractions &= opt.schedule.gpu_tile.rows > 0;
  opt.cut.tile_bounded_contractions &= opt.cut.tile_bounded_for_registers
                                           ? opt.schedule.micro.rows > 0 && opt.schedule.sink
                                           : opt.schedule.gpu_tile.rows > 0;
  return opt;
}

}  // namespace kiln
