// `kiln rules list|check [FILES]`: the simplifier's rules. `check` evaluates every pattern rule
// against its replacement on random and special inputs (simplifier/checker.h), then simplifies
// every composite of the ops folder and checks that the engine converges, the graph does not
// grow and the interpreter gives the same results before and after.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "ir/data_dirs.h"
#include "simplifier/checker.h"
#include "simplifier/engine.h"
#include "simplifier/rule_file.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct RulesOptions {
  std::vector<std::string> files;
  std::string ops;  ///< empty: the standard library's folder (ir/data_dirs.h)
  bool fastmath = false;
  uint64_t seed = 1;
};

/** The rules to check: those of `files`, or every shipped rule when none is given. */
std::vector<Rule> selected_rules(const RulesOptions& o) {
  if (o.files.empty()) return shipped_rules().rules();
  std::vector<Rule> out;
  for (const std::string& f : o.files)
    for (Rule& r : load_rule_file(f))
      out.push_back(std::move(r));
  return out;
}

void list(const RulesOptions& o) {
  for (const Rule& r : selected_rules(o)) {
    std::cout << std::left << std::setw(24) << r.name << std::setw(12) << r.set
              << (r.code ? "(C++) " : "") << (r.fastmath ? "(fastmath) " : "");
    if (r.pattern) std::cout << pattern_str(*r.pattern) << " -> " << pattern_str(*r.replacement);
    if (r.guard) std::cout << "  if " << expr_str(*r.guard);
    std::cout << "\n" << std::string(36, ' ') << r.comment << "\n";
  }
}

bool check_pattern_rules(const RulesOptions& o) {
  bool ok = true;
  int checked = 0;
  for (const Rule& r : selected_rules(o)) {
    if (!r.pattern) continue;
    RuleCheck c = check_rule(r, o.seed);
    ++checked;
    ok &= c.ok;
    std::cout << (c.ok ? "  ok    " : "  FAIL  ") << std::left << std::setw(24) << r.name;
    if (c.ok)
      std::cout << c.dtypes << " dtypes, " << c.cases << " cases, " << c.declined
                << " declined by the guard\n";
    else
      std::cout << c.failure << "\n        (" << r.loc.file << ":" << r.loc.line << ")\n";
  }
  std::cout << "rules: " << checked << " checked on random and special inputs\n";
  return ok;
}

/** Simplifies one composite; returns "" or what went wrong. */
std::string check_composite(const std::string& target, const RuleSet& rules, bool fastmath,
                            uint64_t seed, std::string& sizes_text) {
  Selection sel;
  sel.target = target;
  Loaded l;
  load_selection(sel, l);
  Graph g = lower_loaded(l, "", false);
  SizeBindings sizes = bind_sizes(l, "");
  std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, seed);
  std::vector<Tensor> want = interpret(g, sizes, inputs);
  SimplifyOptions opt;
  opt.fastmath = fastmath;
  SimplifyResult r;
  try {
    r = simplify(g, rules, opt);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  sizes_text = std::to_string(g.size()) + " -> " + std::to_string(r.graph.size()) + " nodes, " +
               std::to_string(r.passes) + " passes";
  if (r.graph.size() > g.size()) return "the graph grew: " + sizes_text;
  std::vector<Tensor> got = interpret(r.graph, sizes, inputs);
  for (size_t k = 0; k < want.size(); ++k)
    if (std::string d = compare_results(got[k], want[k], fastmath); !d.empty())
      return "output " + g.outputs[k].name + " differs at element " + d;
  return "";
}

bool check_composites(const RulesOptions& o) {
  RuleSet rules = rules_with(o.files);
  std::vector<std::string> files;
  std::string ops = o.ops.empty() ? data_dir(DataDir::ops) : o.ops;
  for (const auto& e : std::filesystem::directory_iterator(ops))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  bool ok = true;
  int count = 0;
  for (const std::string& f : files) {
    Library lib;
    for (const auto& c : lib.load(f).composites) {
      std::string target = f + ":" + c->name, sizes;
      std::string why = check_composite(target, rules, o.fastmath, o.seed, sizes);
      ++count;
      ok &= why.empty();
      std::cout << (why.empty() ? "  ok    " : "  FAIL  ") << std::left << std::setw(32) << target
                << (why.empty() ? sizes : why) << "\n";
    }
  }
  std::cout << "composites: " << count << " simplified" << (o.fastmath ? " with FASTMATH=1" : "")
            << "; each must converge, not grow and give the interpreter's results\n";
  return ok;
}

}  // namespace

void add_rules_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("rules", "List or check the simplifier's rewrite rules");
  cmd->require_subcommand(1);
  auto o = std::make_shared<RulesOptions>();
  auto* ls = cmd->add_subcommand("list", "Print each rule: name, set, pattern -> replacement");
  ls->add_option("files", o->files, "Rule files (default: the shipped rules)")
      ->check(CLI::ExistingFile);
  ls->callback([o, &exit_code] {
    list(*o);
    exit_code = Exit::ok;
  });
  auto* check = cmd->add_subcommand(
      "check", "Check rules on random inputs, and the engine on every composite of --ops");
  check->add_option("files", o->files, "Rule files to check (default: the shipped rules)")
      ->check(CLI::ExistingFile);
  check
      ->add_option("--ops", o->ops,
                   "Folder of spec files to simplify (default: ops/, found as "
                   "the rule files are)")
      ->check(CLI::ExistingDirectory);
  check->add_flag("--fastmath", o->fastmath, "Simplify the composites with FASTMATH=1");
  check->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  check->callback([o, &exit_code] {
    bool rules_ok = check_pattern_rules(*o);
    bool composites_ok = check_composites(*o);
    exit_code = rules_ok && composites_ok ? Exit::ok : Exit::test_failed;
  });
}

}  // namespace kiln::cli
