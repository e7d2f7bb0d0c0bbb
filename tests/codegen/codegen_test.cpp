// Golden codegen tests (docs/testing.md, label codegen): the plain C source that
// lower_program(graph, backend_for("c"), CompileOptions{}) generates for a few kernels is pinned in
// tests/codegen/<name>.c, so a refactor that should not change code proves it does not.
//
// A mismatch prints the first differing line with its line number. When a change to the
// generated code is intended, regenerate the golden files and review the diff before committing:
//
//     KILN_UPDATE_GOLDEN=1 ctest --test-dir build -L codegen
//
// Every golden file must also be valid C: it is compiled with the system `cc -c -O2 -std=gnu11`
// into /tmp (skipped, with a message, when there is no cc). See docs/testing.md.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "backends/backend.h"
#include "driver/pipeline.h"
#include "dsl/lower.h"
#include "ir/verifier.h"

using namespace kiln;

namespace {

/** One pinned kernel: the composite, its dtypes and batch rank, and the golden file's name. */
struct GoldenCase {
  std::string name;    ///< tests/codegen/<name>.c
  std::string target;  ///< FILE:COMPOSITE
  std::map<std::string, DType> dtypes;
  int batch_rank = 0;
  std::string backend = "c";  ///< whose renderer and loop mappings
  bool amx = false;            ///< MATRIX=1: code for a CPU with AMX-BF16
  int mma_stages = 0;          ///< GPU_MMA's pipeline stages where > 0
  int dot_bytes = 0;           ///< VNNI=64 or 32: code for a CPU with VNNI (and no AMX)
  int bf16_dot_bytes = 0;      ///< BF16DOT=64 or 32: code for a CPU with AVX512-BF16 (no AMX)
  bool wgmma = false;          ///< code for a GPU with warpgroup instructions (sm_90a)
};

const std::vector<GoldenCase>& golden_cases() {
  static const std::vector<GoldenCase> cases = {
      {"softmax", "ops/nn.toml:softmax", {{"T", DType::f32}}, 1},
      {"matmul", "ops/nn.toml:matmul", {{"T", DType::f32}}, 0},
      {"gelu", "ops/math.toml:gelu", {{"T", DType::f32}}, 1},
      {"softmax_openmp", "ops/nn.toml:softmax", {{"T", DType::f32}}, 1, "openmp"},
      {"matmul_openmp", "ops/nn.toml:matmul", {{"T", DType::f32}}, 0, "openmp"},
      {"softmax_cuda", "ops/nn.toml:softmax", {{"T", DType::f32}}, 1, "cuda"},
      {"matmul_cuda", "ops/nn.toml:matmul", {{"T", DType::f32}}, 0, "cuda"},
      {"dense_gelu", "ops/nn.toml:dense_gelu", {{"T", DType::f32}}, 0},
      {"matmul_cuda_f16", "ops/nn.toml:matmul", {{"T", DType::f16}}, 0, "cuda"},
      {"matmul_bf16_amx", "ops/nn.toml:matmul", {{"T", DType::bf16}}, 0, "c", true},
      {"matmul_i8_vnni", "ops/quant.toml:matmul_i8", {{"A", DType::i8}}, 0, "c", false, 0, 64},
      {"matmul_bf16_dot", "ops/nn.toml:matmul", {{"T", DType::bf16}}, 0, "c", false, 0, 0, 64},
      {"matmul_cuda_f16_wgmma", "ops/nn.toml:matmul", {{"T", DType::f16}}, 0, "cuda", false, 0, 0,
       0, true},
      {"linear_bias_relu", "tests/regressions/linear_layouts.toml:linear_bias_relu",
       {{"T", DType::f32}}, 0},
      {"softmax_opencl", "ops/nn.toml:softmax", {{"T", DType::f32}}, 1, "opencl"},
      {"matmul_opencl", "ops/nn.toml:matmul", {{"T", DType::f32}}, 0, "opencl"},
      {"layernorm_opencl", "ops/nn.toml:layernorm", {{"T", DType::f16}}, 1, "opencl"},
      {"attention_cuda_f16", "ops/nn.toml:attention", {{"T", DType::f16}}, 0, "cuda"},
      {"attention_cuda_f16_wgmma", "ops/nn.toml:attention", {{"T", DType::f16}}, 0, "cuda", false,
       0, 0, 0, true},
      {"matmul_const_bf16_dot", "tests/regressions/bf16_contractions.toml:matmul_const_bf16",
       {{"T", DType::bf16}}, 0, "c", false, 0, 0, 64},
      {"matmul_const_i8_vnni", "tests/regressions/int8_contractions.toml:matmul_i8_i8_const", {}, 0,
       "c", false, 0, 64},
  };
  return cases;
}

/** The golden case named `name`. */
const GoldenCase& golden_case(const std::string& name) {
  for (const GoldenCase& c : golden_cases())
    if (c.name == name) return c;
  throw std::logic_error("no golden case " + name);
}

std::string golden_path(const GoldenCase& c) {
  return "tests/codegen/" + c.name +
         (c.backend == "cuda" ? ".cu" : c.backend == "opencl" ? ".cl" : ".c");
}

/** Lowers the composite with symbolic sizes and renders it with the default options. */
/** The source of case `c`; with `tile_variants`, kernels with a warpgroup tile are compiled at
 *  GPU_WGMMA's other shapes too (the goldens hold the one shape). */
std::string render_source(const GoldenCase& c, bool tile_variants = false) {
  Library lib;
  auto colon = c.target.rfind(':');
  const SpecFile& f = lib.load(c.target.substr(0, colon));
  const Composite* comp = f.find(c.target.substr(colon + 1));
  REQUIRE_MESSAGE(comp != nullptr, "no composite " << c.target);
  LowerOptions opt;
  opt.dtypes = c.dtypes;
  opt.batch_rank = c.batch_rank;
  Graph g = lower_composite(lib, *comp, opt);
  verify_or_throw(g);
  CompileOptions options;  // as driver/instantiate.cpp sets them for the backend's runtime
  backend_for(c.backend).configure_cuts(options.cut);
  options.schedule.amx_auto = false;
  options.schedule.amx_bf16 = c.amx;
  options.schedule.dot_auto = false;
  options.schedule.dot_bytes = c.dot_bytes;
  options.schedule.bf16_dot_auto = false;
  options.schedule.bf16_dot_bytes = c.bf16_dot_bytes;
  if (c.mma_stages > 0) options.schedule.gpu_tile.mma_stages = c.mma_stages;
  options.schedule.gpu_tile.wgmma = c.wgmma;
  if (!tile_variants) options.schedule.gpu_tile.wgmma_variants.clear();
  return lower_program(g, backend_for(c.backend), options).source;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

/** A unified-diff-like report of the first line where `want` and `got` differ. */
std::string first_difference(const std::string& path, const std::string& want,
                             const std::string& got) {
  std::vector<std::string> a = split_lines(want), b = split_lines(got);
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k])
    ++k;
  std::ostringstream msg;
  msg << "generated source differs from " << path << " (set KILN_UPDATE_GOLDEN=1 to rewrite)\n"
      << "--- " << path << "\n+++ generated\n@@ line " << k + 1 << " @@\n";
  if (k > 0) msg << " " << a[k - 1] << "\n";
  msg << "-" << (k < a.size() ? a[k] : "<end of file>") << "\n"
      << "+" << (k < b.size() ? b[k] : "<end of file>") << "\n";
  if (a.size() == b.size() && k == a.size()) msg << "(the files differ only in line endings)\n";
  return msg.str();
}

bool update_golden() {
  const char* v = std::getenv("KILN_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

void check_golden(const GoldenCase& c) {
  std::string got = render_source(c);
  std::string path = golden_path(c);
  if (update_golden()) {
    write_file(path, got);
    MESSAGE("rewrote " << path);
    return;
  }
  std::string want;
  REQUIRE_MESSAGE(read_file(path, want),
                  "missing " << path << " (run with KILN_UPDATE_GOLDEN=1 to create it)");
  if (want != got) FAIL_CHECK(first_difference(path, want, got));
}

bool have_cc() {
  return std::system("command -v cc >/dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("codegen: softmax f32, batch rank 1, matches its golden source") {
  check_golden(golden_cases()[0]);
}

TEST_CASE("codegen: matmul f32: a 3x64 register tile (3 rows of eight 8-lane vectors) in k blocks") {
  check_golden(golden_cases()[1]);
  std::string src = render_source(golden_cases()[1]);
  CHECK(src.find("typedef float kiln_vf32 __attribute__((vector_size(32), aligned(4)));") !=
        std::string::npos);
  // BLIS's order: b's lanes in blocks of 512 (256 x 512 floats, half a MiB), in them k blocks
  // of 256; b's panel of a k block packed for all the block's lane tiles, then the row tiles,
  // each sweeping the lane tiles.
  CHECK(src.find("for (int64_t c1c = 0; c1c < s_N; c1c += 512) {\n    for (int64_t c0c = 0; c0c < "
                 "s_M; c0c += 384) {\n      for (int64_t c2t = 0; c2t < s_K; c2t += 256) {") !=
        std::string::npos);
  CHECK(src.find("float pack0_0[131072] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("for (int64_t c0t = c0c; c0t < ((c0c + 384) < s_M ? (c0c + 384) : s_M); c0t += "
                 "3) {\n            for (int64_t c1t = c1c; c1t < ((c1c + 512) < (s_N - 63) ? (c1c + "
                 "512) : (s_N - 63)); c1t += 64) {") != std::string::npos);
  CHECK(src.find("kiln_vf32 tile0_2_0, tile0_2_1, tile0_2_2, tile0_2_3, tile0_2_4, tile0_2_5, "
                 "tile0_2_6, tile0_2_7;") != std::string::npos);
  CHECK(src.find("tile0_3_0") == std::string::npos);
  // Per k and vector: the vector of b's row that the rows share, loaded once from the pack;
  // then per row a broadcast of a and one multiply-add.
  CHECK(src.find("i1 = (c1t + 56), i2 = c2; kiln_vf32 kiln_lane0 = "
                 "kiln_vld_f32(&pack0_0[(c1t - pack0_base) * 256 + (c2 - c2t) * 64 + 56]);\n") !=
        std::string::npos);
  CHECK(src.find("{ const int64_t i0 = tile0_row2, i1 = (c1t + 56), i2 = c2; tile0_2_7 += "
                 "(b0[(s_K * i0 + i2)] * kiln_lane0); }") != std::string::npos);
  // The last row tile holds the rows left: the rows past them read the last row's operands
  // and are not stored; no tile of one row beside it.
  CHECK(src.find("const int64_t tile0_rows = (3 < (s_M - c0t) ? 3 : (s_M - c0t));\n") !=
        std::string::npos);
  CHECK(src.find("const int64_t tile0_row2 = c0t + (2 < tile0_rows ? 2 : tile0_rows - 1);\n") !=
        std::string::npos);
  CHECK(src.find("if (2 < tile0_rows) {\n") != std::string::npos);
  // The tiles accumulate in y itself (the view that drops the sum's kept axis is inverted,
  // build_statements.h): no temp, no copy.
  CHECK(src.find("kiln_vst_f32(&b2[(s_N * i0 + i1)], tile0_0_0); }") != std::string::npos);
  CHECK(src.find("b3") == std::string::npos);
  // The lanes past the last full tile: tiles of one vector, their loads and stores masked to
  // min(8, N - c1t) lanes; no unmasked tile of one vector beside them.
  CHECK(src.find("kiln_vldm_f32(b1, (s_N * i2 + i1), 0, (8 < (s_N - c1t) ? 8 : (s_N - c1t)), "
                 "(s_K * s_N))") != std::string::npos);
  CHECK(src.find("tile4") == std::string::npos);
}

TEST_CASE("codegen: matmul bf16 with AMX: 32x32 tiles of f32 sums over bf16 packs") {
  check_golden(golden_cases()[9]);
  std::string src = render_source(golden_cases()[9]);
  // b's block of 256 lanes by 1024 k in pairs (one 32-bit word a pair, k's value low), a's 32
  // rows per row tile; the tile configuration around the tiles of a row tile.
  CHECK(src.find("uint32_t pack1_0[131072] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("uint16_t pack0_0[32768] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("for (int64_t c2 = c2t; c2 < ((c2t + 1024) < s_K ? (c2t + 1024) : s_K); c2 += "
                 "2) {") != std::string::npos);
  CHECK(src.find("kiln_w |= (uint32_t)(uint16_t)b1[(s_N * i2 + i1)] << 16; }") != std::string::npos);
  CHECK(src.find("kiln_amx_begin();") < src.find("KILN_AMX_DP(tdpbf16ps, 0, 4, 6);"));
  CHECK(src.find("KILN_AMX_DP(tdpbf16ps, 3, 5, 7);") < src.find("kiln_amx_end();"));
  // The first k block starts from 0 in the tile registers; a whole tile moves between them and
  // the sums directly, a partial one through a local copy.
  CHECK(src.find("if ((c2t == 0)) {\n                    KILN_AMX_ZERO(0);") != std::string::npos);
  CHECK(src.find("KILN_AMX_LOAD(2, &b3[tile0_at + 16 * tile0_ld + 0], tile0_ld * 4);") !=
        std::string::npos);
  CHECK(src.find("KILN_AMX_LOAD(6, &pack1_0[(c1t - pack1_base) * 512 + kiln_kk * 16], 128);") !=
        std::string::npos);
  // The vector tile is not there: one copy of the reduction.
  CHECK(src.find("kiln_vf32 tile") == std::string::npos);
}

TEST_CASE("codegen: matmul i8 with VNNI: 6x64 tiles of i32 sums by vpdpbusd over 8-bit packs") {
  check_golden(golden_cases()[10]);
  std::string src = render_source(golden_cases()[10]);
  // Two i8 operands: a packed xor 0x80 (a + 128, unsigned), b in quads of k with its column
  // sums; per k quad four of b's vectors and each row's four bytes broadcast; per k block
  // -128 times the column sums.
  CHECK(src.find("uint32_t pack1_0[65536] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("int32_t pack1_s[256] = {0};") != std::string::npos);
  CHECK(src.find("uint8_t pack0_0[6144] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("= (uint8_t)(kiln_v ^ 0x80);") != std::string::npos);
  CHECK(src.find("tile0_3_3 = kiln_dpbusd64(tile0_3_3, kiln_a, kiln_b3);") != std::string::npos);
  CHECK(src.find("tile0_5_3 -= kiln_cs;") != std::string::npos);
  CHECK(src.find("kiln_amx_begin") == std::string::npos);
}

TEST_CASE("codegen: matmul bf16 with AVX512-BF16: 6x64 tiles of f32 sums by vdpbf16ps over bf16 packs") {
  check_golden(golden_cases()[11]);
  std::string src = render_source(golden_cases()[11]);
  // b's block of 256 lanes by 1024 k in pairs of k (one 32-bit word a pair, as for AMX), a's 6
  // rows as they are; per k pair four of b's vectors and each row's pair broadcast; no sign
  // corrections.
  CHECK(src.find("uint32_t pack1_0[131072] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("uint16_t pack0_0[6144] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("kiln_w |= (uint32_t)(uint16_t)b1[(s_N * i2 + i1)] << 16; }") != std::string::npos);
  CHECK(src.find("kiln_kk += 2) {") != std::string::npos);
  CHECK(src.find("tile0_3_3 = kiln_dpbf16ps64(tile0_3_3, kiln_a, kiln_b3);") != std::string::npos);
  CHECK(src.find("vdpbf16ps %2, %1, %0") != std::string::npos);
  // Past the last block's end only the rest of the k pair is zeroed, not the whole pack.
  CHECK(src.find("sizeof pack1_0") == std::string::npos);
  CHECK(src.find("kiln_cs") == std::string::npos);
  CHECK(src.find("kiln_dpbusd") == std::string::npos);
  CHECK(src.find("kiln_amx_begin") == std::string::npos);
}

TEST_CASE("codegen: a const bf16 or i8 weight's k pairs (quads) are packed once, kept across calls") {
  check_golden(golden_case("matmul_const_bf16_dot"));
  std::string src = render_source(golden_case("matmul_const_bf16_dot"));
  // w[k, n] const: b's pairs live in the workspace (one region of words, ceil(K / 2) of them
  // per lane, each lane tile from origin · ceil(K / 2)), filled only when its header says not;
  // a's rows are packed at every call as before.
  CHECK(src.find("uint32_t* restrict kiln_pw0 = (uint32_t*)(kiln_ws + 64);") != std::string::npos);
  CHECK(src.find("uint32_t* restrict pack1_0 = kiln_pw0 + (c2t) / 2 * 64;") != std::string::npos);
  CHECK(src.find("if (!kiln_packed) {") != std::string::npos);
  CHECK(src.find("uint32_t pack1_0[") == std::string::npos);
  CHECK(src.find("uint16_t pack0_0[6144] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(src.find("kiln_dpbf16ps64(") != std::string::npos);
  CHECK(src.find("*(int64_t*)kiln_ws = 1;") != std::string::npos);
  CHECK(src.find("((((s_K)) + 1) / 2 * (((s_N)) + 64) + 15) / 16 * 64") != std::string::npos);

  check_golden(golden_case("matmul_const_i8_vnni"));
  src = render_source(golden_case("matmul_const_i8_vnni"));
  // i8 by i8: the quads and each k block's column sums kept (the sums zeroed before the fill).
  CHECK(src.find("uint32_t* restrict kiln_pw0 = (uint32_t*)(kiln_ws + 64);") != std::string::npos);
  CHECK(src.find("int32_t* restrict kiln_pw1 = (int32_t*)(kiln_ws + 64 + ") != std::string::npos);
  CHECK(src.find("int32_t* restrict pack1_s = kiln_pw1 + ") != std::string::npos);
  CHECK(src.find("__builtin_memset(pack1_s, 0, 256 * sizeof *pack1_s);") != std::string::npos);
  CHECK(src.find("int32_t pack1_s[256] = {0};") == std::string::npos);
  CHECK(src.find("= (uint8_t)(kiln_v ^ 0x80);") != std::string::npos);
  CHECK(src.find("tile0_5_3 -= kiln_cs;") != std::string::npos);
}

TEST_CASE("codegen: x · wᵀ: the pack's fill reads w along k and transposes 8 x 8 blocks") {
  check_golden(golden_cases()[13]);
  std::string src = render_source(golden_cases()[13]);
  // Whole groups of 8 k rows: each of 8 lanes' rows of w one 32-byte vector, three stages of
  // shuffles, 8 stores of k rows; the k rows after the last whole group one at a time, each
  // lane's element on its own.
  CHECK(src.find("c2 < (((c2t + 256) < s_K ? (c2t + 256) : s_K) - 7); c2 += 8) {") !=
        std::string::npos);
  CHECK(src.find("kiln_x0_0_7 = kiln_vld_f32(") != std::string::npos);
  size_t shuffles = 0;  // stage 2's: 8 per block of 8 lanes, 8 blocks
  for (size_t at = src.find("= __builtin_shufflevector(kiln_x0_2_"); at != std::string::npos;
       at = src.find("= __builtin_shufflevector(kiln_x0_2_", at + 1))
    ++shuffles;
  CHECK(shuffles == 8 * 8);
  CHECK(src.find("kiln_vst_f32(&pack0_0[(c1t - pack0_base) * 256 + (c2 - c2t) * 64 + 448], "
                 "kiln_x0_3_7);") != std::string::npos);
  CHECK(src.find("(kiln_vf32){b1[(s_K * i1 + i2)], b1[(s_K + s_K * i1 + i2)]") != std::string::npos);
}

TEST_CASE("codegen: x · wᵀ with a plain weight: a row block of at most 4 rows runs along k") {
  // The dot-product form (register_tile.h): no pack, w's rows read where they lie; one row
  // by 4 lanes, or 4 rows by 2 lanes, of vectors of 8 partial sums over k, each row's x and
  // each lane's w loaded once per 8 k, summed across the vector after the whole vectors, the k
  // left one at a time, stored (the init folded in), then the bias and the ReLU on the tile's
  // elements.
  const std::string src = render_source(golden_cases()[13]);
  CHECK(src.find("if ((s_M - c0c) <= 4) {") != std::string::npos);
  CHECK(src.find("if ((s_M - c0c) > 4) {") != std::string::npos);
  CHECK(src.find("if ((s_M - c0c) == 1) {") != std::string::npos);
  CHECK(src.find("if ((s_M - c0c) > 1) {") != std::string::npos);
  CHECK(src.find("for (int64_t c2 = 0; c2 < (s_K - 7); c2 += 8) {") != std::string::npos);
  CHECK(src.find("tile2_w1_3 = kiln_vld_f32(&b1[(s_K * i1 + i2)]); }") != std::string::npos);
  CHECK(src.find("tile2_0_3 += (tile2_x0_0 * tile2_w1_3);") != std::string::npos);
  CHECK(src.find("tile3_x0_3 = kiln_vld_f32(&b0[(s_K * i0 + i2)]); }") != std::string::npos);
  CHECK(src.find("tile3_3_1 += (tile3_x0_3 * tile3_w1_1);") != std::string::npos);
  CHECK(src.find("for (int64_t c2 = ((s_K / 8) * 8); c2 < s_K; c2 += 1) {") != std::string::npos);
  CHECK(src.find("if (3 < tile3_rows && 1 < tile3_lanes) { const int64_t i0 = tile3_row3, i1 = "
                 "tile3_lane1; b4[(s_N * i0 + i1)] = tile3_s3_1; }") != std::string::npos);
  // f16 operands along k: one vector of halves converted at once where the processor has F16C
  // (vcvtph2ps), each element converted elsewhere; bf16 widened by the renderer's shifts.
  const GoldenCase f16 = {"", "tests/regressions/linear_layouts.toml:linear_t_plain",
                          {{"T", DType::f16}}, 0};
  const std::string h = render_source(f16);
  CHECK(h.find("#ifdef KILN_F16C\n") != std::string::npos);
  CHECK(h.find("kiln_vh kiln_h; memcpy(&kiln_h, &b1[(s_K * i1 + i2)], sizeof kiln_h); "
               "__builtin_convertvector(kiln_h, kiln_vf32); });") != std::string::npos);
  const GoldenCase bf16 = {"", "tests/regressions/linear_layouts.toml:linear_t_plain",
                           {{"T", DType::bf16}}, 0};
  CHECK(render_source(bf16).find("kiln_bf16_to_f32(b1[(7 + s_K * i1 + i2)])") !=
        std::string::npos);
}

TEST_CASE("codegen: gelu f32, batch rank 1, matches its golden source") {
  check_golden(golden_cases()[2]);
}

TEST_CASE("codegen: softmax on openmp: rows across threads, the sum's register across lanes") {
  check_golden(golden_cases()[3]);
  std::string src = render_source(golden_cases()[3]);
  CHECK(src.find("#pragma omp parallel for schedule(static)\n  for (int64_t c0 = 0;") !=
        std::string::npos);
  CHECK(src.find("#pragma omp simd reduction(+:acc1)") != std::string::npos);
}

TEST_CASE("codegen: matmul on openmp: lane blocks by row blocks across threads, each its own pack") {
  check_golden(golden_cases()[4]);
  std::string src = render_source(golden_cases()[4]);
  CHECK(src.find("#pragma omp parallel for schedule(static) collapse(2)\n  for (int64_t c1c = 0; c1c "
                 "< s_N; c1c += 512) {\n    for (int64_t c0c = 0; c0c < s_M; c0c += 384) {") !=
        std::string::npos);
}

TEST_CASE("codegen: softmax on cuda: rows to groups of threads, group reductions, barriers") {
  check_golden(golden_cases()[5]);
  std::string src = render_source(golden_cases()[5]);
  // A warp per row where the row is short, else the block (scheduler/group_rows.h), chosen from
  // the row's length N when the kernel runs: a warp up to 8 16-byte vectors of f32 a thread.
  const std::string T = "(int64_t)(((s_N > 0 ? s_N : 0) <= 1024) ? 32 : 256)";
  CHECK(src.find("for (int64_t c0 = 0 + ((int64_t)blockIdx.x * ((int64_t)blockDim.x / " + T +
                 ") + (int64_t)threadIdx.x / " + T + "); c0 < s_batch0; c0 += ((int64_t)gridDim.x * "
                 "((int64_t)blockDim.x / " + T + ")))") != std::string::npos);
  CHECK(src.find("acc0 = kiln_group_reduce(acc0, (float)-KILN_INF, kiln_max(), " + T + ");") !=
        std::string::npos);
  CHECK(src.find("acc1 = kiln_group_reduce(acc1, (float)0, kiln_sum(), " + T + ");") !=
        std::string::npos);
  CHECK(src.find("kiln_group_sync(" + T + ");") != std::string::npos);
  CHECK(src.find("extern \"C\" __global__ void __launch_bounds__(256) kiln_softmax_0(const "
                 "kiln_params p)") != std::string::npos);
}

TEST_CASE("codegen: memory-bound thread loops on cuda move 16-byte vectors") {
  auto count = [](const std::string& src, const std::string& what) {
    size_t n = 0;
    for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1))
      ++n;
    return n;
  };
  // softmax: each of the row's three passes loads x in vectors of 16 bytes (4 f32, 8 f16), one
  // block per row; one plain loop runs the iterations before the first aligned vector and
  // after the last.
  for (auto [t, lanes] : {std::pair{DType::f32, 4}, std::pair{DType::f16, 8}}) {
    CAPTURE(dtype_name(t));
    std::string src = render_source({"softmax", "ops/nn.toml:softmax", {{"T", t}}, 1, "cuda"});
    CHECK(count(src, "= *(const uint4*)kiln_at;") == 3);
    CHECK(count(src, "*(uint4*)kiln_at = *(const uint4*)kiln_v;") == 1);  // y
    CHECK(count(src, "kiln_c += " + std::to_string(lanes) + " * (int64_t)(") == 3);  // T threads
    CHECK(count(src, "if (!kiln_aligned) {") == 3);
    CHECK(count(src, "for (int64_t kiln_r = ((int64_t)threadIdx.x % (int64_t)(") == 3);
  }
  // w*x + y*z: a grid-stride loop over every thread of the grid, four loads and the store.
  std::string mam = render_source({"mul_add_mul", "ops/math.toml:mul_add_mul", {}, 0, "cuda"});
  CHECK(count(mam, "= *(const uint4*)kiln_at;") == 4);
  CHECK(count(mam, "*(uint4*)kiln_at = *(const uint4*)kiln_v;") == 1);
  CHECK(mam.find("kiln_c += 4 * ((int64_t)gridDim.x * blockDim.x)") != std::string::npos);
  // A transpose reads x along a column: its loads stay scalar, its contiguous stores do not.
  std::string tr = render_source({"transpose", "ops/tensor.toml:transpose", {}, 0, "cuda"});
  CHECK(count(tr, "= *(const uint4*)kiln_at;") == 0);
  // Under CHECK=1 every access is checked: no vectors.
  Library lib;
  const Composite* sm = lib.load("ops/nn.toml").find("softmax");
  REQUIRE(sm != nullptr);
  LowerOptions opt;
  opt.dtypes = {{"T", DType::f32}};
  Graph g = lower_composite(lib, *sm, opt);
  CompileOptions options;
  backend_for("cuda").configure_cuts(options.cut);
  options.checked = true;
  CHECK(lower_program(g, backend_for("cuda"), options).source.find("kiln_aligned") ==
        std::string::npos);
}

TEST_CASE("codegen: matmul on cuda: block tiles across blocks, operands staged in shared memory") {
  check_golden(golden_cases()[6]);
  std::string src = render_source(golden_cases()[6]);
  // One loop over the 128x128 tiles across the grid; each operand's k block in shared memory,
  // filled by all threads; 8x8 elements per thread.
  CHECK(src.find("t_c0_c1 += (int64_t)gridDim.x)") != std::string::npos);
  CHECK(src.find("__shared__ __align__(16) float tile0_s0[8][132];") != std::string::npos);
  CHECK(src.find("__shared__ __align__(16) float tile0_s1[8][132];") != std::string::npos);
  CHECK(src.find("float tile0_acc[8][8];") != std::string::npos);
  CHECK(src.find("const int tile0_e = threadIdx.x + 256 * tile0_p;") != std::string::npos);
  // The next k block's operands are loaded into registers while this one computes; each
  // thread reads its rows and lanes in 16-byte groups.
  CHECK(src.find("const int64_t tile0_next = tile0_k + 8;") != std::string::npos);
  CHECK(src.find("kiln_lds4(tile0_o1 + 4, &tile0_s1[tile0_kk][64 + tile0_tc * 4]);") !=
        std::string::npos);
  // a (M x K) is filled along k, b (K x N) along its columns: both coalesced, in chunks of 4
  // floats, each one 16-byte load where it lies inside the matrix at an aligned address.
  CHECK(src.find("const int tile0_kk = tile0_e % 2 * 4, tile0_x = tile0_e / 2;") !=
        std::string::npos);
  CHECK(src.find("const int tile0_x = tile0_e % 32 * 4, tile0_kk = tile0_e / 32;") !=
        std::string::npos);
  CHECK(src.find("if (((uint64_t)tile0_a & 15) == 0) {") != std::string::npos);
  CHECK(src.find("tile0_acc[tile0_m][tile0_n] = tile0_acc[tile0_m][tile0_n] + "
                 "(float)((tile0_o0[tile0_m] * tile0_o1[tile0_n]));") != std::string::npos);
  CHECK(src.find("= kiln_block_reduce(") == std::string::npos);
}

TEST_CASE("codegen: f16 matmul on cuda: tensor cores, fragments from shared memory") {
  check_golden(golden_cases()[8]);
  std::string src = render_source(golden_cases()[8]);
  // a as [rows][k] (an m16 tile's fragments by one ldmatrix.x4), b as [k][lanes] (two n8 tiles'
  // by one ldmatrix.x4.trans), both as stored, in three stages of the kernel's dynamic shared
  // memory (which the module declares for the plugin); 16 products of m16n8k16 per warp and
  // k16 step.
  CHECK(src.find("uint16_t (*const tile0_s0)[128][40] = (uint16_t (*)[128][40])(kiln_shared + "
                 "0);") != std::string::npos);
  CHECK(src.find("uint16_t (*const tile0_s1)[32][136] = (uint16_t (*)[32][136])(kiln_shared + "
                 "30720);") != std::string::npos);
  CHECK(src.find("extern \"C\" __device__ unsigned kiln_matmul_0_shared_bytes = 56832;") !=
        std::string::npos);
  CHECK(src.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
  CHECK(src.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
  CHECK(src.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
  // Copies: cp.async from the chunk's address at block 0 plus k0 strides; the pipeline waits
  // for all but the newest group, then one barrier per block.
  CHECK(src.find("const uint16_t* tile0_a = tile0_g0[tile0_p] + tile0_k * tile0_d0;") !=
        std::string::npos);
  CHECK(src.find("kiln_cp_async16(&tile0_s0[tile0_ws][tile0_x][tile0_kk + 0], tile0_a);") !=
        std::string::npos);
  CHECK(src.find("kiln_cp_async_wait<1>();") != std::string::npos);
  // The next k step's fragments are loaded before this step's products.
  CHECK(src.find("tile0_fa[1][tile0_t][0]") < src.find("\"r\"(tile0_fa[0][tile0_m][0])"));

  // With one stage: static arrays, the next block's operands in registers meanwhile.
  GoldenCase one = golden_cases()[8];
  one.mma_stages = 1;
  std::string reg = render_source(one);
  CHECK(reg.find("__shared__ __align__(16) uint16_t tile0_s0[128][40];") != std::string::npos);
  CHECK(reg.find("kiln_ld16(&tile0_p0[tile0_p * 8], tile0_a);") != std::string::npos);
  CHECK(reg.find("_shared_bytes") == std::string::npos);
}

TEST_CASE("codegen: f16 matmul for sm_90a: wgmma from swizzled shared memory") {
  check_golden(golden_cases()[12]);
  std::string src = render_source(golden_cases()[12]);
  // A 128x256 tile of two warpgroups: a as [rows][k] and b as [k][lanes] in 128-byte swizzled
  // rows, four stages (192 KiB) at 1 KiB boundaries; one m64n256k16 per k step, b transposed
  // by the instruction (its N-major form), a K-major; the accumulators' last reads after the
  // final wait.
  CHECK(src.find("uint16_t (*const tile0_s0)[8192] = (uint16_t (*)[8192])(kiln_shared + 0);") !=
        std::string::npos);
  CHECK(src.find("extern \"C\" __device__ unsigned kiln_matmul_0_shared_bytes = 196608;") !=
        std::string::npos);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, ") !=
        std::string::npos);
  CHECK(src.find("p, 1, 1, 0, 1;") != std::string::npos);
  CHECK(src.find("kiln_wgmma_desc(tile0_ub + tile0_t * 2048, 8192, 1024)") != std::string::npos);
  CHECK(src.find("kiln_wgmma_desc(tile0_ua + tile0_m * 8192 + tile0_t * 32, 16, 1024)") !=
        std::string::npos);
  // Copies: one address per operand, chunks at constant steps, swizzled shared offsets; the
  // copies fenced for the async proxy before the barrier; one block of wgmma left running.
  CHECK(src.find("kiln_cp_async16_to(tile0_sb + 2 * ((tile0_x) * 64 + ((((tile0_kk) / 8) ^ "
                 "((tile0_x) % 8)) * 8) + (tile0_kk) % 8), tile0_a);") != std::string::npos);
  CHECK(src.find("kiln_fence_proxy_async();\n        __syncthreads();") != std::string::npos);
  CHECK(src.find("kiln_wgmma_wait<1>();") != std::string::npos);
  CHECK(src.find("kiln_fence_operand(tile0_acc[tile0_m][tile0_n]);") < src.find("tile0_o["));
  // The f32 sum never reaches memory: the epilogue reads it from shared memory and casts it.
  CHECK(src.find("b3[") == std::string::npos);
  CHECK(src.find("kiln_f32_to_f16((float)tile0_v)") != std::string::npos);
}

TEST_CASE("codegen: a warpgroup tile's kernel is compiled at each GPU_WGMMA shape") {
  std::string src = render_source(golden_cases()[12], true);
  // The kernel at 128x256x4, then one function a shape, each with its own shared memory and
  // occupancy: 128 KiB for 128x128x4 (one block a multiprocessor), 96 KiB for 128x64x4 (two).
  CHECK(src.find("extern \"C\" __device__ unsigned kiln_matmul_0_shared_bytes = 196608;") !=
        std::string::npos);
  CHECK(src.find("extern \"C\" __device__ unsigned kiln_matmul_0_w128x128x4_shared_bytes = "
                 "131072;") != std::string::npos);
  CHECK(src.find("extern \"C\" __device__ unsigned kiln_matmul_0_w128x64x4_shared_bytes = "
                 "98304;") != std::string::npos);
  CHECK(src.find("extern \"C\" __device__ unsigned kiln_matmul_0_w128x128x3_shared_bytes = "
                 "98304;") != std::string::npos);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") != std::string::npos);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") != std::string::npos);
  CHECK(src.find("kiln_matmul_0_w128x64x4(const kiln_params p)") != std::string::npos);
  // A product without a warpgroup tile (f32) has no variants.
  GoldenCase single = golden_cases()[12];
  single.dtypes = {{"T", DType::f32}};
  std::string f32 = render_source(single, true);
  CHECK(f32.find("_w128x") == std::string::npos);
}

TEST_CASE("codegen: f16 attention on cuda: one kernel, the scores in registers only") {
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(dtype_name(t));
    std::string src = render_source({"attention", "ops/nn.toml:attention", {{"T", t}}, 0, "cuda"});
    size_t kernels = 0;
    for (size_t at = src.find("__global__"); at != std::string::npos;
         at = src.find("__global__", at + 1))
      ++kernels;
    CHECK(kernels == 1);
    // Its tiles' work differs (a causal triangle): the plugin launches a block per tile.
    CHECK(src.find("_whole_grid = 1;") != std::string::npos);
    // q, k, v, y, then the scores, the row max, the row sum and the weighted sum: the first
    // three temporaries live in registers, never in memory.
    for (const char* temp : {"b4[", "b5[", "b6["})
      CHECK(src.find(temp) == std::string::npos);
    const std::string kind = t == DType::bf16 ? "bf16" : "f16";
    const std::string mma = "mma.sync.aligned.m16n8k16.row.col.f32." + kind + "." + kind + ".f32";
    size_t first = src.find(mma);
    REQUIRE(first != std::string::npos);
    CHECK(src.find(mma, first + 1) != std::string::npos);  // the scores, then the weights × v
    CHECK(src.find("kiln_pack_" + kind + "x2(") != std::string::npos);
    CHECK(src.find("__shfl_xor_sync") != std::string::npos);  // row maxima and sums
  }
}

TEST_CASE("codegen: dense_gelu f32: bias and GELU run on each register tile after its last k block") {
  check_golden(golden_cases()[7]);
  std::string src = render_source(golden_cases()[7]);
  // After the 3x64 tile's store, in the last k block: the epilogue over its rows (3, fewer in
  // the last row tile) and 64 lanes.
  // (w is const: its panels are kept, the rows one block; docs/decisions.md.)
  CHECK(src.find("kiln_vst_f32(&b4[(s_N * i0 + i1)], tile0_2_7); }\n"
                 "              }\n"
                 "            }\n"
                 "            if ((c2t + 256) >= s_K) {\n"
                 "              for (int64_t c0 = c0t; c0 < (c0t + (3 < (s_M - c0t) ? 3 : (s_M - "
                 "c0t))); c0 += 1) {\n"
                 "                for (int64_t c1 = c1t; c1 < (c1t + 64); c1 += 1) {") !=
        std::string::npos);
  // The separate pass over the result runs only when no k block does (K = 0).
  CHECK(src.find("if (0 >= s_K) {") != std::string::npos);
}

TEST_CASE("codegen: f16 attention: one kernel, its products on mma.sync or, for sm_90a, wgmma") {
  check_golden(golden_case("attention_cuda_f16"));
  check_golden(golden_case("attention_cuda_f16_wgmma"));
  const std::string sync = render_source(golden_case("attention_cuda_f16"));
  const std::string wg = render_source(golden_case("attention_cuda_f16_wgmma"));
  // mma.sync: padded shared rows read through ldmatrix, no warpgroup instruction.
  CHECK(sync.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
  CHECK(sync.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
  CHECK(sync.find("wgmma.mma_async") == std::string::npos);
  CHECK(sync.find("extern \"C\" __device__ unsigned kiln_attention_0_shared_bytes = 88064;") !=
        std::string::npos);
  // wgmma: q, k and v swizzled in 128-byte rows (80 KiB), copies fenced for the async proxy;
  // the scores' steps K-major from shared memory, 4 or 8 straight-line steps by the head;
  // the weights from registers, v transposed by the instruction.
  CHECK(wg.find("asm volatile(\"ldmatrix") == std::string::npos);
  CHECK(wg.find("extern \"C\" __device__ unsigned kiln_attention_0_shared_bytes = 81920;") !=
        std::string::npos);
  CHECK(wg.find("[(fa0_y / 64 * 64 + fa0_x) * 64 + ((fa0_y % 64 / 8) ^ (fa0_x % 8)) * 8]") !=
        std::string::npos);
  CHECK(wg.find("kiln_cp_async_wait_all();\n        kiln_fence_proxy_async();\n        "
                "__syncthreads();") != std::string::npos);
  CHECK(wg.find("if (fa0_dk > 64) {") != std::string::npos);
  CHECK(wg.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, ") != std::string::npos);
  CHECK(wg.find("}, %32, %33, p, 1, 1, 0, 0;") != std::string::npos);
  CHECK(wg.find("}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;") != std::string::npos);
  CHECK(wg.find("kiln_wgmma_desc(fa0_vst + fa0_kk * 2048, 8192, 1024)") != std::string::npos);
  CHECK(wg.find("kiln_wgmma_wait<0>();") != std::string::npos);
}

TEST_CASE("codegen: every golden source compiles with cc -c -O2 -std=gnu11") {
  if (!have_cc()) {
    MESSAGE("skipped: no cc on PATH");
    return;
  }
  for (const GoldenCase& c : golden_cases()) {
    if (c.backend == "cuda" || c.backend == "opencl") continue;  // NVRTC, OpenCL: below
    CAPTURE(c.name);
    std::string object = (std::filesystem::temp_directory_path() /
                          ("kiln_codegen_" + c.name + "_" + std::to_string(getpid()) + ".o"))
                             .string();
    std::string log = object + ".log";
    std::string cmd = "cc -c -O2 -std=gnu11 " +
                      std::string(c.backend == "openmp" ? "-fopenmp " : "") + golden_path(c) +
                      " -o " + object + " >" + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::string out;
    read_file(log, out);
    CHECK_MESSAGE(rc == 0, cmd << "\n" << out);
    std::filesystem::remove(object);
    std::filesystem::remove(log);
  }
}

TEST_CASE("codegen: softmax on opencl: CUDA's schedule, OpenCL C's names") {
  const GoldenCase& c = golden_cases()[14];
  check_golden(c);
  std::string src = render_source(c);
  // The same mappings as softmax_cuda: a work-group per row, block reductions, barriers.
  CHECK(src.find("for (int64_t c0 = 0 + (int64_t)get_group_id(0); c0 < s_batch0; c0 += "
                 "(int64_t)get_num_groups(0))") != std::string::npos);
  CHECK(src.find("acc0 = kiln_block_reduce_max_float(acc0, kiln_scratch);") != std::string::npos);
  CHECK(src.find("acc1 = kiln_block_reduce_sum_float(acc1, kiln_scratch);") != std::string::npos);
  CHECK(src.find("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);") != std::string::npos);
  // Every buffer (x, y and the two temporaries' slots), then every size: one argument each; then
  // the reductions' local scratch, an argument the plugin sizes, never a kernel-scope array
  // (work-groups running at once on PoCL's threads saw each other's).
  CHECK(src.find("__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void "
                 "kiln_softmax_0(__global void* p0, __global void* p1, __global void* p2, "
                 "__global void* p3, const long s0, const long s1, __local ulong* "
                 "kiln_scratch)") != std::string::npos);
  CHECK(src.find("__local ulong kiln_scratch[") == std::string::npos);
  CHECK(src.find("__syncthreads") == std::string::npos);
  CHECK(src.find("threadIdx") == std::string::npos);
}

TEST_CASE("codegen: matmul f32 and layernorm f16 on opencl match their golden sources") {
  check_golden(golden_cases()[15]);
  check_golden(golden_cases()[16]);
  // No tensor cores, no cp.async on an OpenCL target, whatever GPU_MMA says.
  std::string f16 = render_source({"matmul", "ops/nn.toml:matmul", {{"T", DType::f16}}, 0, "opencl"});
  CHECK(f16.find("mma") == std::string::npos);
  CHECK(f16.find("cp_async") == std::string::npos);
}

TEST_CASE("codegen: a product on opencl takes CUDA's SIMT block tile, in local memory") {
  // One schedule: where CUDA takes no tensor cores (f32, f64, and x · wᵀ with a bias and a ReLU),
  // the opencl backend's loop IR and transforms are CUDA's, block tile included (short rows in
  // groups of threads aside: CUDA's alone).
  auto lowered = [](const std::string& target, DType t, const std::string& backend) {
    Library lib;
    auto colon = target.rfind(':');
    const Composite* comp = lib.load(target.substr(0, colon)).find(target.substr(colon + 1));
    REQUIRE(comp != nullptr);
    LowerOptions opt;
    opt.dtypes = {{"T", t}};
    Graph g = lower_composite(lib, *comp, opt);
    CompileOptions options;
    backend_for(backend).configure_cuts(options.cut);
    options.schedule.gpu_tile.wgmma_variants.clear();
    options.schedule.gpu_row_groups = false;  // CUDA's one step OpenCL lacks (group_rows.h)
    return lower_program(g, backend_for(backend), options);
  };
  for (const auto& [target, t] : std::vector<std::pair<std::string, DType>>{
           {"ops/nn.toml:matmul", DType::f32},
           {"ops/nn.toml:matmul", DType::f64},
           {"ops/nn.toml:bmm", DType::f32},
           {"tests/regressions/linear_layouts.toml:linear_bias_relu", DType::f32}}) {
    CAPTURE(target);
    CAPTURE(dtype_name(t));
    LoweredProgram cuda = lowered(target, t, "cuda"), ocl = lowered(target, t, "opencl");
    CHECK(ocl.transforms == cuda.transforms);
    REQUIRE(ocl.nests.size() == cuda.nests.size());
    bool tiled = false;
    for (size_t k = 0; k < ocl.nests.size(); ++k) {
      CHECK(loop_nest_to_text(ocl.nests[k]) == loop_nest_to_text(cuda.nests[k]));
      tiled |= ocl.transforms[k].find("gpu block tile") != std::string::npos;
    }
    CHECK(tiled);
  }
  // f16 takes SIMT cores where CUDA takes mma.sync: the same tile, 8x8 a work-item.
  CHECK(lowered("ops/nn.toml:matmul", DType::f16, "opencl").source.find(
            "a 128x128 block tile of S1, 8x8 per thread") != std::string::npos);
  // The golden's tile: staged operands in the kernel's __local scratch past the reductions' 2 KiB,
  // local barriers, 4-element local reads, and the kernel that tells the plugin the local bytes.
  const std::string src = render_source(golden_case("matmul_opencl"));
  CHECK(src.find("/* tile0: a 128x128 block tile of S1, 8x8 per thread") != std::string::npos);
  CHECK(src.find("__kernel void kiln_matmul_0_shared_bytes(__global uint* out) { out[0] = "
                 "8448u; }") != std::string::npos);
  CHECK(src.find("__local float (*const tile0_s0)[132] = (__local float (*)[132])((__local "
                 "uchar*)kiln_scratch + 2048);") != std::string::npos);
  CHECK(src.find("__local float (*const tile0_s1)[132] = (__local float (*)[132])((__local "
                 "uchar*)kiln_scratch + 6272);") != std::string::npos);
  CHECK(src.find("barrier(CLK_LOCAL_MEM_FENCE);") != std::string::npos);
  CHECK(src.find("kiln_lds4(tile0_o0 + 0, &tile0_s0[tile0_kk][") != std::string::npos);
  for (const char* cuda_only : {"__shared__", "__syncthreads", "threadIdx", "__align__"})
    CHECK_MESSAGE(src.find(cuda_only) == std::string::npos, cuda_only);
}

TEST_CASE("codegen: every OpenCL golden source compiles with clang -x cl -cl-std=CL1.2") {
  const char* clang = std::system("command -v clang-19 >/dev/null 2>&1") == 0 ? "clang-19"
                      : std::system("command -v clang >/dev/null 2>&1") == 0 ? "clang"
                                                                              : nullptr;
  if (!clang) {
    MESSAGE("skipped: no clang on PATH");
    return;
  }
  for (const GoldenCase& c : golden_cases()) {
    if (c.backend != "opencl") continue;
    CAPTURE(c.name);
    std::string log = (std::filesystem::temp_directory_path() /
                       ("kiln_codegen_" + c.name + "_" + std::to_string(getpid()) + ".log"))
                          .string();
    std::string cmd = std::string(clang) +
                      " -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only " +
                      golden_path(c) + " >" + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::string out;
    read_file(log, out);
    CHECK_MESSAGE(rc == 0, cmd << "\n" << out);
    std::filesystem::remove(log);
  }
}

TEST_CASE("codegen: an index dividing by a run-time size is computed before its load's mask") {
  // The masked-load crash (docs/decisions.md): `cond ? x[... / (C / 24) ...] : 0` let LLVM 19
  // predicate the division per lane and address the load from lane 0's. The index must be a
  // local computed unconditionally, with a division that cannot trap.
  std::string src = render_source({"", "tests/regressions/conv_depthwise.toml:conv_depthwise"});
  size_t k0 = src.find("const int64_t k0 = ");
  REQUIRE(k0 != std::string::npos);
  size_t line_end = src.find('\n', k0);
  std::string index_line = src.substr(k0, line_end - k0);
  CHECK(index_line.find("kiln_fdiv_v(") != std::string::npos);
  CHECK(index_line.find('?') == std::string::npos);
  CHECK(src.find(") ? b0[k0] : (float)0)", line_end) != std::string::npos);
}

TEST_CASE("codegen: an embedding lookup reads each table row contiguously") {
  // The gathered position picks the row; the column stays the inner loop's affine index, so the
  // row is read along consecutive elements (docs/primitives.md, gather), guarded by the range.
  for (const char* backend : {"c", "openmp", "cuda"}) {
    CAPTURE(backend);
    std::string src = render_source({"embedding",
                                     "ops/index.toml:embedding",
                                     {{"T", DType::f32}, {"I", DType::i64}},
                                     0,
                                     backend});
    CHECK(src.find("b0[(((int64_t)b1[(i0)]) * s_D + i1)]") != std::string::npos);
    CHECK(src.find("(0 <= (((int64_t)b1[(i0)])) && (((int64_t)b1[(i0)])) < (s_V))") !=
          std::string::npos);
  }
}

TEST_CASE("codegen: a scatter runs its scattered loop in order and the others in parallel") {
  // Rows added into a table along axis 0 (tests/regressions/scatter.toml): the loop over the
  // positions (s_S) carries the dependence through the table and stays serial; the column loop
  // (s_D) indexes the write affinely and runs across threads. The position is read once and
  // guards the write (docs/decisions.md, "Scatter is a primitive").
  const std::string position = "const int64_t kiln_g = (int64_t)(b1[(s_D * i0 + i1)]);\n";
  const std::string update =
      "if (0 <= kiln_g && kiln_g < (s_V)) b3[(kiln_g * s_D + i1)] = "
      "(float)(b3[(kiln_g * s_D + i1)] + b2[(s_D * i0 + i1)]);";
  const std::map<std::string, DType> types = {{"T", DType::f32}, {"I", DType::i32}};
  const std::string target = "tests/regressions/scatter.toml:scatter_rows";
  std::string omp = render_source({"scatter_rows", target, types, 0, "openmp"});
  CHECK(omp.find(position) != std::string::npos);
  CHECK(omp.find(update) != std::string::npos);
  CHECK(omp.find("#pragma omp parallel for schedule(static)\n    for (int64_t c0 = 0; c0 < s_D;") !=
        std::string::npos);
  CHECK(omp.find("for (int64_t c1 = 0; c1 < s_S; c1 += 1)") != std::string::npos);
  std::string cuda = render_source({"scatter_rows", target, types, 0, "cuda"});
  CHECK(cuda.find(position) != std::string::npos);
  CHECK(cuda.find(update) != std::string::npos);
  // A column to a group of threads (scheduler/group_rows.h), its serial loop on the group's first.
  CHECK(cuda.find("c0 < s_D; c0 += ((int64_t)gridDim.x * ((int64_t)blockDim.x / (int64_t)(") !=
        std::string::npos);
  CHECK(cuda.find("256) == 0) {\n        for (int64_t c1 = 0; c1 < s_S; c1 += 1)") !=
        std::string::npos);
}
