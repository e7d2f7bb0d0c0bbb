// Golden codegen tests on the OpenCL backend (tests/codegen/golden.h): CUDA's schedule in
// OpenCL C's names, pinned in tests/codegen/<name>.cl, and every OpenCL golden source compiled
// with clang -x cl.
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
