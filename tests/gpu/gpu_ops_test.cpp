// The cuda runtime over every composite of ops/: compiled through NVRTC for every dtype and
// batch shape (no GPU needed: NVRTC compiles for sm_90, or $KILN_CUDA_ARCH, when none is
// present), and where a GPU is present run at every size of each test table against the
// interpreter. tests/gpu/run.sh runs this on a GPU machine.
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>

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
  // NVRTC is not instrumented and the rendering is the normal build's: one file is enough here,
  // and CI's time is better spent elsewhere.
  test::SweepCount n = test::check_runtime("cuda", {"ops/nn.toml"}, {}, {}, true);
  CHECK(n.compiled > 10 / test::sweep_shard().count);
#else
  test::SweepCount n = test::check_runtime("cuda", test::spec_files("ops"), {}, {}, true);
  CHECK(n.compiled > 100 / test::sweep_shard().count);
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
