// ops/math.toml: every elementwise composite against an independent <cmath> reference, at sizes
// 1, 7 and 1000 (odd and degenerate), with and without batch dimensions, in f64, f32, f16 and bf16.
// The interpreter computes in double, so the only differences are the approximation itself (erf)
// and the constants of a body, which are rounded to the dtype (loose tolerances for f16/bf16).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/harness.h"

namespace {

using kiln::DType;
using kiln::test::RunSpec;

/** Tolerance of one dtype: float constants in a body are rounded to it. */
struct Tolerance {
  double rtol, atol;
};

Tolerance dtype_tolerance(DType t) {
  switch (t) {
    case DType::f64:
      return {1e-12, 1e-12};
    case DType::f32:
      return {2e-6, 1e-6};
    case DType::f16:
      return {1e-2, 1e-2};
    default:
      return {5e-2, 5e-2};
  }
}

const std::vector<DType> kFloatTypes = {DType::f64, DType::f32, DType::f16, DType::bf16};

/** Sizes N and batch shapes every elementwise op is run at. */
struct Shape {
  int64_t n;
  std::vector<int64_t> batch;
};
const std::vector<Shape> kShapes = {{1, {}}, {7, {}}, {1000, {}}, {1, {3}}, {7, {3, 5}}};

RunSpec spec_for(const std::string& comp, DType t, const Shape& s, uint64_t seed = 1) {
  RunSpec spec;
  spec.target = "ops/math.toml:" + comp;
  spec.sizes = {{"N", s.n}};
  spec.dtypes = {{"T", t}};
  spec.batch = s.batch;
  spec.seed = seed;
  return spec;
}

double erf_ref(double x) {
  return std::erf(x);
}
double sigmoid_ref(double x) {
  return 1 / (1 + std::exp(-x));
}
double softplus_ref(double x) {
  return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0);
}

/** A unary composite, its reference and the error of its approximation (beyond the dtype's). */
struct UnaryCase {
  const char* name;
  std::function<double(double)> ref;
  double approx_atol = 0;
};

const std::vector<UnaryCase> kUnary = {
    {"neg", [](double x) { return -x; }},
    {"abs", [](double x) { return std::fabs(x); }},
    {"exp", [](double x) { return std::exp(x); }},
    {"log", [](double x) { return std::log(x); }},
    {"sqrt", [](double x) { return std::sqrt(x); }},
    {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
    {"sigmoid", sigmoid_ref},
    {"tanh", [](double x) { return std::tanh(x); }},
    {"relu", [](double x) { return std::max(x, 0.0); }},
    {"leaky_relu", [](double x) { return x < 0 ? 0.01 * x : x; }},
    {"erf", erf_ref, 2e-7},
    {"gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, 1e-6},
    {"gelu_tanh",
     [](double x) {
       return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
     }},
    {"silu", [](double x) { return x * sigmoid_ref(x); }},
    {"log1p", [](double x) { return std::log1p(x); }},
    {"expm1", [](double x) { return std::expm1(x); }},
    {"softplus", softplus_ref},
    {"mish", [](double x) { return x * std::tanh(softplus_ref(x)); }},
    {"clamp", [](double x) { return std::min(std::max(x, 0.0), 1.0); }},
    {"trunc", [](double x) { return std::trunc(x); }},
    {"floor", [](double x) { return std::floor(x); }},
    {"ceil", [](double x) { return std::ceil(x); }},
    {"round", [](double x) { return std::nearbyint(x); }},  // halves to even
};

/** A binary composite with a float result. */
struct BinaryCase {
  const char* name;
  std::function<double(double, double)> ref;
};

const std::vector<BinaryCase> kBinary = {
    {"add", [](double a, double b) { return a + b; }},
    {"sub", [](double a, double b) { return a - b; }},
    {"mul", [](double a, double b) { return a * b; }},
    {"div", [](double a, double b) { return a / b; }},
    {"pow", [](double a, double b) { return std::pow(a, b); }},
    {"minimum", [](double a, double b) { return std::min(a, b); }},
    {"maximum", [](double a, double b) { return std::max(a, b); }},
};

/** A comparison composite with a bool result. */
struct CompareCase {
  const char* name;
  std::function<bool(double, double)> ref;
};

const std::vector<CompareCase> kCompare = {
    {"lt", [](double a, double b) { return a < b; }},
    {"le", [](double a, double b) { return a <= b; }},
    {"gt", [](double a, double b) { return a > b; }},
    {"ge", [](double a, double b) { return a >= b; }},
    {"eq", [](double a, double b) { return a == b; }},
    {"ne", [](double a, double b) { return a != b; }},
};

std::vector<double> map_unary(const kiln::Tensor& x, const std::function<double(double)>& f) {
  std::vector<double> out(x.numel());
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = f(x.at(k));
  return out;
}

std::vector<double> map_binary(const kiln::Tensor& a, const kiln::Tensor& b,
                               const std::function<double(double, double)>& f) {
  std::vector<double> out(a.numel());
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = f(a.at(k), b.at(k));
  return out;
}

/** A float tensor of shape [n] holding `values`. */
kiln::Tensor vector_tensor(DType t, const std::vector<double>& values) {
  kiln::Tensor x(t, {static_cast<int64_t>(values.size())});
  for (size_t k = 0; k < values.size(); ++k)
    x.set(k, values[k]);
  return x;
}

}  // namespace

TEST_CASE("math: unary composites match <cmath> in every float dtype") {
  for (const UnaryCase& c : kUnary)
    for (DType t : kFloatTypes)
      for (const Shape& s : kShapes) {
        CAPTURE(c.name);
        CAPTURE(kiln::dtype_name(t));
        CAPTURE(s.n);
        CAPTURE(s.batch.size());
        auto r = kiln::test::run(spec_for(c.name, t, s));
        Tolerance tol = dtype_tolerance(t);
        kiln::test::expect_close(r.out("y"), map_unary(r.in("x"), c.ref), tol.rtol,
                                 std::max(tol.atol, c.approx_atol));
      }
}

TEST_CASE("math: binary composites match <cmath> in every float dtype") {
  for (const BinaryCase& c : kBinary)
    for (DType t : kFloatTypes)
      for (const Shape& s : kShapes) {
        CAPTURE(c.name);
        CAPTURE(kiln::dtype_name(t));
        CAPTURE(s.n);
        auto r = kiln::test::run(spec_for(c.name, t, s));
        Tolerance tol = dtype_tolerance(t);
        kiln::test::expect_close(r.out("y"), map_binary(r.in("a"), r.in("b"), c.ref), tol.rtol,
                                 tol.atol);
      }
}

/** a^b in the integers of `bits` bits (signed or not), wrapping: the reference of integer pow. */
double int_pow_ref(int64_t a, int64_t b, int bits, bool is_signed) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1, base = static_cast<uint64_t>(a);
  for (; b > 0; b >>= 1, base *= base)
    if (b & 1) r *= base;
  const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  r &= mask;
  if (is_signed && bits < 64 && (r >> (bits - 1)) & 1) r |= ~mask;  // sign-extend
  return is_signed ? static_cast<double>(static_cast<int64_t>(r)) : static_cast<double>(r);
}

TEST_CASE("math: pow on integers is exact, wrapping like *, for every exponent bit") {
  // Bases around zero, exponents from -3 to past every bit that matters (products wrap).
  for (DType t : {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8}) {
    const bool is_signed = kiln::is_signed_int(t);
    std::vector<double> a, b;
    for (int base = is_signed ? -5 : 0; base <= 7; ++base)
      for (int e : {-3, -1, 0, 1, 2, 3, 5, 7, 8, 13, 31, 32, 33, 62, 63, 64, 100, 127})
        if (is_signed || e >= 0) a.push_back(base), b.push_back(e);
    CAPTURE(kiln::dtype_name(t));
    RunSpec spec = spec_for("pow", t, {static_cast<int64_t>(a.size()), {}});
    spec.given = {{"a", vector_tensor(t, a)}, {"b", vector_tensor(t, b)}};
    auto r = kiln::test::run(spec);
    std::vector<double> want;
    for (size_t k = 0; k < a.size(); ++k)
      want.push_back(int_pow_ref(static_cast<int64_t>(a[k]), static_cast<int64_t>(b[k]),
                                 kiln::dtype_bits(t), is_signed));
    kiln::test::expect_close(r.out("y"), want, 0, 0);
  }
}

TEST_CASE("math: comparisons give bool and match C++ operators") {
  for (const CompareCase& c : kCompare)
    for (DType t : {DType::f32, DType::f16, DType::i32}) {
      CAPTURE(c.name);
      CAPTURE(kiln::dtype_name(t));
      RunSpec spec = spec_for(c.name, t, {1000, {3}});
      spec.ranges = {{"a", {-3, 3}}, {"b", {-3, 3}}};  // ints in [-3, 3): many ties
      auto r = kiln::test::run(spec);
      CHECK(r.out("y").dtype == DType::boolean);
      auto ref = [&](double a, double b) { return c.ref(a, b) ? 1.0 : 0.0; };
      kiln::test::expect_close(r.out("y"), map_binary(r.in("a"), r.in("b"), ref), 0, 0);
    }
}

TEST_CASE("math: comparisons treat NaN as unordered") {
  std::vector<double> a = {NAN, 1, NAN, 2}, b = {1, NAN, NAN, 2};
  for (const CompareCase& c : kCompare) {
    CAPTURE(c.name);
    RunSpec spec = spec_for(c.name, DType::f32, {4, {}});
    spec.given = {{"a", vector_tensor(DType::f32, a)}, {"b", vector_tensor(DType::f32, b)}};
    auto r = kiln::test::run(spec);
    std::vector<double> want(a.size());
    for (size_t k = 0; k < a.size(); ++k)
      want[k] = c.ref(a[k], b[k]) ? 1 : 0;
    kiln::test::expect_close(r.out("y"), want, 0, 0);
  }
}

TEST_CASE("math: integer composites are exact") {
  struct IntCase {
    const char* name;
    std::function<double(double, double)> ref;  // unary cases ignore b
    bool unary;
  };
  const std::vector<IntCase> cases = {
      {"add", [](double a, double b) { return a + b; }, false},
      {"sub", [](double a, double b) { return a - b; }, false},
      {"mul", [](double a, double b) { return a * b; }, false},
      {"minimum", [](double a, double b) { return std::min(a, b); }, false},
      {"maximum", [](double a, double b) { return std::max(a, b); }, false},
      {"neg", [](double a, double) { return -a; }, true},
      {"abs", [](double a, double) { return std::fabs(a); }, true},
      {"relu", [](double a, double) { return std::max(a, 0.0); }, true},
  };
  for (const IntCase& c : cases)
    for (DType t : {DType::i32, DType::i64, DType::i8})
      for (const Shape& s : kShapes) {
        CAPTURE(c.name);
        CAPTURE(kiln::dtype_name(t));
        CAPTURE(s.n);
        auto r = kiln::test::run(spec_for(c.name, t, s));
        std::vector<double> want = c.unary
                                       ? map_unary(r.in("x"), [&](double a) { return c.ref(a, 0); })
                                       : map_binary(r.in("a"), r.in("b"), c.ref);
        kiln::test::expect_close(r.out("y"), want, 0, 0);
      }
}

TEST_CASE("math: minimum and maximum propagate NaN; unsigned minimum is exact") {
  std::vector<double> a = {NAN, 1, 3}, b = {1, NAN, -2};
  for (const char* name : {"minimum", "maximum"}) {
    CAPTURE(name);
    RunSpec spec = spec_for(name, DType::f64, {3, {}});
    spec.given = {{"a", vector_tensor(DType::f64, a)}, {"b", vector_tensor(DType::f64, b)}};
    auto r = kiln::test::run(spec);
    double last = std::string(name) == "minimum" ? -2 : 3;
    kiln::test::expect_close(r.out("y"), {NAN, NAN, last}, 0, 0);
  }
  RunSpec spec = spec_for("minimum", DType::u8, {7, {}});
  spec.ranges = {{"a", {0, 256}}, {"b", {0, 256}}};
  auto r = kiln::test::run(spec);
  kiln::test::expect_close(
      r.out("y"),
      map_binary(r.in("a"), r.in("b"), [](double a, double b) { return std::min(a, b); }), 0, 0);
}

TEST_CASE("math: saturating ops stay finite for large |x|") {
  std::vector<double> x = {-1000, -80, -30, 0, 30, 80, 1000};
  const std::vector<UnaryCase> cases = {
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", sigmoid_ref},
      {"softplus", softplus_ref},
      {"silu", [](double v) { return v * sigmoid_ref(v); }},
      {"mish", [](double v) { return v * std::tanh(softplus_ref(v)); }},
      {"erf", erf_ref, 2e-7},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, 1e-6},
      {"gelu_tanh",
       [](double v) {
         return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
       }},
  };
  for (const UnaryCase& c : cases)
    for (DType t : {DType::f64, DType::f32}) {
      CAPTURE(c.name);
      CAPTURE(kiln::dtype_name(t));
      RunSpec spec = spec_for(c.name, t, {static_cast<int64_t>(x.size()), {}});
      spec.given = {{"x", vector_tensor(t, x)}};
      auto r = kiln::test::run(spec);
      for (size_t k = 0; k < x.size(); ++k)
        CHECK(std::isfinite(r.out("y").at(k)));
      Tolerance tol = dtype_tolerance(t);
      kiln::test::expect_close(r.out("y"), map_unary(r.in("x"), c.ref), tol.rtol,
                               std::max(tol.atol, c.approx_atol));
    }
}

TEST_CASE("math: erf stays within the Abramowitz-Stegun 7.1.26 bound on a fine grid") {
  std::vector<double> x;
  for (int k = -6000; k <= 6000; ++k)
    x.push_back(k * 1e-3);
  RunSpec spec = spec_for("erf", DType::f64, {static_cast<int64_t>(x.size()), {}});
  spec.given = {{"x", vector_tensor(DType::f64, x)}};
  auto r = kiln::test::run(spec);
  double worst = 0;
  for (size_t k = 0; k < x.size(); ++k)
    worst = std::max(worst, std::fabs(r.out("y").at(k) - std::erf(x[k])));
  CHECK(worst <= 1.5e-7);
  CHECK(std::fabs(r.out("y").at(6000)) <= 1e-8);  // erf(0): 1 - (a1 + ... + a5) = 1e-9
}

TEST_CASE("math: attributes of leaky_relu and clamp") {
  Shape s{1000, {}};
  RunSpec leaky = spec_for("leaky_relu", DType::f64, s);
  leaky.attrs = {{"alpha", kiln::test::attr_float(0.2)}};
  auto r = kiln::test::run(leaky);
  kiln::test::expect_close(r.out("y"),
                           map_unary(r.in("x"), [](double x) { return x < 0 ? 0.2 * x : x; }));

  RunSpec clamp = spec_for("clamp", DType::f32, s);
  clamp.attrs = {{"lo", kiln::test::attr_float(-0.5)}, {"hi", kiln::test::attr_float(0.25)}};
  r = kiln::test::run(clamp);
  kiln::test::expect_close(
      r.out("y"), map_unary(r.in("x"), [](double x) { return std::min(std::max(x, -0.5), 0.25); }),
      0, 0);

  RunSpec nan = spec_for("clamp", DType::f32, {1, {}});
  nan.given = {{"x", vector_tensor(DType::f32, {NAN})}};
  CHECK(std::isnan(kiln::test::run(nan).out("y").at(0)));
}

TEST_CASE("math: where selects by a bool condition") {
  for (DType t : {DType::f32, DType::bf16, DType::i64, DType::boolean})
    for (const Shape& s : kShapes) {
      CAPTURE(kiln::dtype_name(t));
      CAPTURE(s.n);
      auto r = kiln::test::run(spec_for("where", t, s));
      const kiln::Tensor &c = r.in("cond"), &a = r.in("a"), &b = r.in("b");
      std::vector<double> want(c.numel());
      for (size_t k = 0; k < want.size(); ++k)
        want[k] = c.at(k) != 0 ? a.at(k) : b.at(k);
      kiln::test::expect_close(r.out("y"), want, 0, 0);
    }
}

TEST_CASE("math: log and exp are inverse on their domains; log(0) is -inf") {
  RunSpec spec = spec_for("log", DType::f64, {3, {}});
  spec.given = {{"x", vector_tensor(DType::f64, {0, 1, INFINITY})}};
  auto r = kiln::test::run(spec);
  kiln::test::expect_close(r.out("y"), {-INFINITY, 0, INFINITY}, 0, 0);
}
