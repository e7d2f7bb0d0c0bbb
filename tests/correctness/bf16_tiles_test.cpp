// bf16 products on vector tiles where there is no AMX (scheduler/register_tile.h; docs/
// decisions.md, "bf16 dot-product tiles"): every layout of tests/regressions/bf16_contractions.toml
// against the interpreter under the forms other CPUs run: vdpbf16ps on 32-byte vectors, the
// generated fallback (pairs widened to f32) on 64-byte vectors without AVX512-BF16 and on AVX2,
// and the f32 register tile with bf16 widened in its packs (BF16DOT=0). The default (this CPU's
// choice) runs with the other regressions.
#include <doctest/doctest.h>

#include "driver/host_cpu.h"
#include "tests/support/runtime_sweep.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kSpecs = {"tests/regressions/bf16_contractions.toml"};

}  // namespace

TEST_CASE("bf16 tiles: every layout on 32-byte vdpbf16ps vectors (BF16DOT=32)") {
  if (sweep_runs_here(host_cpu().avx512_bf16, "AVX512-BF16"))
    check_runtime("clang", kSpecs, {{"BF16DOT", "32"}});
}

TEST_CASE("bf16 tiles: every layout on AVX-512 without AVX512-BF16 (pairs widened to f32)") {
  if (sweep_runs_here(host_cpu().avx512f, "AVX-512"))
    check_runtime("tests/data/clang_no_bf16.toml", kSpecs);
}

TEST_CASE("bf16 tiles: every layout on AVX2 (pairs widened to f32 on 32-byte vectors)") {
  if (sweep_runs_here(host_cpu().avx2, "AVX2"))
    check_runtime("tests/data/openmp_avx2.toml", kSpecs, {{"BF16DOT", "32"}});
}

TEST_CASE("bf16 tiles: off (BF16DOT=0): the f32 register tile, bf16 widened in its packs") {
  if (sweep_runs_here(true, "")) check_runtime("clang", kSpecs, {{"BF16DOT", "0"}});
}
