// Every composite of ops/ compiled by every CPU runtime (clang and openmp in process, cc as a
// subprocess) and checked against the interpreter at each size of its own test table, for f32
// and f64 and, where the composite allows them, f16 and bf16. One compile serves every size: the
// sizes stay symbolic in the generated code.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "driver/compare.h"
#include "driver/executable.h"
#include "driver/host_cpu.h"
#include "tests/support/harness.h"
#include "tests/support/runtime_sweep.h"

using namespace kiln;
using kiln::test::check_runtime;
using kiln::test::spec_files;

TEST_CASE("runtime ops: every composite under clang matches the interpreter") {
  check_runtime("clang");
}

TEST_CASE("runtime ops: every composite under cc matches the interpreter") {
#if defined(KILN_SANITIZED)
  // cc differs from clang in its plugin only (a compiler subprocess, then dlopen), which the
  // normal build's run covers; the sanitizer build's time goes to Kiln's own code under clang.
  MESSAGE("skipped under AddressSanitizer");
#else
  check_runtime("cc");
#endif
}

TEST_CASE("runtime ops: every composite under openmp matches the interpreter") {
  // Also under the sanitizers: the OpenMP renderer and the parallel mappings over every composite
  // of ops/, in less than half the time the regression specs take under openmp (CI, 2026-12-01:
  // 341 s of the sanitized suite's 1250 test-seconds), which are skipped there instead.
  check_runtime("openmp");
}

TEST_CASE("runtime ops: the contractions and rows of ops/ built for AVX2 without AVX-512") {
#if defined(KILN_SANITIZED)
  // Kiln's own code is the same as under openmp; the difference is in the generated code.
  MESSAGE("skipped under AddressSanitizer");
#else
  // The register tile's AVX2 shape (3 rows of 8 32-byte vectors), 32-byte vector loops and the
  // f16 conversions of F16C, as a CPU without AVX-512 runs them (tests/data/openmp_avx2.toml).
  if (!host_cpu().avx2) {
    MESSAGE("skipped: this CPU has no AVX2");
    return;
  }
  check_runtime("tests/data/openmp_avx2.toml", {"ops/nn.toml", "ops/quant.toml"});
#endif
}

TEST_CASE("runtime ops: every composite under clang with CHECK=1 (every access in bounds)") {
#if defined(KILN_SANITIZED)
  // The checks are in the generated code, which the sanitizers do not instrument: the normal
  // build's run says all there is to say, and CI's time is better spent elsewhere.
  MESSAGE("skipped under AddressSanitizer");
#else
  check_runtime("clang", spec_files("ops"), {{"CHECK", "1"}});
#endif
}

TEST_CASE(
    "runtime ops: every composite under openmp with STREAM=1 (every streaming loop streams)") {
#if defined(KILN_SANITIZED)
  // The non-temporal stores are in the generated code, which the sanitizers do not instrument.
  MESSAGE("skipped under AddressSanitizer");
#else
  // At the default only outputs of 16 MiB stream, which no test table reaches: from one byte,
  // every loop stream_stores marks runs its aligned peel, vectors and tail (odd sizes leave a
  // tail; rows of 1 run the peel alone) on threads.
  check_runtime("openmp", spec_files("ops"), {{"STREAM", "1"}});
#endif
}

// The crash regressions of tests/regressions under each runtime and config, one test case each
// (so that ctest runs them side by side). cc differs from clang in its plugin only (the same C,
// compiled by gcc in a subprocess), and gcc's reading of that C is what every composite of ops/
// under cc checks above: the regressions, which exercise the scheduler, run on clang and openmp
// (under cc they took 282 s of CI's 45 minutes for no code path of their own; `kiln test
// tests/regressions/F.toml --runtime cc` runs one by hand). The sanitizer build runs them under
// clang and openmp as they are: CHECK=1 differs in the generated code, which the sanitizers do
// not instrument, and TILE=0 in a path the other runs mostly take too. Under openmp they are
// skipped there too: the scheduler's paths are clang's run, and the OpenMP renderer's are every
// composite of ops/ under openmp above.
namespace {

void check_regressions(const char* runtime, const std::map<std::string, std::string>& config,
                       bool under_sanitizers) {
#if defined(KILN_SANITIZED)
  if (!under_sanitizers) {
    MESSAGE("skipped under AddressSanitizer");
    return;
  }
#else
  (void)under_sanitizers;
#endif
  check_runtime(runtime, spec_files("tests/regressions"), config);
}

}  // namespace

TEST_CASE("runtime ops: the crash regressions of tests/regressions under clang") {
  check_regressions("clang", {}, true);
}
TEST_CASE("runtime ops: the crash regressions of tests/regressions under clang with TILE=0") {
  // Under the sanitizers 191 s of CI's 45 minutes for an untiled schedule: the same lowering and
  // rendering the other runs take, its bands left whole.
  check_regressions("clang", {{"TILE", "0"}}, false);
}
TEST_CASE("runtime ops: the crash regressions of tests/regressions under clang with CHECK=1") {
  check_regressions("clang", {{"CHECK", "1"}}, false);
}
TEST_CASE("runtime ops: the crash regressions of tests/regressions under openmp") {
  check_regressions("openmp", {}, false);
}
TEST_CASE("runtime ops: the crash regressions of tests/regressions under openmp with TILE=0") {
  // TILE=0 changes the scheduler's path, which clang's TILE=0 run covers under the sanitizers.
  check_regressions("openmp", {{"TILE", "0"}}, false);
}
TEST_CASE("runtime ops: the crash regressions of tests/regressions under openmp with CHECK=1") {
  check_regressions("openmp", {{"CHECK", "1"}}, false);
}

TEST_CASE("runtime ops: long scans split across four threads on openmp") {
  // One row splits into parts only on 4 threads or more (backends/openmp_renderer.h): the
  // blocked scan runs here whatever the cores, its parts on threads that take turns.
  for (const std::map<std::string, std::string>& config :
       std::vector<std::map<std::string, std::string>>{{{"THREADS", "4"}},
                                                       {{"THREADS", "4"}, {"CHECK", "1"}}})
    check_runtime("openmp", {"tests/regressions/long_scans.toml"}, config);
}

TEST_CASE("runtime ops: every composite under the runtimes of KILN_TEST_RUNTIMES") {
  // The conformance run for a new runtime (docs/plugins.md): a comma-separated list of runtime
  // names or descriptor paths. Unset, the test has nothing to do.
  const char* list = std::getenv("KILN_TEST_RUNTIMES");
  std::stringstream names(list ? list : "");
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty()) continue;
    CAPTURE(name);
    check_runtime(name);
  }
}

namespace {

/** A budget of 2 statements and a cut after every reduction: nearly every statement its own
 *  kernel, every value crossing a cut stored (scheduler/cut_kernels.h), temps sharing slots
 *  across kernels, and every access bounds-checked. */
void check_cut_everywhere(const std::vector<std::string>& files) {
  check_runtime("clang", files, {{"CHECK", "1"}}, [](CutOptions& cut) {
    cut.max_statements = 2;
    cut.cut_after_reductions = true;
  });
}

}  // namespace

TEST_CASE("runtime ops: every composite cut into as many kernels as it can be, with CHECK=1") {
  check_cut_everywhere(spec_files("ops"));
}

TEST_CASE(
    "runtime ops: every regression spec cut into as many kernels as it can be, with CHECK=1") {
#if defined(KILN_SANITIZED)
  // Ten minutes under the sanitizers (six times the normal build): the cutting code runs there
  // on every composite of ops/ above, and the regression specs run uncut under clang.
  MESSAGE("skipped under AddressSanitizer");
#else
  check_cut_everywhere(spec_files("tests/regressions"));
#endif
}

TEST_CASE(
    "runtime ops: max reductions keep NaN, infinities and signed zeros on every CPU runtime") {
  // The CPU renderers reduce a float max through ordered integer keys and a NaN flag
  // (backends/c_style.h, max_keys): rows long enough for vector lanes and a remainder, with a
  // NaN first, in a lane, last, none, an all -inf row and zeros of both signs.
  const int64_t rows = 6, n = 37;
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x(t, {rows, n});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n; ++k)
        x.set(r * n + k, std::sin(double(r * n + k)) * 100);
    x.set(0 * n + 0, NAN);
    x.set(1 * n + 17, NAN);
    x.set(2 * n + n - 1, NAN);
    for (int64_t k = 0; k < n; ++k)
      x.set(4 * n + k, -INFINITY), x.set(5 * n + k, k % 2 ? -0.0 : 0.0);
    x.set(5 * n + 3, -1e-30);
    for (const char* runtime : {"clang", "cc", "openmp"})
      for (const char* comp : {"ops/reduce.toml:max", "ops/nn.toml:softmax"}) {
        CAPTURE(runtime);
        CAPTURE(comp);
        CAPTURE(dtype_name(t));
        test::RunSpec spec{comp, {{"N", n}}, {{"T", t}}, {rows}};
        spec.given = {{"x", x}};
        test::Run want = test::run(spec);
        std::unique_ptr<Runtime> rt = Runtime::open(runtime);
        Executable exe(want.graph, *rt, CompileOptions{});
        std::vector<Tensor> got = exe.run(want.inputs, want.sizes);
        Comparison cmp = compare(got[0], want.outputs[0],
                                 tolerance_for(t, std::nullopt, std::nullopt, want.outputs[0]));
        CHECK_MESSAGE(cmp.ok,
                      "element " << cmp.first_bad << ": got " << cmp.got << ", want " << cmp.want);
      }
  }
}

TEST_CASE("runtime ops: trunc, floor, ceil and round are exact on halves, zeros and non-finites") {
  // Halves both ways (round takes them to even), zeros of both signs and what rounds to them,
  // values past 2^23 and 2^52 (integers already), the largest floats, infinities and NaN;
  // each result must be <cmath>'s, bit for bit up to NaN's payload, on every CPU runtime.
  const std::vector<double> values = {-3.5,
                                      -2.5,
                                      -1.5,
                                      -0.5,
                                      -0.4999999,
                                      -0.25,
                                      -0.0,
                                      0.0,
                                      1e-30,
                                      -1e-30,
                                      0.25,
                                      0.4999999,
                                      0.5,
                                      1.5,
                                      2.5,
                                      3.5,
                                      7.75,
                                      -7.75,
                                      8388607.5,
                                      8388609.0,
                                      4503599627370495.5,
                                      4503599627370497.0,
                                      1e20,
                                      -1e20,
                                      3e38,
                                      -3e38,
                                      INFINITY,
                                      -INFINITY,
                                      NAN};
  struct Case {
    const char* name;
    double (*ref)(double);
  };
  const Case cases[] = {{"trunc", [](double v) { return std::trunc(v); }},
                        {"floor", [](double v) { return std::floor(v); }},
                        {"ceil", [](double v) { return std::ceil(v); }},
                        {"round", [](double v) { return std::nearbyint(v); }}};
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x(t, {static_cast<int64_t>(values.size())});
    for (size_t k = 0; k < values.size(); ++k)
      x.set(k, values[k]);
    for (const Case& c : cases) {
      test::RunSpec spec{std::string("ops/math.toml:") + c.name,
                         {{"N", static_cast<int64_t>(values.size())}},
                         {{"T", t}}};
      spec.given = {{"x", x}};
      test::Run want = test::run(spec);
      std::vector<std::pair<std::string, Tensor>> results = {{"interp", want.outputs[0]}};
      for (const char* runtime : {"clang", "cc", "openmp"}) {
        std::unique_ptr<Runtime> rt = Runtime::open(runtime);
        Executable exe(want.graph, *rt, CompileOptions{});
        results.push_back({runtime, exe.run(want.inputs, want.sizes)[0]});
      }
      for (const auto& [who, got] : results)
        for (size_t k = 0; k < values.size(); ++k) {
          double in = x.at(k), expect = c.ref(in), y = got.at(k);
          CAPTURE(c.name);
          CAPTURE(dtype_name(t));
          CAPTURE(who);
          CAPTURE(in);
          CHECK_MESSAGE(
              (std::isnan(expect) ? std::isnan(y)
                                  : y == expect && std::signbit(y) == std::signbit(expect)),
              "got " << y << ", want " << expect);
        }
    }
  }
}

TEST_CASE("runtime ops: integer pow matches the interpreter on every exponent bit") {
  // Square and multiply over every bit of the exponent (dsl: Lowerer::power): wrapping
  // products, large and negative exponents, on every CPU runtime.
  for (DType t :
       {DType::i64, DType::i32, DType::i8, DType::u8, DType::u16, DType::u32, DType::u64}) {
    std::vector<int64_t> a, b;
    for (int base = is_signed_int(t) ? -4 : 0; base <= 5; ++base)
      for (int e : {-2, -1, 0, 1, 2, 7, 8, 31, 32, 63, 64, 127})
        if (is_signed_int(t) || e >= 0) a.push_back(base), b.push_back(e);
    const auto n = static_cast<int64_t>(a.size());
    Tensor ta(t, {n}), tb(t, {n});
    for (int64_t k = 0; k < n; ++k)
      ta.set(k, static_cast<double>(a[k])), tb.set(k, static_cast<double>(b[k]));
    test::RunSpec spec{"ops/math.toml:pow", {{"N", n}}, {{"T", t}}};
    spec.given = {{"a", ta}, {"b", tb}};
    test::Run want = test::run(spec);
    for (const char* runtime : {"clang", "cc", "openmp"}) {
      CAPTURE(runtime);
      CAPTURE(dtype_name(t));
      std::unique_ptr<Runtime> rt = Runtime::open(runtime);
      Executable exe(want.graph, *rt, CompileOptions{});
      Comparison cmp = compare(exe.run(want.inputs, want.sizes)[0], want.outputs[0],
                               tolerance_for(t, std::nullopt, std::nullopt, want.outputs[0]));
      CHECK_MESSAGE(cmp.ok,
                    "element " << cmp.first_bad << ": got " << cmp.got << ", want " << cmp.want);
    }
  }
}

TEST_CASE("runtime ops: u16, u32 and u64 at 0, 1, the top bit and the maximum") {
  // Unsigned division, modulus, max, compare, logical shifts and float conversions, where a
  // signed reading would differ; u64 values past 2^63 must come back exact on every runtime.
  for (DType t : {DType::u16, DType::u32, DType::u64}) {
    const int bits = dtype_bits(t);
    const uint64_t top = uint64_t{1} << (bits - 1), max = top - 1 + top;
    const std::vector<uint64_t> specials = {0, 1, 2, top - 1, top, top + 1, max - 1, max};
    std::vector<uint64_t> a, b;
    for (uint64_t x : specials)
      for (uint64_t y : specials)
        a.push_back(x), b.push_back(y);
    const auto n = static_cast<int64_t>(a.size());
    Tensor ta(t, {n}), tb(t, {n});
    for (int64_t k = 0; k < n; ++k)
      ta.set_int(k, static_cast<int64_t>(a[k])), tb.set_int(k, static_cast<int64_t>(b[k]));
    test::RunSpec spec{"tests/regressions/unsigned.toml:unsigned_edges", {{"N", n}}, {{"U", t}}};
    spec.given = {{"a", ta}, {"b", tb}};
    test::Run want = test::run(spec);
    const Tensor& m = want.outputs[2];
    CHECK(static_cast<uint64_t>(m.i[n - 1]) == max);  // maximum(max, max), as held
    CHECK(want.outputs[3].i[1] == 1);                 // 0 < 1
    CHECK(want.outputs[3].i[4 * 8] == 0);             // top < 0 is false
    for (const char* runtime : {"clang", "cc", "openmp"}) {
      CAPTURE(runtime);
      CAPTURE(dtype_name(t));
      std::unique_ptr<Runtime> rt = Runtime::open(runtime);
      Executable exe(want.graph, *rt, CompileOptions{});
      std::vector<Tensor> got = exe.run(want.inputs, want.sizes);
      for (size_t o = 0; o < got.size(); ++o) {
        CAPTURE(o);
        Comparison cmp = compare(got[o], want.outputs[o], Tolerance{0, 0});
        CHECK_MESSAGE(cmp.ok,
                      "element " << cmp.first_bad << ": got " << cmp.got << ", want " << cmp.want);
      }
    }
  }
}

TEST_CASE(
    "runtime ops: log1p, expm1, tanh, softplus and mish keep their digits where 1 ± tiny "
    "cancels") {
  // Inputs where a naive body loses digits to cancellation (log(1 + x) for tiny x, exp(x) - 1
  // near 0, (1 - e) / (1 + e) for small |x|, softplus and mish far below 0), and the ends of
  // each domain; every result within kMaxUlps units in the last place of a long double
  // reference, in f32 and f64, under the interpreter and every CPU runtime. A body that goes
  // through exp may add |x| ulps: exp(x) is exp2(x * log2(e)), and the product's rounding is a
  // relative error of about |x| ulps in the result (docs/decisions.md). A naive body misses by
  // thousands (softplus at -10 in f32: 1.3e-3 relative).
  constexpr double kMaxUlps = 4;
  const std::vector<double> small = {1e-30, 1e-10, 1e-7, 3e-6, 1e-5, 1e-3, 0.01, 0.0999, 0.1};
  auto both_signs = [](std::vector<double> v, const std::vector<double>& more) {
    for (size_t k = 0, n = v.size(); k < n; ++k)
      v.push_back(-v[k]);
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  struct Case {
    const char* name;
    long double (*ref)(long double);
    std::vector<double> inputs;
    bool through_exp = true;
  };
  auto softplus = [](long double x) {
    return std::max(x, 0.0L) + std::log1p(std::exp(-std::fabs(x)));
  };
  const Case cases[] = {
      {"log1p", [](long double x) { return std::log1p(x); },
       both_signs(small, {0.5, -0.5, -0.9, 1, 10, 1e10, 1e30, 0}), false},
      {"expm1", [](long double x) { return std::expm1(x); },
       both_signs(small, {0.5, -0.5, 1, -1, 5, -5, 20, -20, 80, -100, 0})},
      {"tanh", [](long double x) { return std::tanh(x); },
       both_signs(small, {0.2, -0.2, 0.5, -0.5, 1, -1, 5, -5, 30, -30, 0})},
      {"softplus", +softplus, {-80, -30, -20, -10, -5, -1, -0.1, 0, 0.1, 1, 5, 20, 30, 100}},
      {"mish",
       [](long double x) {
         return x * std::tanh(std::max(x, 0.0L) + std::log1p(std::exp(-std::fabs(x))));
       },
       {-20, -10, -5, -1, -0.01, 0, 0.01, 1, 5, 10}},
  };
  for (DType t : {DType::f32, DType::f64}) {
    const int digits = t == DType::f32 ? 24 : 53;
    for (const Case& c : cases) {
      const auto n = static_cast<int64_t>(c.inputs.size());
      Tensor x(t, {n});
      for (int64_t k = 0; k < n; ++k)
        x.set(k, c.inputs[k]);
      test::RunSpec spec{std::string("ops/math.toml:") + c.name, {{"N", n}}, {{"T", t}}};
      spec.given = {{"x", x}};
      test::Run want = test::run(spec);
      std::vector<std::pair<std::string, Tensor>> results = {{"interp", want.outputs[0]}};
      for (const char* runtime : {"clang", "cc", "openmp"}) {
        std::unique_ptr<Runtime> rt = Runtime::open(runtime);
        Executable exe(want.graph, *rt, CompileOptions{});
        results.push_back({runtime, exe.run(want.inputs, want.sizes)[0]});
      }
      for (const auto& [who, got] : results) {
        double worst = 0;
        for (int64_t k = 0; k < n; ++k) {
          long double in = x.at(k), expect = c.ref(in);
          double y = got.at(k);
          CAPTURE(std::string(c.name));
          CAPTURE(dtype_name(t));
          CAPTURE(who);
          CAPTURE(static_cast<double>(in));
          if (std::isinf(expect) || expect == 0) {
            CHECK(y == static_cast<double>(expect));
            continue;
          }
          // One unit in the last place of the dtype at the reference's magnitude.
          long double ulp = std::ldexp(1.0L, std::ilogb(expect) - (digits - 1));
          double ulps = static_cast<double>(std::fabs(y - expect) / ulp);
          worst = std::max(worst, ulps);
          double allowed = kMaxUlps + (c.through_exp ? std::fabs(static_cast<double>(in)) : 0);
          CHECK_MESSAGE(ulps <= allowed, "got " << y << ", want " << static_cast<double>(expect)
                                                << ": " << ulps << " ulps");
        }
        MESSAGE(std::string(c.name)
                << " " << dtype_name(t) << " " << who << ": at most " << worst << " ulps");
      }
    }
  }
}

TEST_CASE("sweep: KILN_SWEEP_SHARD takes I/N of the programs, else one clear message") {
  const char* before = std::getenv("KILN_SWEEP_SHARD");
  const std::string kept = before ? before : "";
  ::setenv("KILN_SWEEP_SHARD", "2/5", 1);
  test::Shard s = test::sweep_shard();
  CHECK(s.index == 2);
  CHECK(s.count == 5);
  for (const char* bad : {"5/5", "x", "1/0", "-1/3", "1/", "/3", "1/3x", "1/+3"}) {
    CAPTURE(bad);
    ::setenv("KILN_SWEEP_SHARD", bad, 1);
    CHECK_THROWS_WITH_AS(
        test::sweep_shard(),
        ("KILN_SWEEP_SHARD='" + std::string(bad) + "': expected I/N with 0 <= I < N").c_str(),
        std::runtime_error);
  }
  ::unsetenv("KILN_SWEEP_SHARD");
  CHECK(test::sweep_shard().count == 1);
  CHECK(test::sweep_shard().index == 0);
  if (before) ::setenv("KILN_SWEEP_SHARD", kept.c_str(), 1);
}
