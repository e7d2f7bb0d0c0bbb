// ops/tensor.toml against naive index arithmetic: transpose, permute_axes, flatten, reshape,
// slice, pad, concat, gather, gather_rows, arange.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/support/harness.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::vector<int64_t>> kBatches = {{}, {2, 3}};

Run run_tensor(const std::string& target, DType t, SizeBindings sizes,
               std::vector<int64_t> batch = {}, std::map<std::string, AttrValue> attrs = {},
               std::map<std::string, std::pair<double, double>> ranges = {}) {
  RunSpec spec;
  spec.target = "ops/tensor.toml:" + target;
  spec.sizes = std::move(sizes);
  spec.dtypes = {{"T", t}};
  spec.batch = std::move(batch);
  spec.attrs = std::move(attrs);
  spec.ranges = std::move(ranges);
  return run(spec);
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

}  // namespace

TEST_CASE("tensor: transpose swaps the last two axes") {
  for (DType t : {DType::f32, DType::f64, DType::i32})
    for (const auto& batch : kBatches)
      for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {7, 4}}) {
        Run r = run_tensor("transpose", t, {{"M", m}, {"N", n}}, batch);
        const Tensor& x = r.in("x");
        std::vector<double> want;
        for (int64_t b = 0; b < product(batch); ++b)
          for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < m; ++i)
              want.push_back(x.at((b * m + i) * n + j));
        std::vector<int64_t> dims = batch;
        dims.insert(dims.end(), {n, m});
        REQUIRE(r.out("y").dims == dims);
        expect_close(r.out("y"), want, 0, 0);
      }
}

TEST_CASE("tensor: permute_axes permutes the trailing axes") {
  const int64_t l = 2, m = 3, n = 5;
  for (const std::vector<int64_t>& batch : {std::vector<int64_t>{}, {2}}) {
    Run r = run_tensor("permute_axes", DType::f64, {{"L", l}, {"M", m}, {"N", n}}, batch,
                       {{"perm", attr_list({-1, -3, -2})}});
    const Tensor& x = r.in("x");
    std::vector<double> want;
    for (int64_t b = 0; b < product(batch); ++b)
      for (int64_t c = 0; c < n; ++c)
        for (int64_t a = 0; a < l; ++a)
          for (int64_t bb = 0; bb < m; ++bb)
            want.push_back(x.at(((b * l + a) * m + bb) * n + c));
    std::vector<int64_t> dims = batch;
    dims.insert(dims.end(), {n, l, m});
    REQUIRE(r.out("y").dims == dims);
    expect_close(r.out("y"), want, 0, 0);
  }
}

TEST_CASE("tensor: flatten merges the last two axes in row-major order") {
  for (const auto& batch : kBatches)
    for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {4, 1}}) {
      Run f = run_tensor("flatten", DType::f32, {{"M", m}, {"N", n}}, batch);
      std::vector<double> x;
      for (size_t k = 0; k < f.in("x").numel(); ++k)
        x.push_back(f.in("x").at(k));
      std::vector<int64_t> dims = batch;
      dims.push_back(m * n);
      REQUIRE(f.out("y").dims == dims);
      expect_close(f.out("y"), x, 0, 0);
    }
}

TEST_CASE("tensor: reshape keeps row-major order; -1 takes the remaining elements") {
  struct Case {
    std::vector<int64_t> batch;
    int64_t n;
    std::vector<int64_t> shape, want;
  };
  const Case cases[] = {
      {{}, 12, {3, 4}, {3, 4}},       {{}, 12, {-1, 6}, {2, 6}},
      {{3, 4}, 7, {-1}, {84}},        {{3, 4}, 1, {2, -1, 3}, {2, 2, 3}},
      {{}, 1, {1, 1, -1}, {1, 1, 1}}, {{3, 4}, 7, {12, 7}, {12, 7}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.n);
    RunSpec spec;
    spec.target = "ops/tensor.toml:reshape";
    spec.sizes = {{"N", c.n}};
    spec.batch = c.batch;
    spec.attrs = {{"shape", attr_list(c.shape)}};
    spec.specialize = true;  // constant shapes need constant sizes
    Run r = run(spec);
    std::vector<double> x;
    for (size_t k = 0; k < r.in("x").numel(); ++k)
      x.push_back(r.in("x").at(k));
    REQUIRE(r.out("y").dims == c.want);
    expect_close(r.out("y"), x, 0, 0);
  }
  RunSpec bad;
  bad.target = "ops/tensor.toml:reshape";
  bad.sizes = {{"N", 12}};
  bad.attrs = {{"shape", attr_list({5, -1})}};
  bad.specialize = true;
  CHECK_THROWS_AS(run(bad), SpecError);  // 12 elements do not split into 5 rows
  bad.specialize = false;
  bad.attrs = {{"shape", attr_list({3, 4})}};
  // Symbolic N is not provably 12: N == 12 is checked when N is bound (docs/spec-language.md,
  // "Shape facts"), and 13 breaks it.
  CHECK(run(bad).out("y").dims == std::vector<int64_t>{3, 4});
  bad.sizes = {{"N", 13}};
  CHECK_THROWS_AS(run(bad), SizeCheckError);
  bad.sizes = {{"N", 12}};
  bad.attrs = {{"shape", attr_list({1, -1})}};
  CHECK(run(bad).out("y").dims == std::vector<int64_t>{1, 12});  // symbolic -1 works
}

TEST_CASE("tensor: slice with start, stop, step and negative positions") {
  struct Case {
    int64_t n, start, stop, step;
  };
  const Case cases[] = {{1, 0, 0, 1},  {7, 0, 0, 1},   {7, 2, 5, 1},    {7, 1, 0, 2},
                        {7, -3, 0, 1}, {12, 0, -1, 3}, {12, -5, 11, 2}, {5, 4, 5, 1}};
  for (const Case& c : cases)
    for (const auto& batch : kBatches) {
      CAPTURE(c.n);
      CAPTURE(c.start);
      CAPTURE(c.stop);
      CAPTURE(c.step);
      Run r = run_tensor(
          "slice", DType::f64, {{"N", c.n}}, batch,
          {{"start", attr_int(c.start)}, {"stop", attr_int(c.stop)}, {"step", attr_int(c.step)}});
      int64_t first = c.start < 0 ? c.start + c.n : c.start;
      int64_t last = c.stop <= 0 ? c.stop + c.n : c.stop;
      const Tensor& x = r.in("x");
      std::vector<double> want;
      for (int64_t b = 0; b < product(batch); ++b)
        for (int64_t k = first; k < last; k += c.step)
          want.push_back(x.at(b * c.n + k));
      expect_close(r.out("y"), want, 0, 0);
    }
}

TEST_CASE("tensor: pad fills with value on both sides") {
  struct Case {
    int64_t n, before, after;
    double value;
  };
  const Case cases[] = {{1, 0, 0, 0.0}, {1, 2, 1, -1.5}, {4, 0, 3, 7.0}, {7, 3, 0, 0.0}};
  for (DType t : {DType::f32, DType::f64})
    for (const Case& c : cases)
      for (const auto& batch : kBatches) {
        Run r = run_tensor("pad", t, {{"N", c.n}}, batch,
                           {{"before", attr_int(c.before)},
                            {"after", attr_int(c.after)},
                            {"value", attr_float(c.value)}});
        const Tensor& x = r.in("x");
        std::vector<double> want;
        for (int64_t b = 0; b < product(batch); ++b) {
          for (int64_t k = 0; k < c.before; ++k)
            want.push_back(c.value);
          for (int64_t k = 0; k < c.n; ++k)
            want.push_back(x.at(b * c.n + k));
          for (int64_t k = 0; k < c.after; ++k)
            want.push_back(c.value);
        }
        expect_close(r.out("y"), want, 0, 0);
      }
}

TEST_CASE("tensor: slice and pad along a batch axis") {
  const int64_t n = 4;
  const std::vector<int64_t> batch = {2, 5};
  Run s = run_tensor("slice", DType::f64, {{"N", n}}, batch,
                     {{"axis", attr_int(-2)},
                      {"start", attr_int(-4)},
                      {"stop", attr_int(0)},
                      {"step", attr_int(2)}});
  std::vector<double> want;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 1; b < 5; b += 2)
      for (int64_t k = 0; k < n; ++k)
        want.push_back(s.in("x").at(offset({2, 5, n}, {a, b, k})));
  REQUIRE(s.out("y").dims == std::vector<int64_t>{2, 2, n});
  expect_close(s.out("y"), want, 0, 0);

  Run p = run_tensor("pad", DType::f32, {{"N", n}}, batch,
                     {{"axis", attr_int(1)},
                      {"before", attr_int(1)},
                      {"after", attr_int(2)},
                      {"value", attr_float(-3.0)}});
  REQUIRE(p.out("y").dims == std::vector<int64_t>{2, 8, n});
  want.clear();
  for_each_index({2, 8, n}, [&](const std::vector<int64_t>& i) {
    bool inside = i[1] >= 1 && i[1] < 6;
    want.push_back(inside ? p.in("x").at(offset({2, 5, n}, {i[0], i[1] - 1, i[2]})) : -3.0);
  });
  expect_close(p.out("y"), want, 0, 0);
}

TEST_CASE("tensor: concat joins the last axis") {
  for (DType t : {DType::f32, DType::f64, DType::i64})
    for (const auto& batch : kBatches)
      for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 4}, {6, 1}}) {
        Run r = run_tensor("concat", t, {{"M", m}, {"N", n}}, batch);
        const Tensor &a = r.in("a"), &b = r.in("b");
        std::vector<double> want;
        for (int64_t row = 0; row < product(batch); ++row) {
          for (int64_t k = 0; k < m; ++k)
            want.push_back(a.at(row * m + k));
          for (int64_t k = 0; k < n; ++k)
            want.push_back(b.at(row * n + k));
        }
        expect_close(r.out("y"), want, 0, 0);
      }
}

TEST_CASE("tensor: gather picks along the last axis; out-of-range gives 0") {
  for (DType it : {DType::i32, DType::i64})
    for (const auto& batch : kBatches)
      for (auto [k_size, m] : {std::pair<int64_t, int64_t>{1, 1}, {5, 3}, {9, 12}}) {
        RunSpec spec;
        spec.target = "ops/tensor.toml:gather";
        spec.sizes = {{"K", k_size}, {"M", m}};
        spec.dtypes = {{"T", DType::f64}, {"I", it}};
        spec.batch = batch;
        spec.ranges = {{"idx", {-1.0, static_cast<double>(k_size + 1)}}};
        Run r = run(spec);
        const Tensor &x = r.in("x"), &idx = r.in("idx");
        std::vector<double> want;
        for (int64_t row = 0; row < product(batch); ++row)
          for (int64_t j = 0; j < m; ++j) {
            auto i = static_cast<int64_t>(idx.at(row * m + j));
            want.push_back(i >= 0 && i < k_size ? x.at(row * k_size + i) : 0.0);
          }
        expect_close(r.out("y"), want, 0, 0);
      }
}

TEST_CASE("tensor: gather_rows picks rows per column") {
  for (DType it : {DType::i32, DType::i64})
    for (auto [k_size, m, n] :
         {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {5, 3, 2}, {9, 12, 7}}) {
      RunSpec spec;
      spec.target = "ops/tensor.toml:gather_rows";
      spec.sizes = {{"K", k_size}, {"M", m}, {"N", n}};
      spec.dtypes = {{"T", DType::f32}, {"I", it}};
      spec.ranges = {{"idx", {0.0, static_cast<double>(k_size)}}};
      Run r = run(spec);
      const Tensor &x = r.in("x"), &idx = r.in("idx");
      std::vector<double> want;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          want.push_back(x.at(static_cast<int64_t>(idx.at(i * n + j)) * n + j));
      expect_close(r.out("y"), want, 0, 0);
    }
}

TEST_CASE("tensor: arange counts from start by step") {
  for (DType t : {DType::f32, DType::f64})
    for (int64_t n : {1, 5, 100}) {
      Run r = run_tensor("arange", t, {{"N", n}}, {},
                         {{"start", attr_float(-2.5)}, {"step", attr_float(0.25)}});
      std::vector<double> want;
      for (int64_t i = 0; i < n; ++i)
        want.push_back(-2.5 + 0.25 * static_cast<double>(i));
      expect_close(r.out("y"), want, 0, 0);
    }
}
