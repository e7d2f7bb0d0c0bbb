// Extern calls below the simplifier: the routine registry and Graph::extern_call, the verifier,
// the kernel plan and schedule of a call statement, the C rendering, and the BLAS loader's
// errors. tests/correctness/extern_gemm_test.cpp runs the calls.
#include <doctest/doctest.h>

#include <stdexcept>

#include "driver/blas.h"
#include "driver/pipeline.h"
#include "ir/externs.h"
#include "ir/verifier.h"

using namespace kiln;

namespace {

const IntExpr M = IntExpr::var("M"), K = IntExpr::var("K"), N = IntExpr::var("N");

/** y = relu(gemm(transpose(at), b)): the transposed view is materialised into a temp. */
Graph gemm_relu(DType t) {
  Graph g;
  g.name = "gemm_relu";
  g.size_vars = {"M", "K", "N"};
  NodeId at = g.input("at", t, {K, M}, false);
  NodeId b = g.input("b", t, {K, N}, false);
  NodeId prod = g.extern_call("gemm", {g.view(at, views::permute({K, M}, {1, 0})), b});
  g.outputs = {{"y", g.binary(Op::max, prod, g.constant(t, {M, N}, 0))}};
  return g;
}

/** A graph with a hand-made extern node (no checks), for the verifier. */
Graph raw_call(const std::string& routine, std::vector<std::pair<DType, Shape>> operands,
               DType result, const Shape& shape) {
  Graph g;
  g.size_vars = {"M", "K", "N"};
  Node n;
  n.op = Op::extern_call;
  n.name = routine;
  n.dtype = result;
  n.shape = shape;
  for (size_t k = 0; k < operands.size(); ++k)
    n.operands.push_back(
        g.input("x" + std::to_string(k), operands[k].first, operands[k].second, false));
  g.outputs = {{"y", g.add(n)}};
  return g;
}

}  // namespace

TEST_CASE("extern: the builder types gemm and refuses bad operands") {
  Graph g;
  g.size_vars = {"M", "K", "N"};
  NodeId a = g.input("a", DType::f64, {M, K}, false);
  NodeId b = g.input("b", DType::f64, {K, N}, false);
  NodeId y = g.extern_call("gemm", {a, b});
  CHECK(g[y].op == Op::extern_call);
  CHECK(g[y].dtype == DType::f64);
  CHECK(same_shape(g[y].shape, {M, N}));
  CHECK(graph_to_text(g).find("%2 = extern gemm %0, %1 : f64[M, N]") != std::string::npos);

  NodeId v = g.input("v", DType::f64, {K}, false);
  NodeId f = g.input("f", DType::f32, {K, N}, false);
  NodeId i = g.input("i", DType::i32, {M, K}, false);
  CHECK_THROWS_WITH_AS(g.extern_call("gemm", {a, v}), doctest::Contains("two matrices"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(g.extern_call("gemm", {a, a}), doctest::Contains("inner sizes differ"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(g.extern_call("gemm", {a, f}), doctest::Contains("dtypes differ"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(g.extern_call("gemm", {i, g.cast(b, DType::i32)}),
                       doctest::Contains("needs f32 or f64"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(g.extern_call("gemm", {a}), "extern gemm expects 2 operands, has 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(g.extern_call("gemv", {a, v}), "unknown extern routine 'gemv'",
                       std::invalid_argument);
}

TEST_CASE("extern: the verifier accepts gemm and names what is wrong with a bad one") {
  CHECK(verify(gemm_relu(DType::f32)).empty());
  CHECK(verify(raw_call("gemm", {{DType::f32, {M, K}}, {DType::f32, {K, N}}}, DType::f32, {M, N}))
            .empty());
  struct Case {
    Graph graph;
    const char* expected;
  };
  const Case cases[] = {
      {raw_call("gemm", {{DType::f32, {M, K, 1}}, {DType::f32, {K, N}}}, DType::f32, {M, N}),
       "%2 (extern): gemm needs two matrices, got f32[M, K, 1] and f32[K, N]"},
      {raw_call("gemm", {{DType::f32, {M, K}}, {DType::f32, {N, N}}}, DType::f32, {M, N}),
       "%2 (extern): gemm inner sizes differ: f32[M, K] times f32[N, N]"},
      {raw_call("gemm", {{DType::f32, {M, K}}, {DType::f64, {K, N}}}, DType::f32, {M, N}),
       "%2 (extern): gemm operand dtypes differ: f32[M, K] and f64[K, N]"},
      {raw_call("gemm", {{DType::f32, {M, K}}, {DType::f32, {K, N}}}, DType::f32, {N, M}),
       "%2 (extern): result type f32[N, M] should be f32[M, N]"},
      {raw_call("gemm", {{DType::f32, {M, K}}, {DType::f32, {K, N}}}, DType::f64, {M, N}),
       "%2 (extern): result type f64[M, N] should be f32[M, N]"},
      {raw_call("gemm", {{DType::f32, {M, K}}}, DType::f32, {M, N}),
       "%1 (extern): extern gemm expects 2 operands, has 1"},
      {raw_call("cholesky", {{DType::f32, {M, M}}}, DType::f32, {M, M}),
       "%1 (extern): unknown extern routine 'cholesky'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> problems = verify(c.graph);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == c.expected);
  }
}

TEST_CASE("extern: a call is one statement on whole buffers, scheduled between its neighbours") {
  CompileOptions opt;
  LoweredProgram p = lower_program(gemm_relu(DType::f32), backend_for("c"), opt);
  std::string plan = plan_to_text(p.plan);
  CHECK(plan.find("t2 : f32[M, K]  temp") != std::string::npos);
  CHECK(plan.find("S0 {i0 < M, i1 < K}: t2[i0, i1] = at[i1, i0]") != std::string::npos);
  CHECK(plan.find("S1 {}: t3 = extern gemm(t2, b)") != std::string::npos);
  CHECK(plan.find("S2 {i0 < M, i1 < N}: y[i0, i1] = max(t3[i0, i1], 0)") != std::string::npos);
  std::string nest = loop_nest_to_text(p.nests.at(0));
  size_t s0 = nest.find("S0("), s1 = nest.find("S1();"), s2 = nest.find("S2(");
  CHECK(s0 < s1);
  CHECK(s1 < s2);
  CHECK(s2 != std::string::npos);
  // the call is scheduled apart, so the consumer's loops stay coincident
  CHECK(nest.find("for (c0 = 0; c0 < M; c0 += 1)  // serial (band 1.0, coincident)\n"
                  "  for (c1 = 0; c1 < N; c1 += 1)  // serial (band 1.1, coincident)\n"
                  "    S2(c0, c1);") != std::string::npos);
  CHECK(p.source.find("void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, "
                      "float alpha") != std::string::npos);
  CHECK(p.source.find("cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, "
                      "(int)k, 1.0f, a, (int)k, b,\n                (int)n, 0.0f, y, (int)n);") !=
        std::string::npos);
  CHECK(p.source.find("kiln_gemm_f32((s_M), (s_N), (s_K), b3, b1, b4);") != std::string::npos);
  CHECK(backend_for("c").renderer().extern_symbols(p.plan) ==
        std::vector<std::string>{"cblas_sgemm"});

  LoweredProgram d = lower_program(gemm_relu(DType::f64), backend_for("c"), opt);
  CHECK(d.source.find("cblas_dgemm(CblasRowMajor") != std::string::npos);
  CHECK(d.source.find("cblas_sgemm") == std::string::npos);
  CHECK(backend_for("c").renderer().extern_symbols(d.plan) ==
        std::vector<std::string>{"cblas_dgemm"});
}

TEST_CASE("extern: sources without calls declare no CBLAS") {
  Graph g;
  g.outputs = {{"y", g.unary(Op::neg, g.input("x", DType::f32, {4}, false))}};
  LoweredProgram p = lower_program(g, backend_for("c"), CompileOptions{});
  CHECK(p.source.find("cblas") == std::string::npos);
  CHECK(p.source.find("Cblas") == std::string::npos);
  CHECK(backend_for("c").renderer().extern_symbols(p.plan).empty());
}

TEST_CASE("extern: the BLAS loader names what is missing") {
  CHECK(blas_library("openblas") == "libopenblas.so.0");
  CHECK(blas_library("none").empty());
  CHECK(blas_name_error("openblas").empty());
  CHECK_THROWS_WITH_AS(blas_library("mkl"),
                       "--config BLAS=mkl: unknown BLAS 'mkl' (known: openblas, none)",
                       std::runtime_error);
  CHECK_NOTHROW(load_blas({}, {}));
  CHECK_THROWS_WITH_AS(load_blas({}, {"cblas_sgemm"}),
                       "the program calls cblas_sgemm but no BLAS is configured: pass --config "
                       "BLAS=openblas",
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(load_blas({{"BLAS", "none"}}, {"cblas_sgemm"}),
                       doctest::Contains("no BLAS is configured"), std::runtime_error);
  CHECK_THROWS_WITH_AS(load_blas({{"BLAS", "mkl"}}, {"cblas_sgemm"}),
                       doctest::Contains("unknown BLAS 'mkl'"), std::runtime_error);
  CHECK_NOTHROW(load_blas({{"BLAS", "openblas"}}, {"cblas_sgemm", "cblas_dgemm"}));
  CHECK_THROWS_WITH_AS(load_blas({{"BLAS", "openblas"}}, {"cblas_nosuch"}),
                       "--config BLAS=openblas: libopenblas.so.0 does not define cblas_nosuch",
                       std::runtime_error);
}
