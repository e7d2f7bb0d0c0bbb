/** \file
 * The cuda runtime plugin through Runtime, on any machine: NVRTC compiles (it needs no GPU;
 * the tests skip with a message where NVRTC is missing), and with no GPU every call that needs
 * one fails with one "no CUDA device found" line. Running kernels is tests/gpu/'s.
 */
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtimes/runtime.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/** y[i] = 2 x[i] in the CUDA calling convention: one struct of the buffers, then the sizes. */
const char* kScale = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
struct Params { float* x; float* y; __half* h; __nv_bfloat16* b; long long n; };
extern "C" __global__ void kiln_scale_0(Params p) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < p.n) p.y[i] = 2.0f * p.x[i] + __half2float(p.h[i]) + __bfloat162float(p.b[i]);
}
)";

/** Two kernels and a syntax error in the second. */
const char* kBroken = R"(struct P { float* x; long long n; };
extern "C" __global__ void kiln_first_0(P p) { p.x[0] = 1.0f; }
extern "C" __global__ void __launch_bounds__(256) kiln_second_1(P p) { p.x[0] = ; }
)";

/** A fresh cache folder for the runtime, removed at scope exit. */
struct CudaRuntime {
  fs::path cache;
  std::unique_ptr<Runtime> rt;
  CudaRuntime() {
    std::string templ = (fs::temp_directory_path() / "kiln-cuda-test-XXXXXX").string();
    cache = mkdtemp(templ.data());
    setenv("KILN_CACHE", cache.c_str(), 1);
    rt = Runtime::open("cuda");
  }
  ~CudaRuntime() {
    rt.reset();
    unsetenv("KILN_CACHE");
    std::error_code ec;
    fs::remove_all(cache, ec);
  }
  /** False, with a message, where NVRTC cannot be loaded: the compile tests skip. */
  bool has_nvrtc() const {
    if (rt->compiler_version() != "NVRTC (not found)") return true;
    MESSAGE("skipped: NVRTC not found on this machine (" << rt->describe_device() << ")");
    return false;
  }
  std::vector<uint8_t> build(const std::string& source) const {
    return rt->build_artifact(source, [&] { return source; }, {});
  }
  bool has_device() const { return !rt->describe_device().starts_with("no CUDA device"); }
};

bool is_elf(const std::vector<uint8_t>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' &&
         bytes[3] == 'F';
}

std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the cuda runtime loads on any machine and names its compiler and target") {
  CudaRuntime cuda;
  CHECK(cuda.rt->name() == "cuda");
  CHECK(cuda.rt->backend() == "cuda");
  CHECK(cuda.rt->compiler_version().starts_with("NVRTC"));
  CHECK(cuda.rt->target().starts_with("sm_"));
  CHECK(cuda.rt->describe_device().find("NVRTC") != std::string::npos);
  if (!cuda.has_nvrtc()) return;
  std::string version = cuda.rt->compiler_version();
  REQUIRE(version.size() > 6);
  CHECK(std::isdigit(static_cast<unsigned char>(version[6])));
}

TEST_CASE("NVRTC compiles CUDA C with the toolkit's fp16 and bf16 headers to a CUBIN") {
  CudaRuntime cuda;
  if (!cuda.has_nvrtc()) return;
  std::vector<uint8_t> cubin = cuda.build(kScale);
  CHECK(is_elf(cubin));
  CompileInfo info;
  CHECK(cuda.rt->build_artifact(
            kScale, [] { return std::string(kScale); }, {}, &info) == cubin);
  CHECK(info.cache_hit);
}

TEST_CASE("NVRTC compiles the CUDA goldens, the warpgroup (sm_90a) one for sm_90a") {
  CudaRuntime cuda;
  if (!cuda.has_nvrtc()) return;
  if (cuda.has_device() && !cuda.rt->target().starts_with("sm_90a")) {
    MESSAGE("skipped: the device is not sm_90a (" << cuda.rt->target() << ")");
    return;
  }
  unsetenv("KILN_CUDA_ARCH");  // sm_90a with no device
  for (const char* name : {"matmul_cuda", "matmul_cuda_f16", "matmul_cuda_f16_wgmma"}) {
    CAPTURE(name);
    std::ifstream f(std::string("tests/codegen/") + name + ".cu");
    std::stringstream text;
    text << f.rdbuf();
    REQUIRE_FALSE(text.str().empty());
    CHECK(is_elf(cuda.build(text.str())));
  }
}

TEST_CASE("an NVRTC error names the module's kernels and carries the whole log") {
  CudaRuntime cuda;
  if (!cuda.has_nvrtc()) return;
  std::string msg = message_of([&] { cuda.build(kBroken); });
  CAPTURE(msg);
  CHECK(
      msg.starts_with("cuda runtime: compile failed: NVRTC failed to compile kernels "
                      "kiln_first_0, kiln_second_1 for sm_"));
  CHECK(msg.find("NVRTC_ERROR_COMPILATION") != std::string::npos);
  CHECK(msg.find("kiln.cu(3): error: expected an expression") != std::string::npos);
  // A flag NVRTC refuses: the whole message still names the kernel.
  std::string bad = message_of(
      [&] { cuda.rt->build_artifact(kScale, [] { return std::string(kScale); }, {"--no-such"}); });
  CAPTURE(bad);
  CHECK(bad.find("kernel kiln_scale_0") != std::string::npos);
  CHECK(bad.find("NVRTC_ERROR_INVALID_OPTION") != std::string::npos);
}

TEST_CASE("a module's kernels compile on several threads to one CUBIN, also after a bad flag") {
  CudaRuntime cuda;
  if (!cuda.has_nvrtc()) return;
  const std::string two = std::string(kScale) + R"(
extern "C" __global__ void kiln_twice_1(Params p) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < p.n) p.y[i] = p.x[i] * p.x[i];
}
)";
  // One thread by default; KILN_NVRTC_SPLIT=1 adds --split-compile (then a flag NVRTC refuses
  // makes it retry without it and fail). The same kernels either way.
  for (const char* split : {"0", "1"}) {
    CAPTURE(split);
    setenv("KILN_NVRTC_SPLIT", split, 1);
    CHECK(message_of([&] {
            cuda.rt->build_artifact(two, [&] { return two; }, {"--no-such"});
          }).find("NVRTC_ERROR_INVALID_OPTION") != std::string::npos);
    std::vector<uint8_t> cubin = cuda.build(two);
    REQUIRE(is_elf(cubin));
    std::string bytes(cubin.begin(), cubin.end());
    CHECK(bytes.find("kiln_scale_0") != std::string::npos);
    CHECK(bytes.find("kiln_twice_1") != std::string::npos);
  }
  unsetenv("KILN_NVRTC_SPLIT");
}

TEST_CASE("with no device, KILN_CUDA_ARCH picks the architecture, which enters the cache key") {
  CudaRuntime cuda;
  if (cuda.has_device()) {
    MESSAGE("skipped: a CUDA device is present, whose architecture wins");
    return;
  }
  unsetenv("KILN_CUDA_ARCH");
  CHECK(cuda.rt->target() == "sm_90a (no device)");
  std::string key90 = cuda.rt->cache_key(kScale, {});
  setenv("KILN_CUDA_ARCH", "sm_80", 1);
  CHECK(cuda.rt->target() == "sm_80 (no device)");
  CHECK(cuda.rt->cache_key(kScale, {}) != key90);
  if (cuda.has_nvrtc()) {
    CHECK(is_elf(cuda.build(kScale)));
    std::string msg = message_of([&] { cuda.build(kBroken); });
    CHECK(msg.find("for sm_80 ") != std::string::npos);
  }
  unsetenv("KILN_CUDA_ARCH");
}

TEST_CASE("with no GPU every call that needs one says so in one line") {
  CudaRuntime cuda;
  if (cuda.has_device()) {
    MESSAGE("skipped: a CUDA device is present (" << cuda.rt->describe_device() << ")");
    return;
  }
  std::string describe = cuda.rt->describe_device();
  CHECK(describe.starts_with("no CUDA device ("));
  std::string alloc = message_of([&] { cuda.rt->alloc(64); });
  CAPTURE(alloc);
  CHECK(alloc.starts_with("cuda runtime: alloc of 64 bytes failed: no CUDA device found ("));
  CHECK(alloc.find('\n') == std::string::npos);
  float host[4] = {};
  std::string copy = message_of([&] { cuda.rt->copy_to_device(host, host, sizeof host); });
  CHECK(copy.starts_with("cuda runtime: copy failed: no CUDA device found ("));
  cuda.rt->copy_to_device(host, nullptr, 0);  // nothing to copy: no device needed
  cuda.rt->synchronize();                     // nothing launched: nothing to wait for
  if (!cuda.has_nvrtc()) return;
  std::string load = message_of([&] { cuda.rt->compile(kScale, {}, nullptr, {"kiln_scale_0"}); });
  CAPTURE(load);
  CHECK(load.starts_with("cuda runtime: load failed: no CUDA device found ("));
}
