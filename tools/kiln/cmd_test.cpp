// `kiln test FILE[:COMPOSITE]... [--runtime R]`: every case of every test table — each dtype the
// composite's type variable allows, each batch shape, each size — compiled by the runtime and
// compared with the interpreter. A progress bar on a terminal, plain lines otherwise; a summary
// `N passed, N failed`; exit code 3 on any failure. A composite without a test table is skipped.
// A table with `grad = true` adds each case's backward composite (autodiff/), compiled and
// compared the same way; --grad tests only the backward composites, of every composite.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"
#include "tools/kiln/test_subjects.h"

namespace kiln::cli {

namespace {

struct TestOptions {
  std::vector<std::string> targets;
  std::string runtime = "clang";
  TestSettings settings;
  bool grad = false;  ///< --grad: only the backward composites, of every composite
};

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
  cmd->add_option("--config", o->settings.config,
                  "Compiler knobs KEY=VALUE, e.g. TILE=64,PARALLEL=0")
      ->delimiter(',');
  cmd->add_option("--attr", o->settings.attrs,
                  "Attribute values for every composite, e.g. alpha=0.2");
  cmd->add_option("--seed", o->settings.seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_flag("--grad", o->grad,
                "Test the backward composite of each case instead, with respect to every float "
                "input, as a test table's grad = true adds it (docs/autodiff.md); a composite "
                "with none, or whose gradient is refused, is skipped with the reason");
  cmd->add_option("--rules", o->settings.rules,
                  "A rule file for the simplifier (repeatable; docs/rules.md)")
      ->check(CLI::ExistingFile);
  cmd->callback([o, &exit_code] {
    config_items(o->settings.config);
    std::unique_ptr<Runtime> rt = open_runtime(o->runtime);
    rt->probe();
    // FILE tests every composite of the file, FILE:COMPOSITE that one; every target is loaded
    // (and a bad one reported) before any test runs.
    std::vector<std::unique_ptr<Loaded>> files;
    std::vector<Subject> subjects = load_subjects(o->targets, o->grad, files);
    const bool several = o->targets.size() > 1;
    int total = 0;
    for (const Subject& s : subjects)
      total += static_cast<int>(s.comp->test.case_count());
    const bool tty = isatty(STDOUT_FILENO);
    int passed = 0, failed = 0, skipped = 0;
    for (const Subject& s : subjects) {
      const std::string what = subject_name(s, several);
      const int done = passed + failed + skipped;
      SubjectResult r =
          run_subject(s, *rt, o->settings, [&](int k) { progress(tty, done + k, total, what); });
      if (tty) std::cout << "\r\x1b[K";
      using Status = SubjectResult::Status;
      if (r.status == Status::skipped) {
        std::cout << "skip " << what << ": " << r.problems.at(0) << "\n";
        skipped += r.cases;
        continue;
      }
      for (const std::string& p : r.problems)
        std::cout << "FAIL " << what << ": "
                  << (r.status == Status::cannot_compile ? "cannot compile: " : "") << p << "\n";
      passed += r.ok;
      failed += r.cases - r.ok;
      if (!tty && r.status == Status::passed)
        std::cout << "ok   " << what << ": " << r.cases << " case" << (r.cases == 1 ? "" : "s")
                  << "\n";
      // Each subject's lines as it ends, also into a pipe: a run stopped from outside (a
      // timeout) still shows how far it got.
      std::cout << std::flush;
    }
    if (tty) std::cout << "\r\x1b[K";
    std::cout << passed << " passed, " << failed << " failed";
    if (skipped > 0) std::cout << ", " << skipped << " skipped";
    std::cout << " (" << rt->name() << ")\n";
    exit_code = failed > 0 ? Exit::test_failed : Exit::ok;
  });
}

}  // namespace kiln::cli
