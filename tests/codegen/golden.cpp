#include "tests/codegen/golden.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "backends/backend.h"
#include "driver/pipeline.h"
#include "dsl/lower.h"
#include "ir/verifier.h"

namespace kiln::golden {

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
      // A column sum: interleaved groups of lanes (LoopNode::lanes_apart).
      {"mean_pool_cuda", "tests/regressions/user_kernels.toml:mean_pool_channels_last",
       {{"T", DType::f16}}, 0, "cuda"},
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

std::string render_source(const GoldenCase& c, bool tile_variants) {
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
  options.schedule.gpu_tile.tma = c.wgmma;  // as driver/instantiate.cpp sets it for sm_90a
  if (!tile_variants) {
    options.schedule.gpu_tile.wgmma_variants.clear();
    options.schedule.attention_variants = false;
  }
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

namespace {

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

}  // namespace

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

}  // namespace kiln::golden
