// repeat(block, n, ...) (dsl/repeat.cpp): each step reads its slice of a stacked input as plain
// indices [l, i, j] — no div or mod by sizes, so contractions on it stay register-tiled — which
// the kernel plan turns into a window of the slice (scheduler/window_buffers.h), read at [i, j];
// the steps' kernels are the hand-written calls'. KILN_BIN names the binary.
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "tests/support/cli.h"

using clitest::Result;
using clitest::run_kiln;

TEST_CASE("repeat: each step reads its slice of a stacked weight through a window, as [i, j]") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = run_kiln(
      "show tests/regressions/repeat.toml:repeat_stacked --stage kernels --runtime cc "
      "--test S=4,C=8,L=3");
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  std::istringstream lines(r.out);
  std::string line;
  int steps[3] = {0, 0, 0};
  while (std::getline(lines, line)) {
    const size_t at = line.find(" w_");
    if (line.rfind("//", 0) == 0 || at == std::string::npos || line.find('{') == std::string::npos)
      continue;
    const std::string read = line.substr(at, line.find(']', at) - at + 1);
    CAPTURE(read);
    CHECK(read.find('/') == std::string::npos);
    CHECK(read.find(" % ") == std::string::npos);
    for (int l = 0; l < 3; ++l)
      steps[l] += read == " w_" + std::to_string(l) + "[i2, i1]";
  }
  // The three steps' products, each on its own slice: a window l·C·C elements into w.
  CHECK(steps[0] == 1);
  CHECK(steps[1] == 1);
  CHECK(steps[2] == 1);
  CHECK(r.out.find("w_0 : f32[C, C]  input arg 1 window of w from 0\n") != std::string::npos);
  CHECK(r.out.find("w_1 : f32[C, C]  input arg 1 window of w from C*C\n") != std::string::npos);
  CHECK(r.out.find("w_2 : f32[C, C]  input arg 1 window of w from 2*C*C\n") != std::string::npos);
}

TEST_CASE("repeat: carry=1 stacks the outputs it does not carry, step l's at l") {
  if (!std::getenv("KILN_BIN")) return;
  for (const char* runtime : {"interp", "cc"}) {
    Result r = run_kiln(
        "run tests/regressions/repeat.toml:repeat_stacked_outputs --no-check "
        "--test N=6 --runtime " +
        std::string(runtime));
    CAPTURE(r.out);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("out d : f32[3, 6]  min 0 max 0 mean 0") != std::string::npos);
    CHECK(r.out.find("out z : f32[3, 6]") != std::string::npos);
  }
}
