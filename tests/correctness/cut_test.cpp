// Kernel cutting end to end (scheduler/cut_kernels.h): a composite too large for one isl problem
// runs as several kernels, launched in order, and still matches the interpreter on every CPU
// runtime. Timing is measured by tools/perf/stacked_layernorm.py, never asserted here.
#include <doctest/doctest.h>

#include <regex>

#include "tests/support/cli.h"

namespace {

int count_kernels(const std::string& out) {
  std::regex line(R"(\n  kernel kiln_\w+: \d+ statements)");
  return static_cast<int>(
      std::distance(std::sregex_iterator(out.begin(), out.end(), line), std::sregex_iterator()));
}

}  // namespace

TEST_CASE("cut: 8 stacked layer normalisations run as several kernels and match the interpreter") {
  for (const char* runtime : {"clang", "cc"}) {
    CAPTURE(runtime);
    clitest::TempDir cache;
    clitest::Result r = clitest::run_kiln(
        std::string("run tests/regressions/stacked_layernorm.toml:stacked_layernorm_8 --runtime ") +
            runtime + " --test N=64 --batch 3 --debug 1",
        "KILN_CACHE=" + cache.path.string());
    CAPTURE(r.out);
    REQUIRE(r.code == 0);
    CHECK(clitest::has(r, "cut "));  // the stage ran and was timed
    CHECK(count_kernels(r.out) > 1);
  }
}
