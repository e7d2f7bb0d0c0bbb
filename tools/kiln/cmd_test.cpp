// `kiln test FILE[:COMPOSITE] [--runtime R]`: every case of every test table — each dtype the
// composite's type variable allows, each batch shape, each size — compiled by the runtime and
// compared with the interpreter. A progress bar on a terminal, plain lines otherwise; a summary
// `N passed, N failed`; exit code 3 on any failure. A composite without a test table is skipped.
// A table with `grad = true` adds each case's backward composite (autodiff/), compiled and
// compared the same way; --grad tests only the backward composites, of every composite.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "driver/compare.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct TestOptions {
  std::vector<std::string> targets;
  std::string runtime = "clang";
  std::vector<std::string> config, attrs, rules;
  uint64_t seed = 0;
  bool grad = false;  ///< --grad: only the backward composites, of every composite
};

/** One program to test: a composite at one dtype and one batch shape. */
struct Subject {
  std::string path;  ///< the spec file, as given
  const Composite* comp = nullptr;
  std::string dtype_choice;    ///< "T=f16", or empty where the composite has no type variable
  std::vector<int64_t> batch;  ///< bound to batch0, batch1, ...
  bool grad = false;           ///< its backward composite, with respect to every float input
};

std::string batch_str(const std::vector<int64_t>& b) {
  std::string s;
  for (int64_t d : b)
    s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

/** Every composite of the file (or the one named), each dtype its first type variable allows,
 *  each batch shape of its test table (none where no input takes `...`): its forward
 *  composite unless `only_grad`, its backward composite where `only_grad` or its table says
 *  `grad = true`. */
std::vector<Subject> subjects_of(const std::string& path, const Loaded& l, bool one,
                                 bool only_grad) {
  std::vector<Subject> out;
  for (const auto& c : l.file->composites) {
    if (one && c.get() != l.comp) continue;
    bool batched = false;
    for (const Param& p : c->inputs)
      batched |= p.type.batch;
    std::vector<std::vector<int64_t>> batches = c->test.batches;
    if (batches.empty() || !batched) batches = {{}};
    std::vector<std::string> dtypes = {""};
    if (!c->types.empty()) {
      dtypes.clear();
      for (DType d : c->types[0].allowed)
        dtypes.push_back(c->types[0].name + "=" + std::string(dtype_name(d)));
    }
    for (bool grad : {false, true}) {
      if (grad ? !(only_grad || c->test.grad) : only_grad) continue;
      for (const std::string& d : dtypes)
        for (const auto& b : batches)
          out.push_back({path, c.get(), d, b, grad});
    }
  }
  return out;
}

/** A line that redraws itself on a terminal: `[=====>    ] 12/40 softmax T=f16`. */
void progress(bool tty, int done, int total, const std::string& what) {
  if (!tty) return;
  constexpr int kWidth = 30;
  int filled = total > 0 ? done * kWidth / total : kWidth;
  std::cout << "\r[" << std::string(filled, '=') << (filled < kWidth ? ">" : "")
            << std::string(kWidth - std::min(filled + 1, kWidth), ' ') << "] " << done << "/"
            << total << " " << what << "\x1b[K" << std::flush;
}

}  // namespace

void add_test_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "test",
      "Run every case of the test tables against the interpreter: each dtype, batch shape "
      "and size");
  auto o = std::make_shared<TestOptions>();
  cmd->add_option("targets", o->targets, "FILE or FILE:COMPOSITE, one or more")->required();
  cmd->add_option("--runtime", o->runtime, "A runtime name (clang, openmp, cc) or descriptor path")
      ->capture_default_str();
  cmd->add_option("--config", o->config, "Compiler knobs KEY=VALUE, e.g. TILE=64,PARALLEL=0")
      ->delimiter(',');
  cmd->add_option("--attr", o->attrs, "Attribute values for every composite, e.g. alpha=0.2");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_flag("--grad", o->grad,
                "Test the backward composite of each case instead, with respect to every float "
                "input, as a test table's grad = true adds it (docs/autodiff.md); a composite "
                "with none, or whose gradient is refused, is skipped with the reason");
  cmd->add_option("--rules", o->rules, "A rule file for the simplifier (repeatable; docs/rules.md)")
      ->check(CLI::ExistingFile);
  cmd->callback([o, &exit_code] {
    config_items(o->config);
    std::unique_ptr<Runtime> rt = open_runtime(o->runtime);
    rt->probe();
    // FILE tests every composite of the file, FILE:COMPOSITE that one; every target is loaded
    // (and a bad one reported) before any test runs.
    std::vector<std::unique_ptr<Loaded>> files;
    std::vector<Subject> subjects;
    for (const std::string& target : o->targets) {
      auto [path, only] = split_target(target);
      Loaded& file = *files.emplace_back(std::make_unique<Loaded>());
      file.file = &file.lib.load(path);
      if (file.file->composites.empty()) throw UsageError(path + " holds no composite");
      const bool one = !only.empty();
      if (one)
        file.comp = usage_error_of([&] { return &find_composite(file.lib, *file.file, only); });
      for (Subject& s : subjects_of(path, file, one, o->grad))
        subjects.push_back(std::move(s));
    }
    const bool several = o->targets.size() > 1;
    Selection sel;
    sel.attrs = o->attrs;
    sel.rules = o->rules;
    int total = 0;
    for (const Subject& s : subjects)
      total += static_cast<int>(s.comp->test.case_count());
    const bool tty = isatty(STDOUT_FILENO);
    int passed = 0, failed = 0, skipped = 0;
    for (const Subject& s : subjects) {
      std::string name = s.path + ":" + s.comp->name;
      std::string what =
          (several ? name : s.comp->name) + (s.dtype_choice.empty() ? "" : " " + s.dtype_choice) +
          (s.batch.empty() ? "" : " batch " + batch_str(s.batch)) + (s.grad ? " grad" : "");
      int cases = static_cast<int>(s.comp->test.case_count()), ok = 0;
      auto fail = [&](const std::string& why) {
        if (tty) std::cout << "\r\x1b[K";
        std::cout << "FAIL " << what << ": " << why << "\n";
      };
      try {
        Selection one_sel = sel;
        one_sel.target = name;
        if (!s.dtype_choice.empty()) one_sel.dtypes = {s.dtype_choice};
        Loaded l;
        load_selection(one_sel, l);
        l.batch = s.batch;
        l.settings.batch_rank = static_cast<int>(s.batch.size());
        l.options = lower_options(*l.comp, l.settings);  // the batch rank of this subject
        auto sizes_of = [&](size_t k) {
          SizeBindings sizes = l.comp->test.case_sizes(k);
          for (size_t d = 0; d < l.batch.size(); ++d)
            sizes["batch" + std::to_string(d)] = l.batch[d];
          return sizes;
        };
        SizeBindings first = sizes_of(0);
        Graph g = lower_checked(l, &first, true);
        if (s.grad) {
          std::string why;
          try {
            std::vector<std::string> wrt = float_inputs(g);
            if (wrt.empty()) throw UsageError("no float input");
            g = differentiate(g, wrt, l);
          } catch (const std::exception& e) {  // a SpecError or UsageError of this subject
            why = e.what();
          }
          if (!why.empty()) {
            if (tty) std::cout << "\r\x1b[K";
            std::cout << "skip " << what << ": no gradient (" << why << ")\n";
            skipped += cases;
            continue;
          }
        }
        Executable exe(g, *rt, compile_options(o->config, 0, *rt, l));
        for (int k = 0; k < cases; ++k) {
          progress(tty, passed + failed + skipped + ok, total, what);
          SizeBindings sizes = sizes_of(static_cast<size_t>(k));
          try {
            std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, o->seed);
            std::vector<Tensor> want = interpret(g, sizes, inputs);
            std::vector<Tensor> got = exe.run(inputs, sizes);
            std::string bad;
            for (size_t out = 0; out < got.size(); ++out) {
              Tolerance tol =
                  tolerance_for(want[out].dtype, l.comp->test.rtol, l.comp->test.atol, want[out]);
              Comparison c = compare(got[out], want[out], tol);
              if (!c.ok && bad.empty()) {
                std::ostringstream m;
                m << "output " << g.outputs[out].name << " element " << c.first_bad << ": got "
                  << c.got << ", interpreter " << c.want;
                bad = m.str();
              }
            }
            if (bad.empty()) {
              ++ok;
            } else {
              std::string at;
              for (const auto& [v, x] : sizes)
                at += (at.empty() ? "" : ",") + v + "=" + std::to_string(x);
              fail("[" + at + "] " + bad);
            }
          } catch (const std::exception& e) {
            fail(e.what());
          }
        }
      } catch (const SpecError&) {
        throw;
      } catch (const UsageError& e) {
        if (!s.comp->test.sizes.empty()) throw;
        // No test table: nothing binds its sizes. Not a failure of the code.
        if (tty) std::cout << "\r\x1b[K";
        std::cout << "skip " << what << ": no test table (" << e.what() << ")\n";
        skipped += cases;
        continue;
      } catch (const std::exception& e) {
        fail(std::string("cannot compile: ") + e.what());
      }
      passed += ok;
      failed += cases - ok;
      if (!tty && ok == cases)
        std::cout << "ok   " << what << ": " << cases << " case" << (cases == 1 ? "" : "s") << "\n";
    }
    if (tty) std::cout << "\r\x1b[K";
    std::cout << passed << " passed, " << failed << " failed";
    if (skipped > 0) std::cout << ", " << skipped << " skipped";
    std::cout << " (" << rt->name() << ")\n";
    exit_code = failed > 0 ? Exit::test_failed : Exit::ok;
  });
}

}  // namespace kiln::cli
