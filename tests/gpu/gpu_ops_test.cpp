// The cuda runtime over every composite of ops/: compiled through NVRTC for every dtype and
// batch shape (no GPU needed: NVRTC compiles for sm_90, or $KILN_CUDA_ARCH, when none is
// present), and where a GPU is present run at every size of each test table against the
// interpreter. tests/gpu/run.sh runs this on a GPU machine.
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "driver/config.h"
#include "runtimes/runtime.h"
#include "tests/support/runtime_sweep.h"

using namespace kiln;

namespace {

/** Why the cuda runtime cannot run kernels here (no driver, no device), or empty. */
std::string no_device_reason() {
  std::unique_ptr<Runtime> rt = Runtime::open("cuda");
  try {
    void* p = rt->alloc(64);
    rt->free(p);
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("gpu: every composite of ops/ compiles through NVRTC") {
#if defined(KILN_SANITIZED)
  // NVRTC is not instrumented: one file's programs rendered, the first also compiled
  // (compile_through), and CI's time is better spent elsewhere.
  test::SweepCount n = test::check_runtime("cuda", {"ops/nn.toml"}, {}, {}, true);
  CHECK(n.compiled > 10 / test::sweep_shard().count);
#else
  // Warpgroup products at the first default GPU_WGMMA shape alone: the other shapes are the same
  // code with other constants and took 55 of this test's 182 s on the development machine. They
  // compile in full for the products of tests/data/warpgroup_shapes.toml, every layout a tile
  // takes; the GPU machine's sweep compiles every shape of every composite.
  std::string first = find_knob("GPU_WGMMA")->default_value;
  first = first.substr(0, first.find(','));
  test::SweepCount n =
      test::check_runtime("cuda", test::spec_files("ops"), {{"GPU_WGMMA", first}}, {}, true);
  CHECK(n.compiled > 100 / test::sweep_shard().count);
  n = test::check_runtime("cuda", {"tests/data/warpgroup_shapes.toml"}, {}, {}, true);
  CHECK(n.compiled >= 8 / test::sweep_shard().count);
#endif
}

TEST_CASE("gpu: every composite of ops/ under cuda matches the interpreter") {
  if (std::string why = no_device_reason(); !why.empty()) {
    MESSAGE("skipped: no GPU (" << why << ")");
    return;
  }
  test::SweepCount n = test::check_runtime("cuda");
  CHECK(n.runs > n.compiled);
}

TEST_CASE("gpu: the crash regressions and every composite with CHECK=1 under cuda") {
  if (std::string why = no_device_reason(); !why.empty()) {
    MESSAGE("skipped: no GPU (" << why << ")");
    return;
  }
  test::check_runtime("cuda", test::spec_files("tests/regressions"));
  test::check_runtime("cuda", test::spec_files("ops"), {{"CHECK", "1"}});
}
