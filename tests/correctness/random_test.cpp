// ops/random.toml: Threefry-2x32-20 against the published Random123 known-answer vectors, and
// the statistics of uniform and normal.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/support/harness.h"

using namespace kiln;
using namespace kiln::test;

namespace {

/** A Random123 known-answer vector: counter, key, expected words. */
struct Kat {
  int64_t c0, c1, k0, k1, y0, y1;
};

/** threefry2x32_20 vectors from Random123's kat_vectors (also used by JAX's tests). */
const Kat kKats[] = {
    {0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0},
};

Tensor words(const std::vector<int64_t>& v, std::vector<int64_t> dims) {
  Tensor t(DType::i64, std::move(dims));
  for (size_t k = 0; k < v.size(); ++k)
    t.set_int(k, v[k]);
  return t;
}

/** Runs a source composite (uniform or normal) of shape [m, n]. */
Run run_source(const std::string& name, DType t, int64_t m, int64_t n,
               std::map<std::string, AttrValue> attrs) {
  RunSpec spec;
  spec.target = "ops/random.toml:" + name;
  spec.sizes = {{"M", m}, {"N", n}};
  spec.dtypes = {{"T", t}};
  spec.attrs = std::move(attrs);
  return run(spec);
}

struct Moments {
  double mean = 0, var = 0, lo = INFINITY, hi = -INFINITY;
};

Moments moments(const Tensor& t) {
  Moments m;
  double n = static_cast<double>(t.numel());
  for (size_t k = 0; k < t.numel(); ++k) {
    m.mean += t.at(k) / n;
    m.lo = std::min(m.lo, t.at(k));
    m.hi = std::max(m.hi, t.at(k));
  }
  for (size_t k = 0; k < t.numel(); ++k)
    m.var += (t.at(k) - m.mean) * (t.at(k) - m.mean) / n;
  return m;
}

}  // namespace

TEST_CASE("random: threefry2x32 matches the Random123 known-answer vectors") {
  for (const std::vector<int64_t>& batch : {std::vector<int64_t>{}, {2}}) {
    size_t copies = batch.empty() ? 1 : 2;
    std::vector<int64_t> c0, c1, k0, k1;
    for (size_t copy = 0; copy < copies; ++copy)
      for (const Kat& kat : kKats) {
        c0.push_back(kat.c0), c1.push_back(kat.c1);
        k0.push_back(kat.k0), k1.push_back(kat.k1);
      }
    std::vector<int64_t> dims = batch;
    dims.push_back(3);
    RunSpec spec;
    spec.target = "ops/random.toml:threefry2x32";
    spec.sizes = {{"N", 3}};
    spec.batch = batch;
    spec.given = {{"c0", words(c0, dims)},
                  {"c1", words(c1, dims)},
                  {"k0", words(k0, dims)},
                  {"k1", words(k1, dims)}};
    Run r = run(spec);
    std::vector<double> want0, want1;
    for (size_t copy = 0; copy < copies; ++copy)
      for (const Kat& kat : kKats) {
        want0.push_back(static_cast<double>(kat.y0));
        want1.push_back(static_cast<double>(kat.y1));
      }
    expect_close(r.out("y0"), want0, 0, 0);
    expect_close(r.out("y1"), want1, 0, 0);
  }
}

TEST_CASE("random: rotl32 rotates 32-bit words") {
  const std::vector<int64_t> x = {0, 1, 0x80000000, 0xffffffff, 0x12345678};
  for (int64_t r : {1, 13, 31}) {
    RunSpec spec;
    spec.target = "ops/random.toml:rotl32";
    spec.sizes = {{"N", 5}};
    spec.attrs = {{"r", attr_int(r)}};
    spec.given = {{"x", words(x, {5})}};
    std::vector<double> want;
    for (int64_t v : x) {
      uint32_t u = static_cast<uint32_t>(v);
      want.push_back(static_cast<double>(static_cast<uint32_t>((u << r) | (u >> (32 - r)))));
    }
    expect_close(run(spec).out("y"), want, 0, 0);
  }
}

TEST_CASE("random: uniform lies in [0, 1) with mean 1/2 and variance 1/12") {
  for (DType t : {DType::f32, DType::f64}) {
    Run r = run_source("uniform", t, 300, 334, {{"seed", attr_int(42)}});
    Moments m = moments(r.out("y"));
    CHECK(m.lo >= 0.0);
    CHECK(m.hi < 1.0);
    CHECK(std::fabs(m.mean - 0.5) < 0.005);
    CHECK(std::fabs(m.var - 1.0 / 12) < 0.002);
  }
}

TEST_CASE("random: uniform is the top 24 bits of threefry(flat index, 0; seed, 0)") {
  const int64_t m = 3, n = 5, seed = 7;
  Run u = run_source("uniform", DType::f64, m, n, {{"seed", attr_int(seed)}});
  std::vector<int64_t> c0, zeros(m * n, 0), k0(m * n, seed);
  for (int64_t k = 0; k < m * n; ++k)
    c0.push_back(k);
  RunSpec spec;
  spec.target = "ops/random.toml:threefry2x32";
  spec.sizes = {{"N", m * n}};
  spec.given = {{"c0", words(c0, {m * n})},
                {"c1", words(zeros, {m * n})},
                {"k0", words(k0, {m * n})},
                {"k1", words(zeros, {m * n})}};
  Run bits = run(spec);
  std::vector<double> want;
  for (int64_t k = 0; k < m * n; ++k)
    want.push_back(
        std::ldexp(static_cast<double>(static_cast<int64_t>(bits.out("y0").at(k)) >> 8), -24));
  expect_close(u.out("y"), want, 0, 0);
}

TEST_CASE("random: uniform scales to [lo, hi) and sizes 1 and odd work") {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {1, 7}, {3, 5}}) {
    Run r = run_source("uniform", DType::f32, m, n,
                       {{"seed", attr_int(3)}, {"lo", attr_float(-2.0)}, {"hi", attr_float(5.0)}});
    REQUIRE(r.out("y").dims == std::vector<int64_t>{m, n});
    Moments s = moments(r.out("y"));
    CHECK(s.lo >= -2.0);
    CHECK(s.hi < 5.0);
  }
}

TEST_CASE("random: different seeds give different streams, equal seeds equal ones") {
  Run a = run_source("uniform", DType::f64, 16, 16, {{"seed", attr_int(0)}});
  Run b = run_source("uniform", DType::f64, 16, 16, {{"seed", attr_int(1)}});
  Run c = run_source("uniform", DType::f64, 16, 16, {{"seed", attr_int(1)}});
  size_t same = 0;
  std::set<double> distinct;
  for (size_t k = 0; k < a.out("y").numel(); ++k) {
    same += a.out("y").at(k) == b.out("y").at(k);
    distinct.insert(a.out("y").at(k));
    CHECK(b.out("y").at(k) == c.out("y").at(k));
  }
  CHECK(same < 3);
  CHECK(distinct.size() > 250);
  Run na = run_source("normal", DType::f64, 4, 4, {{"seed", attr_int(0)}});
  Run nb = run_source("normal", DType::f64, 4, 4, {{"seed", attr_int(9)}});
  CHECK(na.out("y").at(0) != nb.out("y").at(0));
}

TEST_CASE("random: normal has mean 0 and variance 1, shifted by mean and std") {
  for (DType t : {DType::f32, DType::f64}) {
    Run r = run_source("normal", t, 300, 334, {{"seed", attr_int(5)}});
    Moments m = moments(r.out("y"));
    CHECK(std::fabs(m.mean) < 0.02);
    CHECK(std::fabs(m.var - 1.0) < 0.02);
    CHECK(std::isfinite(m.lo));
    CHECK(std::isfinite(m.hi));
    size_t beyond_two = 0;
    for (size_t k = 0; k < r.out("y").numel(); ++k)
      beyond_two += std::fabs(r.out("y").at(k)) > 2;
    double frac = static_cast<double>(beyond_two) / static_cast<double>(r.out("y").numel());
    CHECK(std::fabs(frac - 0.0455) < 0.005);  // P(|z| > 2) of a standard normal
  }
  Run s = run_source("normal", DType::f64, 100, 101,
                     {{"seed", attr_int(5)}, {"mean", attr_float(3.0)}, {"std", attr_float(0.5)}});
  Moments m = moments(s.out("y"));
  CHECK(std::fabs(m.mean - 3.0) < 0.02);
  CHECK(std::fabs(m.var - 0.25) < 0.01);
}
