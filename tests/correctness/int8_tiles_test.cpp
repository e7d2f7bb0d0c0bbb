// 8-bit products on vector tiles where there is no AMX (scheduler/register_tile.h; docs/
// decisions.md, "VNNI tiles"): every signedness of tests/regressions/int8_contractions.toml,
// bit for bit against the interpreter, under the dot products that other CPUs run: 32-byte
// VNNI, and without VNNI the bytes widened for two vpmaddwd on AVX-512 and on AVX2. The default
// (this CPU's choice) runs with the other regressions.
#include <doctest/doctest.h>

#include "driver/host_cpu.h"
#include "tests/support/runtime_sweep.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kSpecs = {"tests/regressions/int8_contractions.toml"};

}  // namespace

TEST_CASE("int8 tiles: every signedness on 32-byte VNNI vectors (VNNI=32)") {
  HostCpu cpu = host_cpu();
  if (sweep_runs_here(cpu.avx512_vnni || cpu.avx_vnni, "VNNI"))
    check_runtime("clang", kSpecs, {{"VNNI", "32"}});
}

TEST_CASE("int8 tiles: every signedness on AVX-512 without VNNI (widened bytes, vpmaddwd)") {
  if (sweep_runs_here(host_cpu().avx512bw, "AVX512BW"))
    check_runtime("tests/data/clang_no_vnni.toml", kSpecs);
}

TEST_CASE("int8 tiles: every signedness on AVX2 without VNNI (widened bytes, vpmaddwd)") {
  if (sweep_runs_here(host_cpu().avx2, "AVX2"))
    check_runtime("tests/data/openmp_avx2.toml", kSpecs, {{"VNNI", "32"}});
}
