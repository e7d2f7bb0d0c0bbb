#include "tools/kiln/session.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <sstream>

#include "driver/tune_db.h"
#include "dsl/check.h"
#include "dsl/lower.h"
#include "ir/sizes.h"
#include "ir/suggest.h"

namespace kiln::cli {

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& s, const char* what) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw UsageError(std::string("expected ") + what + " as NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

int64_t parse_int(const std::string& s, const std::string& what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw UsageError("expected an integer for " + what + ", got '" + s + "'");
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) {
    auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

/** `s` split at the commas outside brackets and quotes: `a=1,perm=[-1,-3,-2]` is two items. */
std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  char quote = 0;
  auto flush = [&] {
    auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    item.clear();
  };
  for (char c : s) {
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '(' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == ')' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    item += c;
  }
  flush();
  return out;
}

}  // namespace

SizeBindings parse_sizes(const std::string& text) {
  SizeBindings out;
  for (const std::string& item : split(text, ',')) {
    auto [k, v] = split_assignment(item, "a size");
    out[k] = parse_int(v, "size " + k);
    if (out[k] < 0) throw UsageError("size " + k + " must not be negative");
  }
  return out;
}

std::pair<std::string, std::string> split_target(const std::string& target) {
  const size_t from = target.starts_with("std:") ? 4 : 0;
  auto colon = target.rfind(':');
  if (colon == std::string::npos || colon < from) return {target, ""};
  return {target.substr(0, colon), target.substr(colon + 1)};
}

void load_selection(const Selection& sel, Loaded& out) {
  auto [path, name] = split_target(sel.target);
  out.file = &out.lib.load(path);
  out.rules = sel.rules;
  if (name.empty()) {
    if (out.file->composites.size() != 1) {
      std::string names;
      for (const auto& c : out.file->composites)
        names += " " + c->name;
      throw UsageError(path + " holds several composites; name one as " + path +
                       ":COMPOSITE (one of:" + names + ")");
    }
    out.comp = out.file->composites[0].get();
  } else {
    out.comp = usage_error_of([&] { return &find_composite(out.lib, *out.file, name); });
  }
  for (const std::string& d : sel.dtypes) {
    auto [k, v] = split_assignment(d, "a dtype choice");
    out.settings.dtypes[k] = v;
  }
  for (const std::string& list : sel.attrs) {
    // `a=1,b=2` is two attributes; `perm=-1,-3,-2` one list: an item without '=' continues the
    // one before.
    std::vector<std::string> items;
    for (const std::string& item : split_top_level(list))
      if (item.find('=') == std::string::npos && !items.empty())
        items.back() += "," + item;
      else
        items.push_back(item);
    for (const std::string& a : items) {
      auto [k, v] = split_assignment(a, "an attribute");
      out.settings.attrs[k] = v;
    }
  }
  if (!sel.batch.empty()) {
    for (const std::string& b : split(sel.batch, ',')) {
      std::string what = "--batch dimension " + std::to_string(out.batch.size());
      out.batch.push_back(parse_int(b, what));
      if (out.batch.back() < 0)
        throw UsageError(what + " is " + b + "; a dimension must not be negative");
    }
    if (out.batch.size() > static_cast<size_t>(kMaxRank))
      throw UsageError("--batch has " + std::to_string(out.batch.size()) +
                       " dimensions, more than the limit " + std::to_string(kMaxRank));
  } else if (!out.comp->test.batches.empty()) {
    out.batch = out.comp->test.batches[0];
  }
  out.settings.batch_rank = static_cast<int>(out.batch.size());
  out.options = usage_error_of([&] { return lower_options(*out.comp, out.settings); });
}

namespace {
std::string list_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

SizeBindings bind_sizes(const Loaded& l, const std::string& test) {
  // The composite's first test case, with what --test names in its place.
  SizeBindings sizes = l.comp->test.case_sizes(0);
  const std::vector<std::string> known = size_variables(*l.comp);
  for (const auto& [k, v] : parse_sizes(test)) {
    // A name the composite does not size would be ignored: the run would not be what was asked.
    if (!std::binary_search(known.begin(), known.end(), k))
      throw UsageError("--test " + k + "=" + std::to_string(v) + ": '" + l.comp->name +
                       "' has no size " + k + did_you_mean(k, known) +
                       (known.empty() ? std::string("; it has no size variables")
                                      : "; its sizes: " + list_names(known)) +
                       " (batch dimensions are given by --batch)");
    sizes[k] = v;
  }
  for (size_t k = 0; k < l.batch.size(); ++k)
    sizes["batch" + std::to_string(k)] = l.batch[k];
  return sizes;
}

void add_code_options(CLI::App& cmd, CodeRequest& r) {
  cmd.add_option("target", r.sel.target, "FILE[:COMPOSITE]")->required();
  cmd.add_option("--runtime", r.runtime,
                 "The runtime whose backend renders the code: a name (clang, cc) or a "
                 "descriptor path")
      ->capture_default_str();
  cmd.add_option("--config", r.config, "Compiler knobs KEY=VALUE, e.g. TILE=64,PARALLEL=0")
      ->delimiter(',');
  cmd.footer(knobs_help());
  cmd.add_option("--test", r.test,
                 "Size bindings for --specialize, e.g. M=100,N=7 (default: the composite's "
                 "first test case)");
  cmd.add_flag("--specialize", r.specialize,
               "Compile for the bound sizes only (they become constants in the graph)");
  cmd.add_option("--dtype", r.sel.dtypes, "Type variable choice, e.g. T=f16");
  cmd.add_option("--attr", r.sel.attrs, "Attribute values, e.g. alpha=0.2 or a=1,perm=[-1,-2]");
  cmd.add_option("--batch", r.sel.batch, "Batch dimensions for '...', e.g. 3,5");
  add_rules_option(cmd, r.sel);
}

void add_rules_option(CLI::App& cmd, Selection& sel) {
  cmd.add_option("--rules", sel.rules,
                 "A rule file for the simplifier, applied after the shipped rules (repeatable; "
                 "docs/rules.md)")
      ->check(CLI::ExistingFile);
}

void add_run_request_options(CLI::App& cmd, RunRequest& r, const std::string& runtime_help) {
  cmd.add_option("target", r.sel.target, "FILE[:COMPOSITE]")->required();
  cmd.add_option("--runtime", r.runtime, runtime_help)->capture_default_str();
  cmd.add_option("--config", r.config, "Compiler knobs KEY=VALUE, e.g. TILE=64,PARALLEL=0")
      ->delimiter(',');
  cmd.footer(knobs_help());
  cmd.add_option("--test", r.test,
                 "Size bindings, e.g. M=100,N=7 (default: the composite's first test case)");
  cmd.add_option("--seed", r.seed, "Seed of the random inputs")->capture_default_str();
  cmd.add_option("--dtype", r.sel.dtypes, "Type variable choice, e.g. T=f16");
  cmd.add_option("--attr", r.sel.attrs, "Attribute values, e.g. alpha=0.2 or a=1,perm=[-1,-2]");
  cmd.add_option("--batch", r.sel.batch, "Batch dimensions for '...', e.g. 3,5");
  add_rules_option(cmd, r.sel);
  cmd.add_flag("--specialize", r.specialize,
               "Compile for the bound sizes only (they become constants in the graph)");
  cmd.add_option("--grad", r.grad,
                 "Run the backward composite with respect to these float inputs instead, e.g. "
                 "x,w: its inputs are the composite's and a cotangent per output, dy for y "
                 "(docs/autodiff.md)")
      ->delimiter(',');
}

Graph differentiate(const Graph& forward, const std::vector<std::string>& wrt, const Loaded& l) {
  return usage_error_of([&] { return kiln::differentiate(forward, wrt, *l.comp); });
}

Backward differentiate(const Graph& forward, const std::vector<std::string>& wrt, const Loaded& l,
                       GradSave save) {
  return usage_error_of([&] { return kiln::differentiate(forward, wrt, *l.comp, save); });
}

std::vector<std::string> float_inputs(const Graph& g) {
  std::vector<std::string> out;
  for (NodeId id : g.inputs)
    if (is_float(g[id].dtype)) out.push_back(g[id].name);
  return out;
}

Graph lower_checked(Loaded& l, const SizeBindings* sizes, bool interpreted) {
  Graph g = usage_error_of([&] { return lower_verified(l.lib, *l.comp, l.options, interpreted); });
  if (!sizes) return g;
  try {
    check_bound_sizes(g, *sizes, interpreted);
  } catch (const UnboundSize& e) {
    throw UsageError(std::string(e.what()) + "; pass --test " + e.var + "=...");
  } catch (const SizeCheckError& e) {  // a shape fact the sizes break: an error at the fact
    throw size_check_error(e.check, e.problem);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return g;
}

Graph lower_loaded(Loaded& l, const std::string& test, bool specialize) {
  if (!specialize) return lower_checked(l, nullptr, false);
  l.options.fixed_sizes = bind_sizes(l, test);
  return lower_checked(l, &l.options.fixed_sizes, false);
}

std::string format_stage_times(const std::vector<StageTime>& times) {
  std::string out;
  for (const StageTime& t : times)
    out += " " + t.name + " " + format_ms(t.milliseconds);
  return out;
}

std::vector<Tensor> random_inputs(const Graph& g, const Composite& c, const SizeBindings& sizes,
                                  uint64_t seed) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Node& n = g[g.inputs[k]];
    double lo = -1, hi = 1;
    if (n.dtype == DType::boolean) {
      lo = 0;
      hi = 2;
    } else if (is_unsigned_int(n.dtype)) {
      lo = 0;
      hi = 16;
    } else if (is_int(n.dtype)) {
      lo = -8;
      hi = 8;
    }
    if (auto it = c.test.ranges.find(n.name); it != c.test.ranges.end())
      std::tie(lo, hi) = it->second;
    std::string what = "input '" + n.name + "' of '" + g.name + "'";
    try {
      out.push_back(random_tensor(n.dtype, eval_checked_shape(what, n.dtype, n.shape, sizes),
                                  seed + 7919 * k, lo, hi));
    } catch (const TensorAllocError& e) {
      throw TensorAllocError(what + ": " + e.what());
    }
  }
  return out;
}

std::unique_ptr<Runtime> open_runtime(const std::string& name, bool interp_too) {
  return usage_error_of([&] { return kiln::open_runtime(name, interp_too, "--runtime"); });
}

std::map<std::string, std::string> config_items(const std::vector<std::string>& config) {
  std::map<std::string, std::string> items;
  for (const std::string& item : config) {
    auto [k, v] = split_assignment(item, "a --config item");
    items[k] = v;
  }
  usage_error_of(
      [&] { return config_options(items, nullptr); });  // every key a knob, every value valid
  return items;
}

namespace {

/** What the CLI adds to the options compile_options makes: `l`'s --rules, the debug level. */
void cli_options(CompileOptions& opt, int debug, const Loaded& l) {
  opt.rule_files.insert(opt.rule_files.end(), l.rules.begin(), l.rules.end());
  opt.debug = debug;
  opt.schedule.debug_isl = debug >= 5;
  opt.log = &std::cout;
}

}  // namespace

CompileOptions compile_options(const std::vector<std::string>& config, int debug, const Runtime& rt,
                               const Loaded& l) {
  std::map<std::string, std::string> items = config_items(config);
  CompileOptions opt = usage_error_of([&] { return kiln::compile_options(*l.file, items, rt); });
  cli_options(opt, debug, l);
  return opt;
}

CompileOptions tuned_compile_options(const std::vector<std::string>& config, int debug,
                                     const Runtime& rt, const Loaded& l, const Graph& g,
                                     const SizeBindings& sizes) {
  std::map<std::string, std::string> items = config_items(config);
  return usage_error_of([&] {
    return kiln::tuned_compile_options(*l.file, items, rt, g, sizes, "",
                                       [&](CompileOptions& o) { cli_options(o, debug, l); });
  });
}

void print_build(std::ostream& out, const Executable& exe, double build_ms) {
  const LoweredProgram& p = exe.program();
  const CompileInfo& c = exe.build_info().compile;
  for (size_t k = 0; k < p.plan.kernels.size(); ++k)
    out << "  kernel " << p.symbols[k] << ": " << p.plan.kernels[k].statements.size()
        << " statements\n";
  out << "  stages:" << format_stage_times(p.times) << "\n  compile " << format_ms(c.compile_ms)
      << " (cache "
      << (Cache::off()  ? "off"
          : c.cache_hit ? "hit"
                        : "miss")
      << "), load " << format_ms(c.load_ms) << ", total " << format_ms(build_ms) << "\n";
}

}  // namespace kiln::cli
