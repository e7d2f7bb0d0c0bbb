/** \file
 * libFuzzer target of the safetensors reader (ir/safetensors.h): any bytes are either a header
 * whose tensors lie inside the data, each holding its shape's bytes, none overlapping, or one
 * SafetensorsError; a crash, a sanitizer report, another exception or a tensor outside the
 * bytes is a bug. Built with -DKILN_FUZZ=ON (clang only); .ci/run runs it for 20 seconds,
 * `build-fuzz/tests/kiln_safetensors_fuzzer -max_total_time=60` by hand (docs/testing.md).
 */
#include <cstdint>
#include <cstdlib>

#include "ir/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::SafetensorsHeader h = kiln::parse_safetensors(data, size, "fuzz.safetensors");
    uint64_t reached = 0;
    for (const kiln::SafetensorsEntry& e : h.tensors) {
      if (e.end < e.begin || h.data_start + e.end > size) std::abort();
      if (e.begin != e.end && e.begin < reached) std::abort();
      if (e.end > reached) reached = e.end;
    }
  } catch (const kiln::SafetensorsError&) {
  }
  return 0;
}
