// ops/reduce.toml: every reduction against a naive reference that groups the input's elements by
// output position, on a 3-D input [3, 5, N] (batch [3, 5]) over several axis sets, with keepdim
// true and false; argmax on ties (first index wins) and NaN; logsumexp on infinities.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/harness.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::test::RunSpec;
using Values = std::vector<double>;

/** The elements of `x` grouped by the output element they reduce into (row-major order of the
 *  output, and of the input within each group), and the output dims. */
struct Groups {
  std::vector<Values> groups;
  std::vector<int64_t> dims;
};

Groups group_by_output(const Tensor& x, std::vector<int> axes, bool keepdim) {
  int rank = static_cast<int>(x.dims.size());
  for (int& a : axes)
    a = a < 0 ? a + rank : a;
  auto reduced = [&](int d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
  std::vector<int64_t> kept_dims = x.dims;
  Groups g;
  for (int d = 0; d < rank; ++d) {
    if (reduced(d)) kept_dims[d] = 1;
    if (!reduced(d) || keepdim) g.dims.push_back(kept_dims[d]);
  }
  size_t count = 1;
  for (int64_t d : kept_dims)
    count *= static_cast<size_t>(d);
  g.groups.resize(count);
  kiln::test::for_each_index(x.dims, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> out_idx = idx;
    for (int d = 0; d < rank; ++d)
      if (reduced(d)) out_idx[d] = 0;
    g.groups[kiln::test::offset(kept_dims, out_idx)].push_back(
        x.at(kiln::test::offset(x.dims, idx)));
  });
  return g;
}

double ref_sum(const Values& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return s;
}
double ref_mean(const Values& v) {
  return ref_sum(v) / static_cast<double>(v.size());
}
double ref_max(const Values& v) {
  return *std::max_element(v.begin(), v.end());
}
double ref_min(const Values& v) {
  return *std::min_element(v.begin(), v.end());
}
double ref_prod(const Values& v) {
  double p = 1;
  for (double x : v)
    p *= x;
  return p;
}
double ref_var(const Values& v, int correction) {
  double m = ref_mean(v), s = 0;
  for (double x : v)
    s += (x - m) * (x - m);
  return s / static_cast<double>(static_cast<int>(v.size()) - correction);
}
double ref_logsumexp(const Values& v) {
  double s = 0;
  for (double x : v)
    s += std::exp(x);
  return std::log(s);
}

/** One reduction: composite, attributes beyond axis/keepdim, reference, dtypes and the f32
 *  tolerance (f64 and exact ops use 1e-10; f16 and bf16 runs need no rounding of values). */
struct ReduceCase {
  const char* name;
  std::map<std::string, kiln::AttrValue> attrs;
  std::function<double(const Values&)> ref;
  std::vector<DType> dtypes;
  double f32_tol = 1e-10;
};

const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {"sum", {}, ref_sum, {DType::f64, DType::f32, DType::f16, DType::i32}},
      {"mean", {}, ref_mean, {DType::f64, DType::f32, DType::bf16}},
      {"max", {}, ref_max, {DType::f64, DType::f32, DType::f16, DType::i32}},
      {"min", {}, ref_min, {DType::f64, DType::f32, DType::bf16, DType::i32, DType::u8}},
      {"prod", {}, ref_prod, {DType::f64, DType::f32}},
      {"var", {}, [](const Values& v) { return ref_var(v, 0); }, {DType::f64, DType::f32}},
      {"var",
       {{"correction", kiln::test::attr_int(1)}},
       [](const Values& v) { return ref_var(v, 1); },
       {DType::f64, DType::f32}},
      {"logsumexp", {}, ref_logsumexp, {DType::f64, DType::f32}, 2e-5},
  };
  return cases;
}

/** Axis sets of a rank-3 input; negative axes count from the end. */
const std::vector<std::vector<int64_t>> kAxisSets = {{-1}, {0}, {1}, {0, 2}, {-2, -1}, {0, 1, 2}};

RunSpec reduce_spec(const std::string& comp, DType t, int64_t n, std::vector<int64_t> batch) {
  RunSpec spec;
  spec.target = "ops/reduce.toml:" + comp;
  spec.sizes = {{"N", n}};
  spec.dtypes = {{"T", t}};
  spec.batch = std::move(batch);
  return spec;
}

void check_reduction(const ReduceCase& c, const RunSpec& spec, const std::vector<int>& axes,
                     bool keepdim) {
  auto r = kiln::test::run(spec);
  Groups g = group_by_output(r.in("x"), axes, keepdim);
  CHECK(r.out("y").dims == g.dims);
  Values want;
  for (const Values& v : g.groups)
    want.push_back(c.ref(v));
  double tol = spec.dtypes.at("T") == DType::f32 ? c.f32_tol : 1e-10;
  kiln::test::expect_close(r.out("y"), want, tol, tol);
}

Tensor tensor_of(DType t, std::vector<int64_t> dims, const Values& values) {
  Tensor x(t, std::move(dims));
  for (size_t k = 0; k < values.size(); ++k)
    x.set(k, values[k]);
  return x;
}

}  // namespace

TEST_CASE("reduce: every reduction over axis sets of a 3-D input, keepdim true and false") {
  for (const ReduceCase& c : reduce_cases())
    for (DType t : c.dtypes)
      for (int64_t n : {1, 7, 64})
        for (const auto& axes : kAxisSets)
          for (bool keepdim : {false, true}) {
            CAPTURE(c.name);
            CAPTURE(kiln::dtype_name(t));
            CAPTURE(n);
            CAPTURE(axes.size());
            CAPTURE(axes.front());
            CAPTURE(keepdim);
            RunSpec spec = reduce_spec(c.name, t, n, {3, 5});
            spec.attrs = c.attrs;
            spec.attrs["axis"] = kiln::test::attr_list(axes);
            spec.attrs["keepdim"] = kiln::test::attr_bool(keepdim);
            check_reduction(c, spec, {axes.begin(), axes.end()}, keepdim);
          }
}

TEST_CASE("reduce: default attributes reduce the last axis of a long row") {
  for (const ReduceCase& c : reduce_cases())
    for (std::vector<int64_t> batch : {std::vector<int64_t>{}, std::vector<int64_t>{3}}) {
      CAPTURE(c.name);
      CAPTURE(batch.size());
      RunSpec spec = reduce_spec(c.name, DType::f64, 1000, batch);
      spec.attrs = c.attrs;
      check_reduction(c, spec, {-1}, false);
    }
}

TEST_CASE("reduce: an integer axis works where the default is a list") {
  RunSpec spec = reduce_spec("sum", DType::f64, 7, {3, 5});
  spec.attrs = {{"axis", kiln::test::attr_int(1)}};
  check_reduction(reduce_cases()[0], spec, {1}, false);
}

TEST_CASE("reduce: argmax returns the first maximum along the last axis") {
  for (DType t : {DType::f64, DType::f32, DType::i32, DType::u8})
    for (int64_t n : {1, 7, 1000})
      for (bool keepdim : {false, true}) {
        CAPTURE(kiln::dtype_name(t));
        CAPTURE(n);
        CAPTURE(keepdim);
        RunSpec spec = reduce_spec("argmax", t, n, {3, 5});
        spec.attrs = {{"keepdim", kiln::test::attr_bool(keepdim)}};
        if (!kiln::is_float(t)) spec.ranges = {{"x", {0, 3}}};  // values 0..2: many ties
        auto r = kiln::test::run(spec);
        const Tensor& x = r.in("x");
        CHECK(r.out("y").dtype == DType::i64);
        std::vector<int64_t> dims = {3, 5};
        if (keepdim) dims.push_back(1);
        CHECK(r.out("y").dims == dims);
        Values want;
        for (size_t row = 0; row < 15; ++row) {
          int64_t best = 0;
          for (int64_t k = 1; k < n; ++k)
            if (x.at(row * n + k) > x.at(row * n + best)) best = k;
          want.push_back(static_cast<double>(best));
        }
        kiln::test::expect_close(r.out("y"), want, 0, 0);
      }
}

TEST_CASE("reduce: argmax ties and NaN") {
  struct Row {
    Values x;
    int64_t want;
  };
  const std::vector<Row> rows = {
      {{1, 3, 3, 2}, 1},
      {{5, 5, 5, 5}, 0},
      {{0, 1, NAN, NAN}, 2},
      {{-INFINITY, -INFINITY, -1, -1}, 2},
  };
  Values flat, want;
  for (const Row& row : rows) {
    flat.insert(flat.end(), row.x.begin(), row.x.end());
    want.push_back(static_cast<double>(row.want));
  }
  RunSpec spec = reduce_spec("argmax", DType::f32, 4, {4});
  spec.given = {{"x", tensor_of(DType::f32, {4, 4}, flat)}};
  kiln::test::expect_close(kiln::test::run(spec).out("y"), want, 0, 0);
}

TEST_CASE("reduce: argmax along every axis of a 3-D input") {
  for (int axis : {0, 1, 2, -2})
    for (bool keepdim : {false, true}) {
      CAPTURE(axis);
      CAPTURE(keepdim);
      RunSpec spec = reduce_spec("argmax", DType::i32, 7, {3, 5});
      spec.attrs = {{"axis", kiln::test::attr_int(axis)},
                    {"keepdim", kiln::test::attr_bool(keepdim)}};
      spec.ranges = {{"x", {0, 3}}};  // values 0..2: many ties
      auto r = kiln::test::run(spec);
      const Tensor& x = r.in("x");
      int ax = axis < 0 ? axis + 3 : axis;
      std::vector<int64_t> kept = x.dims;
      kept[ax] = 1;
      Values want;
      kiln::test::for_each_index(kept, [&](const std::vector<int64_t>& idx) {
        std::vector<int64_t> at = idx;
        int64_t best = 0;
        for (int64_t k = 1; k < x.dims[ax]; ++k) {
          at[ax] = k;
          double v = x.at(kiln::test::offset(x.dims, at));
          at[ax] = best;
          if (v > x.at(kiln::test::offset(x.dims, at))) best = k;
        }
        want.push_back(static_cast<double>(best));
      });
      std::vector<int64_t> dims = keepdim ? kept : std::vector<int64_t>{};
      if (!keepdim)
        for (int d = 0; d < 3; ++d)
          if (d != ax) dims.push_back(x.dims[d]);
      CHECK(r.out("y").dims == dims);
      kiln::test::expect_close(r.out("y"), want, 0, 0);
    }
}

TEST_CASE("reduce: min is exact at the integer extremes") {
  RunSpec spec = reduce_spec("min", DType::i8, 4, {2});
  spec.given = {{"x", tensor_of(DType::i8, {2, 4}, {-128, 127, 0, -1, 5, 3, 127, 4})}};
  kiln::test::expect_close(kiln::test::run(spec).out("y"), {-128, 3}, 0, 0);
  spec = reduce_spec("min", DType::u8, 3, {2});
  spec.given = {{"x", tensor_of(DType::u8, {2, 3}, {0, 255, 7, 200, 255, 201})}};
  kiln::test::expect_close(kiln::test::run(spec).out("y"), {0, 200}, 0, 0);
}

TEST_CASE("reduce: logsumexp is stable for large values and exact on infinities") {
  const double inf = std::numeric_limits<double>::infinity();
  Values flat = {1000, 1000, -1000, -1000, -inf, -inf, inf, 1, NAN, 1, -inf, 0};
  RunSpec spec = reduce_spec("logsumexp", DType::f64, 2, {6});
  spec.given = {{"x", tensor_of(DType::f64, {6, 2}, flat)}};
  auto r = kiln::test::run(spec);
  double ln2 = std::log(2.0);
  kiln::test::expect_close(r.out("y"), {1000 + ln2, -1000 + ln2, -inf, inf, NAN, 0}, 1e-12, 1e-12);
}

TEST_CASE("reduce: min and max propagate NaN") {
  Values flat = {1, NAN, 3, -2, 0, 5};
  for (const char* name : {"min", "max"}) {
    CAPTURE(name);
    RunSpec spec = reduce_spec(name, DType::f32, 3, {2});
    spec.given = {{"x", tensor_of(DType::f32, {2, 3}, flat)}};
    double last = std::string(name) == "min" ? -2 : 5;
    kiln::test::expect_close(kiln::test::run(spec).out("y"), {NAN, last}, 0, 0);
  }
}
