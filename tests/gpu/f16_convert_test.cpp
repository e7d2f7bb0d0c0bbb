// The CUDA prelude's f32 -> f16 conversion (the hardware's cvt.rn, a NaN written as the shared
// software conversion writes it) against that software conversion, on every one of the 2^32
// floats, and its f16 -> f32 (the bare cvt: the same bits for every number, a NaN for a NaN) on
// every one of the 2^16 halves: compiled through NVRTC anywhere, run where a GPU is present.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/c_prelude.h"
#include "backends/cuda_prelude.h"
#include "runtimes/runtime.h"

using namespace kiln;

namespace {

/** Counts, into p.bad[0], the floats (and halves) whose two conversions differ, and the first
 *  one's bits (a half's with bit 40 set). */
const char* kCheck = R"(
struct kiln_check_params { unsigned long long* bad; };
extern "C" __global__ void kiln_f16_check_0(kiln_check_params p) {
  const unsigned long long n = 1ull << 32, stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float x = __uint_as_float((uint32_t)i);
    if (kiln_f32_to_f16(x) != kiln_f32_to_f16_bits(x)) {
      if (atomicAdd(&p.bad[0], 1ull) == 0) p.bad[1] = i;
    }
    const uint16_t h = (uint16_t)i;
    const float got = kiln_f16_to_f32(h), want = kiln_f16_to_f32_bits(h);
    if (i < 65536 && (want == want ? __float_as_uint(got) != __float_as_uint(want) : got == got)) {
      if (atomicAdd(&p.bad[0], 1ull) == 0) p.bad[1] = i | (1ull << 40);
    }
  }
}
)";

}  // namespace

TEST_CASE(
    "gpu: the CUDA prelude's f32 <-> f16 give the software conversions' bits, a NaN for a NaN") {
  std::unique_ptr<Runtime> rt = Runtime::open("cuda");
  if (rt->compiler_version() == "NVRTC (not found)") {
    MESSAGE("skipped: NVRTC not found");
    return;
  }
  const std::string source = std::string(kPreludeTypedefs) + kCudaPreludeHead + kPreludeFunctions +
                             kCudaPreludeTail + kCheck;
  std::vector<uint8_t> cubin = rt->build_artifact(source, [&] { return source; }, {});
  CHECK(cubin.size() > 4);
  void* bad = nullptr;
  try {
    bad = rt->alloc(16);
  } catch (const std::runtime_error& e) {
    MESSAGE("skipped the run: no GPU (" << std::string(e.what()) << ")");
    return;
  }
  const uint64_t zero[2] = {0, 0};
  rt->copy_to_device(bad, zero, sizeof zero);
  CompiledModule module = rt->compile(source, {}, nullptr, {"kiln_f16_check_0"});
  void* buffers[1] = {bad};
  LaunchGeometry geometry;
  geometry.grid = {4096, 1, 1};
  geometry.block = {256, 1, 1};
  rt->launch(module.lookup("kiln_f16_check_0"), buffers, nullptr, geometry, nullptr, 1, 0);
  rt->synchronize();
  uint64_t result[2] = {1, 0};
  rt->copy_to_host(result, bad, sizeof result);
  rt->synchronize();
  rt->free(bad);
  CAPTURE(result[1]);
  CHECK(result[0] == 0);
}
