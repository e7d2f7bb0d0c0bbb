/** \file
 * libFuzzer target of the .npy reader (ir/npy.h): any bytes are either a tensor whose element
 * count matches its shape or one NpyError; a crash, a sanitizer report, another exception or
 * an allocation the file's bytes do not justify is a bug. Built with -DKILN_FUZZ=ON (clang
 * only); run `build/tests/kiln_npy_fuzzer -max_total_time=60` (docs/testing.md).
 */
#include <cstdint>
#include <cstdlib>

#include "ir/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::Tensor t = kiln::parse_npy(data, size, "fuzz.npy");
    if (t.numel() * (kiln::dtype_bits(t.dtype) / 8) > size) std::abort();
  } catch (const kiln::NpyError&) {
  }
  return 0;
}
