// Golden codegen tests on the CUDA backend (tests/codegen/golden.h): the sources pinned in
// tests/codegen/<name>.cu, rows on groups of threads, block tiles, tensor cores (mma.sync, and
// wgmma for sm_90a) and the fused attention kernel.
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
                 "KILN_GRID_CONSTANT kiln_params p)") != std::string::npos);  // The input x, only read, is restrict; y and the two row buffers the kernel writes are not
  // (CudaRenderer::restrict_written: NVVM read a written restrict buffer through ld.global.nc
  // ahead of the thread's own store).
  CHECK(src.find("const float* restrict b0 /* x */, float* b1 /* y */, float* b2 /* t2 */, "
                 "float* b3 /* t9 */") != std::string::npos);
  CHECK(src.find("float* restrict b1") == std::string::npos);
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
  // The TMA's pipeline beside it, taken where the launch encoded both maps and the reduction
  // spans k: the maps in the parameter, the record of them the executable reads, thread 0's
  // boxes (one of a, four of 64 lanes of b), the stages' barriers.
  CHECK(src.find("uint64_t tm_ok;\n  kiln_tensor_map tm[2];") != std::string::npos);
  CHECK(src.find("kiln_matmul_0_tensor_maps[65] = {2, 0, 0, 2, 64, 128, 0, 0, 0, 1, 0, 2, 64, "
                 "64, 0, 0, 0};") != std::string::npos);
  CHECK(src.find("(kiln_p->tm_ok >> 0 & 1) && tile0_c0[0] == 0 && tile0_K == (int64_t)((s_K))") !=
        std::string::npos);
  CHECK(src.find("kiln_tma_load(kiln_smem_addr(tile0_s1[tile0_ws]) + 24576u, &kiln_p->tm[1], "
                 "tile0_fb, tile0_c1[0] + 192, tile0_c1[1] + tile0_kc);") != std::string::npos);
  CHECK(src.find("kiln_mbar_expect(tile0_fb, 49152u);") != std::string::npos);
  CHECK(src.find("kiln_mbar_wait(kiln_smem_addr(&tile0_full[tile0_st]), (uint32_t)((tile0_b / 4) "
                 "& 1));") != std::string::npos);
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
  CHECK(src.find("kiln_matmul_0_w128x64x4(const KILN_GRID_CONSTANT kiln_params p)") != std::string::npos);
  // A product without a warpgroup tile (f32) has no variants.
  GoldenCase single = golden_cases()[12];
  single.dtypes = {{"T", DType::f32}};
  std::string f32 = render_source(single, true);
  CHECK(f32.find("_w128x") == std::string::npos);
}

TEST_CASE("codegen: attention whose head is known at run time is compiled for ranges of heads") {
  // The kernel at 64 lanes for any head, again at 64 for heads up to 64 (`_l64`) and at 128
  // for 65-128 (`_l128`), each launch taking the one its head calls for (executable.cpp): the
  // 128-lane one with warpgroup products two stages of 64 keys of k and v by the TMA, 96 KiB, a
  // block per tile; on mma.sync its own.
  const std::string wg = render_source(golden_case("attention_cuda_f16_wgmma"), true);
  CHECK(wg.find("extern \"C\" __device__ unsigned kiln_attention_0_shared_bytes = 106496;") !=
        std::string::npos);
  CHECK(wg.find("extern \"C\" __device__ unsigned kiln_attention_0_l128_shared_bytes = 98304;") !=
        std::string::npos);
  CHECK(wg.find("extern \"C\" __device__ unsigned kiln_attention_0_l128_whole_grid = 1;") !=
        std::string::npos);
  CHECK(wg.find("kiln_attention_0_l128_tensor_maps[65] = {2, 1, 1, 3, 64, 64, 1, 0, 0, 2, 1, 3, "
                "64, 64, 1, 0, 0};") != std::string::npos);
  CHECK(wg.find("kiln_attention_0_l128(const KILN_GRID_CONSTANT kiln_params p)") !=
        std::string::npos);
  // The variant's heads are 65-128: one chunk of the head, eight steps of the scores' wgmma,
  // two boxes of k, no test of the head left (the kernel at 64 lanes keeps them).
  const std::string wide = wg.substr(wg.find("kiln_attention_0_l128_loops("));
  CHECK(wide.find("for (int64_t fa0_d0") == std::string::npos);
  CHECK(wide.find("const int64_t fa0_d0 = 0;") != std::string::npos);
  CHECK(wide.find("const int fa0_kb = 2;") != std::string::npos);
  CHECK(wide.find("const int fa0_sh = 4;") != std::string::npos);
  CHECK(wide.find("fa0_D <= 128") == std::string::npos);
  CHECK(wide.find("fa0_dk > 64") == std::string::npos);
  CHECK(wg.find("for (int64_t fa0_d0") < wg.find("kiln_attention_0_l64_loops("));
  // The variant at 64 lanes for heads up to 64: one box of k, four steps, three stages.
  const std::string narrow = wg.substr(wg.find("kiln_attention_0_l64_loops("),
                                       wg.find("kiln_attention_0_l128_loops(") -
                                           wg.find("kiln_attention_0_l64_loops("));
  CHECK(wg.find("extern \"C\" __device__ unsigned kiln_attention_0_l64_shared_bytes = 106496;") !=
        std::string::npos);
  CHECK(narrow.find("const int fa0_kb = 1;") != std::string::npos);
  CHECK(narrow.find("const int fa0_sh = 3;") != std::string::npos);
  CHECK(narrow.find("const int64_t fa0_d0 = 0;") != std::string::npos);
  CHECK(narrow.find("fa0_D <= 128") == std::string::npos);
  CHECK(narrow.find("fa0_dk > 64") == std::string::npos);
  const std::string sync = render_source(golden_case("attention_cuda_f16"), true);
  CHECK(sync.find("KILN_ATTENTION_MIN_BLOCKS_WIDE) kiln_attention_0_l128(") != std::string::npos);
  // Not where the head is fixed (the goldens' one shape) or GPU_ATTN pins the lanes.
  CHECK(render_source(golden_case("attention_cuda_f16_wgmma")).find("_l128") == std::string::npos);
  CHECK(render_source(golden_case("matmul_cuda_f16_wgmma"), true).find("_l128") ==
        std::string::npos);
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
  // wgmma: q, k and v swizzled in 128-byte rows (q and three stages of k and v: 104 KiB),
  // copies fenced for the async proxy; the scores' steps K-major from shared memory, 4 or 8
  // straight-line steps by the head; the weights from registers, v transposed by the
  // instruction.
  CHECK(wg.find("asm volatile(\"ldmatrix") == std::string::npos);
  CHECK(wg.find("extern \"C\" __device__ unsigned kiln_attention_0_shared_bytes = 106496;") !=
        std::string::npos);
  // k and v by the TMA where the launch's maps allow (the record: two maps of buffers 1 and 2,
  // their leading index folded, boxes of 64 keys by 64 of the head or lanes), thread 0 issuing
  // into a stage's full barrier, every warp releasing it; else the cp.async copies.
  CHECK(wg.find("kiln_attention_0_tensor_maps[65] = {2, 1, 1, 3, 64, 64, 1, 0, 0, 2, 1, 3, 64, "
                "64, 1, 0, 0};") != std::string::npos);
  CHECK(wg.find("const bool fa0_tma = __shfl_sync(0xffffffffu, (int)((kiln_p->tm_ok >> 0 & 1) && "
                "(kiln_p->tm_ok >> 1 & 1)") !=
        std::string::npos);
  // (The stages' and barriers' shared addresses computed once a tile.)
  CHECK(wg.find("const uint32_t fa0_fbar = kiln_smem_addr(&fa0_full[0]), fa0_ebar = "
                "kiln_smem_addr(&fa0_empty[0]);") != std::string::npos);
  CHECK(wg.find("kiln_tma_load(fa0_ak + (uint32_t)(fa0_ns) * 16384u + 0u, &kiln_p->tm[0], fa0_fb, "
                "fa0_kc[0], fa0_kc[1] + (int)(fa0_jx), fa0_kc[2]);") != std::string::npos);
  CHECK(wg.find("kiln_mbar_wait(fa0_fbar + 8u * (uint32_t)(fa0_st), (uint32_t)((fa0_it / 3) & "
                "1));") != std::string::npos);
  CHECK(wg.find("if (fa0_tma && threadIdx.x % 32 == 0) kiln_mbar_arrive(fa0_ebar + 8u * "
                "(uint32_t)(fa0_st));") != std::string::npos);
  // The output rescaled only where a warp's row maximum rose.
  CHECK(wg.find("if (__any_sync(0xffffffffu, fa0_rs[0] != 1.f || fa0_rs[1] != 1.f)) {") !=
        std::string::npos);
  CHECK(wg.find("[(fa0_y / 64 * 64 + fa0_x) * 64 + ((fa0_y % 64 / 8) ^ (fa0_x % 8)) * 8]") !=
        std::string::npos);
  CHECK(wg.find("kiln_cp_async_wait_all();\n        kiln_fence_proxy_async();\n        "
                "__syncthreads();") != std::string::npos);
  CHECK(wg.find("if (fa0_dk > 64) {") != std::string::npos);
  CHECK(wg.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, ") != std::string::npos);
  CHECK(wg.find("}, %32, %33, p, 1, 1, 0, 0;") != std::string::npos);
  CHECK(wg.find("}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;") != std::string::npos);
  // The stage's descriptor once a block, each step's moved on from it.
  CHECK(wg.find("fa0_vdesc = kiln_wgmma_desc(fa0_vst, 8192, 1024);") != std::string::npos);
  CHECK(wg.find("kiln_wgmma_desc_at(fa0_vdesc, fa0_kk * 2048)") != std::string::npos);
  CHECK(wg.find("kiln_wgmma_wait<0>();") != std::string::npos);
}

TEST_CASE("codegen: attention's factors along the keys are read once per key and shuffled") {
  // A gate on the values, g[b, h, j]: each lane reads the factors of two keys of the block
  // before the scores' products, and the weights take theirs by shuffle, with no guard. A
  // dropout mask, keep[b, h, i, j], differs by row: each weight reads its own.
  for (bool wgmma : {false, true}) {
    CAPTURE(wgmma);
    GoldenCase gate{"", "tests/regressions/attention_variants.toml:attn_vexpr", {{"T", DType::f16}},
                    0, "cuda"};
    gate.wgmma = wgmma;
    GoldenCase drop = gate;
    drop.target = "tests/regressions/attention_variants.toml:attn_dropout";
    const std::string g = render_source(gate), d = render_source(drop);
    const size_t read = g.find("fa0_kf[fa0_ku] = (float)(kiln_f16_to_f32(b3[(s_S * i0 + i3)]));");
    const size_t products = g.find(wgmma ? "wgmma.mma_async" : "mma.sync.aligned");
    const size_t shuffle = g.find(
        "const float fa0_g = __shfl_sync(0xffffffffu, fa0_t < 4 ? fa0_kf[0] : fa0_kf[1], (fa0_t "
        "% 4) * 8 + (fa0_q % 4) * 2 + fa0_o2);");
    REQUIRE(read != std::string::npos);
    REQUIRE(shuffle != std::string::npos);
    CHECK(g.find("const int64_t c1 = 0, c2 = 0, c3 = fa0_j0 + fa0_ku * 32 + fa0_q;") < read);
    CHECK(read < products);
    CHECK(products < shuffle);
    CHECK(g.find("fa0_s[fa0_t][fa0_o2 + 2] *= fa0_g;") != std::string::npos);
    CHECK(g.find("b3[", read + 50) == std::string::npos);  // read nowhere else
    CHECK(d.find("fa0_kf") == std::string::npos);
    CHECK(d.find("fa0_s[fa0_t][fa0_e] *= (float)(") != std::string::npos);
  }
}
