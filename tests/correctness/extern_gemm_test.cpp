// Extern gemm end to end: hand-built graphs with an `extern gemm` node, run by the interpreter
// and by every CPU runtime with OpenBLAS loaded (--config BLAS=openblas), against a naive
// product computed here and against the interpreter, for f32 and f64 at sizes that include 1
// and odd ones. One compile per graph and dtype serves every size: the sizes stay symbolic.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>

#include "driver/blas.h"
#include "driver/compare.h"
#include "driver/executable.h"
#include "ir/verifier.h"
#include "tests/support/harness.h"

using namespace kiln;

namespace {

const IntExpr M = IntExpr::var("M"), K = IntExpr::var("K"), N = IntExpr::var("N");

/** y = gemm(a, b): the call writes the output buffer itself. */
Graph plain_gemm(DType t) {
  Graph g;
  g.name = "gemm";
  g.size_vars = {"M", "K", "N"};
  NodeId a = g.input("a", t, {M, K}, false);
  NodeId b = g.input("b", t, {K, N}, false);
  g.outputs = {{"y", g.extern_call("gemm", {a, b})}};
  return g;
}

/** y = relu(gemm(transpose(at), 2 * b) + bias), and the product itself as a second output:
 *  both operands are materialised into temps, an elementwise op reads the call's result. */
Graph fused_gemm(DType t) {
  Graph g;
  g.name = "gemm_bias_relu";
  g.size_vars = {"M", "K", "N"};
  NodeId at = g.input("at", t, {K, M}, false);
  NodeId b = g.input("b", t, {K, N}, false);
  NodeId bias = g.input("bias", t, {1, N}, false);
  NodeId a = g.view(at, views::permute({K, M}, {1, 0}));
  NodeId b2 = g.binary(Op::mul, b, g.constant(t, {K, N}, 2));
  NodeId prod = g.extern_call("gemm", {a, b2});
  NodeId biased = g.binary(Op::add, prod, g.view(bias, views::expand({1, N}, {M, N})));
  NodeId relu = g.binary(Op::max, biased, g.constant(t, {M, N}, 0));
  g.outputs = {{"y", relu}, {"prod", prod}};
  return g;
}

/** The naive product of row-major a [m, k] and b [k, n]. */
std::vector<double> naive_gemm(const std::vector<double>& a, const std::vector<double>& b,
                               int64_t m, int64_t k, int64_t n) {
  std::vector<double> y(m * n, 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        y[i * n + j] += a[i * k + p] * b[p * n + j];
  return y;
}

/** What the graphs of fused_gemm compute, from their inputs: {y, prod}. */
std::vector<std::vector<double>> naive_fused(const std::vector<Tensor>& in, int64_t m, int64_t k,
                                             int64_t n) {
  std::vector<double> a(m * k), b2(k * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      a[i * k + p] = in[0].f[p * m + i];
  for (size_t e = 0; e < b2.size(); ++e)
    b2[e] = 2 * in[1].f[e];
  std::vector<double> prod = naive_gemm(a, b2, m, k, n), y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = std::max(prod[i * n + j] + in[2].f[j], 0.0);
  return {y, prod};
}

struct Case {
  const char* name;
  std::function<Graph(DType)> build;
  /** The expected outputs from the inputs, for sizes m, k, n. */
  std::function<std::vector<std::vector<double>>(const std::vector<Tensor>&, int64_t, int64_t,
                                                 int64_t)>
      expect;
};

const Case kCases[] = {
    {"plain", plain_gemm,
     [](const std::vector<Tensor>& in, int64_t m, int64_t k, int64_t n) {
       return std::vector<std::vector<double>>{naive_gemm(in[0].f, in[1].f, m, k, n)};
     }},
    {"fused", fused_gemm, naive_fused},
};

const SizeBindings kSizes[] = {
    {{"M", 1}, {"K", 1}, {"N", 1}},
    {{"M", 7}, {"K", 5}, {"N", 3}},
    {{"M", 64}, {"K", 33}, {"N", 17}},
};

std::vector<Tensor> random_inputs(const Graph& g, const SizeBindings& sizes, uint64_t seed) {
  std::vector<Tensor> out;
  for (NodeId in : g.inputs)
    out.push_back(random_tensor(g[in].dtype, eval_shape(g[in].shape, sizes), seed++, -1, 1));
  return out;
}

/** The interpreter against the naive expectation (in double: exact but for summation order). */
std::vector<Tensor> interpret_and_check(const Case& c, const Graph& g, const SizeBindings& s,
                                        const std::vector<Tensor>& inputs) {
  std::vector<Tensor> want = interpret(g, s, inputs);
  auto expected = c.expect(inputs, s.at("M"), s.at("K"), s.at("N"));
  REQUIRE(want.size() == expected.size());
  for (size_t o = 0; o < want.size(); ++o)
    test::expect_close(want[o], expected[o], 1e-12, 1e-12);
  return want;
}

void check_runtime(const std::string& runtime_name) {
  std::unique_ptr<Runtime> rt = Runtime::open(runtime_name);
  auto cache = std::filesystem::temp_directory_path() /
               ("kiln-test-gemm-" + runtime_name + "-" + std::to_string(::getpid()));
  rt->use_cache_dir(cache.string());
  CompileOptions opt;
  opt.config = rt->descriptor().config;
  opt.config["BLAS"] = "openblas";
  for (const Case& c : kCases)
    for (DType t : {DType::f32, DType::f64}) {
      CAPTURE(runtime_name);
      CAPTURE(std::string(c.name));
      CAPTURE(dtype_name(t));
      Graph g = c.build(t);
      REQUIRE(verify(g).empty());
      Executable exe(g, *rt, opt);
      CHECK(exe.program().source.find("cblas_") != std::string::npos);
      for (const SizeBindings& s : kSizes) {
        CAPTURE(s.at("M"));
        CAPTURE(s.at("K"));
        CAPTURE(s.at("N"));
        std::vector<Tensor> inputs = random_inputs(g, s, 11);
        std::vector<Tensor> want = interpret_and_check(c, g, s, inputs);
        std::vector<Tensor> got = exe.run(inputs, s);
        REQUIRE(got.size() == want.size());
        for (size_t o = 0; o < got.size(); ++o) {
          Comparison cmp = compare(got[o], want[o], tolerance_for(t, {}, {}, want[o]));
          CHECK_MESSAGE(cmp.ok, "output " << o << " element " << cmp.first_bad << ": got "
                                          << cmp.got << ", interpreter " << cmp.want);
        }
      }
    }
  std::filesystem::remove_all(cache);
}

/** Runs the plain gemm compiled with CBLAS's int limit lowered to 4, so that 7x5x3 takes the
 *  wrapper's plain loop, as sizes past 2^31 - 1 would; 1x1x1 still calls CBLAS. */
void check_int_fallback(const std::string& runtime_name, DType t) {
  CAPTURE(runtime_name);
  CAPTURE(dtype_name(t));
  std::unique_ptr<Runtime> rt = Runtime::open(runtime_name);
  auto cache = std::filesystem::temp_directory_path() /
               ("kiln-test-gemm-int-" + runtime_name + "-" + std::to_string(::getpid()));
  rt->use_cache_dir(cache.string());
  Graph g = plain_gemm(t);
  LoweredProgram p = lower_program(g, backend_for(rt->backend()), CompileOptions{});
  REQUIRE(p.source.find("KILN_BLAS_INT_MAX") != std::string::npos);
  load_blas({{"BLAS", "openblas"}}, backend_for(rt->backend()).renderer().extern_symbols(p.plan));
  CompiledModule module = rt->compile(p.source, {"-DKILN_BLAS_INT_MAX=4"});
  void* kernel = rt->lookup(module, p.symbols.at(0));
  REQUIRE(kernel);
  for (const SizeBindings& s : {kSizes[0], kSizes[1]}) {
    std::vector<Tensor> in = random_inputs(g, s, 5);
    std::vector<std::vector<uint8_t>> bytes = {tensor_to_bytes(in[0]), tensor_to_bytes(in[1])};
    std::vector<uint8_t> y(s.at("M") * s.at("N") * dtype_bits(t) / 8);
    void* buffers[] = {bytes[0].data(), bytes[1].data(), y.data()};
    int64_t sizes[] = {s.at("M"), s.at("K"), s.at("N")};
    rt->launch(kernel, buffers, sizes);
    rt->synchronize();
    Tensor got = tensor_from_bytes(t, {s.at("M"), s.at("N")}, y.data());
    Tensor want = interpret(g, s, in)[0];
    Comparison cmp = compare(got, want, tolerance_for(t, {}, {}, want));
    CHECK_MESSAGE(cmp.ok,
                  "element " << cmp.first_bad << ": got " << cmp.got << ", want " << cmp.want);
  }
  std::filesystem::remove_all(cache);
}

}  // namespace

TEST_CASE("extern gemm: sizes past CBLAS's int run the wrapper's plain loop") {
  for (const char* runtime : {"clang", "cc"})
    for (DType t : {DType::f32, DType::f64})
      check_int_fallback(runtime, t);
}

TEST_CASE("extern gemm: the interpreter matches a naive product") {
  for (const Case& c : kCases)
    for (DType t : {DType::f32, DType::f64})
      for (const SizeBindings& s : kSizes) {
        CAPTURE(std::string(c.name));
        Graph g = c.build(t);
        interpret_and_check(c, g, s, random_inputs(g, s, 3));
      }
}

TEST_CASE("extern gemm: clang runtime with OpenBLAS matches the interpreter") {
  check_runtime("clang");
}

TEST_CASE("extern gemm: cc runtime with OpenBLAS matches the interpreter") {
  check_runtime("cc");
}
