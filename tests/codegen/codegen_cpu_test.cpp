// Golden codegen tests on the CPU backends (tests/codegen/golden.h): plain C and OpenMP C pinned
// in tests/codegen/<name>.c, register and matrix tiles, packs, and every golden source compiled
// with the system `cc -c -O2 -std=gnu11` (skipped, with a message, when there is no cc).
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
#include "tests/codegen/golden.h"

using namespace kiln;
using namespace kiln::golden;

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
  // f16 operands along k: one vector of halves converted at once (kiln_vld_f16: vcvtph2ps
  // where the processor has F16C, each element converted elsewhere); bf16 widened by a shift.
  const GoldenCase f16 = {"", "tests/regressions/linear_layouts.toml:linear_t_plain",
                          {{"T", DType::f16}}, 0};
  const std::string h = render_source(f16);
  CHECK(h.find("#ifdef KILN_F16C\n") != std::string::npos);
  CHECK(h.find("= kiln_vld_f16(&b1[(s_K * i1 + i2)]); }") != std::string::npos);
  const GoldenCase bf16 = {"", "tests/regressions/linear_layouts.toml:linear_t_plain",
                           {{"T", DType::bf16}}, 0};
  CHECK(render_source(bf16).find("= kiln_vld_bf16(&b1[(s_K * i1 + i2)]); }") !=
        std::string::npos);
}

TEST_CASE("codegen: f16 and aᵀ · b row operands come from a pack of each row tile's rows") {
  // RegisterTileShape::pack_rows: per row tile and k block, a's 3 rows of 256 k copied (f16
  // widened once) into a local pack, filled along k where a lies along k and along the rows
  // where it lies along the rows; each row of the tile reads its value there (the rows past
  // the tile's count the last existing row's).
  const std::string h = render_source({"", "ops/nn.toml:matmul", {{"T", DType::f16}}, 0});
  CHECK(h.find("float pack2_0[768] __attribute__((aligned(64)));") != std::string::npos);
  CHECK(h.find("for (int64_t c0 = c0t; c0 < ((c0t + 3) < s_M ? (c0t + 3) : s_M); c0 += 1) {\n"
               "                for (int64_t c2 = c2t; c2 < ((c2t + 256) < s_K ? (c2t + 256) : "
               "s_K); c2 += 1) {\n                  { const int64_t i0 = c0, i1 = 0, i2 = c2; "
               "pack2_0[(c0 - c0t) * 256 + (c2 - c2t)] = kiln_f16_to_f32(b0[(s_K * i0 + i2)]); }") !=
        std::string::npos);
  CHECK(h.find("tile1_2_0 += (pack2_0[(tile1_row2 - (c0t)) * 256 + (c2 - c2t)] * kiln_lane0);") !=
        std::string::npos);
  // b's lanes widened a vector at a time into its own pack.
  CHECK(h.find("kiln_vld_f16(&b1[(s_N * i2 + i1)])") != std::string::npos);
  const std::string at =
      render_source({"", "tests/regressions/linear_layouts.toml:matmul_at", {{"T", DType::f32}}, 0});
  CHECK(at.find("for (int64_t c2 = c2t; c2 < ((c2t + 256) < s_K ? (c2t + 256) : s_K); c2 += 1) "
                "{\n                for (int64_t c0 = c0t; c0 < ((c0t + 3) < s_M ? (c0t + 3) : "
                "s_M); c0 += 1) {\n                  { const int64_t i0 = c0, i1 = 0, i2 = c2; "
                "pack2_0[(c0 - c0t) * 256 + (c2 - c2t)] = b0[(s_M * i2 + i0)]; }") !=
        std::string::npos);
  // f32 a along k is read in place.
  CHECK(render_source(golden_cases()[1]).find("float pack2_0") == std::string::npos);
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

TEST_CASE("codegen: a masked value's shared subexpressions are computed under its mask") {
  // pad(t · t) reads x[i - 1] only where 0 <= i - 1 < N; the square's two uses of t made it a
  // shared value, computed before the mask and so at x[-1] and x[N] (on a GPU: a launch
  // failure; the sums of a slice past a tensor's end read the same way).
  std::filesystem::path spec =
      std::filesystem::temp_directory_path() / ("kiln_masked_shared_" + std::to_string(getpid()) + ".toml");
  std::ofstream(spec) << R"([padded_square]
in    = { x = "f32[N]" }
out   = { y = "f32[N + 2]" }
body  = """
t = x * 2.0 + 1.0
y = pad(t * t, 0, 1, 1)
"""
)";
  for (const char* backend : {"c", "cuda"}) {
    CAPTURE(backend);
    GoldenCase c{"padded_square", spec.string() + ":padded_square", {}, 0, backend};
    std::string src = render_source(c);
    REQUIRE(src.find("b0[") != std::string::npos);
    std::istringstream lines(src);
    for (std::string line; std::getline(lines, line);) {
      // A load of x bound to a name of its own, ahead of the statement's masked value.
      bool bound = line.find("const float v") != std::string::npos;
      CHECK_MESSAGE(!(bound && line.find("b0[") != std::string::npos), line);
    }
  }
  std::filesystem::remove(spec);
}
