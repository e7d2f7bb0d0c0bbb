// Every composite of ops/ compiled by every CPU runtime (clang and openmp in process, cc as a
// subprocess) and checked against the interpreter at each size of its own test table, for f32
// and f64 and, where the composite allows them, f16 and bf16. One compile serves every size: the
// sizes stay symbolic in the generated code.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "tests/support/runtime_sweep.h"

using namespace kiln;
using kiln::test::check_runtime;
using kiln::test::spec_files;

TEST_CASE("runtime ops: every composite under clang matches the interpreter") {
  check_runtime("clang");
}

TEST_CASE("runtime ops: every composite under cc matches the interpreter") {
  check_runtime("cc");
}

TEST_CASE("runtime ops: every composite under openmp matches the interpreter") {
  check_runtime("openmp");
}

TEST_CASE("runtime ops: every composite under clang with CHECK=1 (every access in bounds)") {
#if defined(__SANITIZE_ADDRESS__)
  // The checks are in the generated code, which the sanitizers do not instrument: the normal
  // build's run says all there is to say, and CI's time is better spent elsewhere.
  MESSAGE("skipped under AddressSanitizer");
#else
  check_runtime("clang", spec_files("ops"), {{"CHECK", "1"}});
#endif
}

TEST_CASE("runtime ops: the crash regressions of tests/regressions under every config") {
  for (const char* runtime : {"clang", "cc", "openmp"})
    for (const std::map<std::string, std::string>& config :
         std::vector<std::map<std::string, std::string>>{{}, {{"TILE", "0"}}, {{"CHECK", "1"}}})
      check_runtime(runtime, spec_files("tests/regressions"), config);
}

TEST_CASE("runtime ops: every composite under the runtimes of KILN_TEST_RUNTIMES") {
  // The conformance run for a new runtime (docs/plugins.md): a comma-separated list of runtime
  // names or descriptor paths. Unset, the test has nothing to do.
  const char* list = std::getenv("KILN_TEST_RUNTIMES");
  std::stringstream names(list ? list : "");
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty()) continue;
    CAPTURE(name);
    check_runtime(name);
  }
}

TEST_CASE("runtime ops: every composite cut into as many kernels as it can be, with CHECK=1") {
  // A budget of 2 statements and a cut after every reduction: nearly every statement its own
  // kernel, every value crossing a cut stored (scheduler/cut_kernels.h), temps sharing slots
  // across kernels, and every access bounds-checked.
  CutOptions cut;
  cut.max_statements = 2;
  cut.cut_after_reductions = true;
  std::vector<std::string> files = spec_files("ops");
  for (const std::string& f : spec_files("tests/regressions"))
    files.push_back(f);
  check_runtime("clang", files, {{"CHECK", "1"}}, cut);
}
