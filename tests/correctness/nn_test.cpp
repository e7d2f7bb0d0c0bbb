// ops/nn.toml against independent expectations: naive loops for the products, normalisations,
// convolution, pooling and attention; identities for softmax and log_softmax.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/support/harness.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<DType> kFloatTypes = {DType::f32, DType::f64};

/** Tolerances for comparing a composite with a naive double-precision loop. */
double rtol_for(DType t) {
  return t == DType::f32 ? 1e-5 : 1e-11;
}
double atol_for(DType t) {
  return t == DType::f32 ? 1e-5 : 1e-11;
}

/** Runs `target` with dtype T = `t`, the given sizes, batch and attributes. */
Run run_nn(const std::string& target, DType t, SizeBindings sizes, std::vector<int64_t> batch = {},
           std::map<std::string, AttrValue> attrs = {}, uint64_t seed = 1) {
  RunSpec spec;
  spec.target = "ops/nn.toml:" + target;
  spec.sizes = std::move(sizes);
  spec.dtypes = {{"T", t}};
  spec.batch = std::move(batch);
  spec.attrs = std::move(attrs);
  spec.seed = seed;
  return run(spec);
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/** Naive y = alpha * op(a) @ op(b) + beta * c for row-major a, b, c. */
std::vector<double> naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, int64_t m_size,
                               int64_t k_size, int64_t n_size, bool trans_a, bool trans_b,
                               double alpha, double beta) {
  std::vector<double> y(m_size * n_size);
  for (int64_t m = 0; m < m_size; ++m)
    for (int64_t n = 0; n < n_size; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < k_size; ++k) {
        double av = trans_a ? a.at(k * m_size + m) : a.at(m * k_size + k);
        double bv = trans_b ? b.at(n * k_size + k) : b.at(k * n_size + n);
        acc += av * bv;
      }
      y[m * n_size + n] = alpha * acc + (c ? beta * c->at(m * n_size + n) : 0.0);
    }
  return y;
}

/** Naive softmax of each row of length n. */
std::vector<double> naive_softmax(const Tensor& x, int64_t n) {
  std::vector<double> y(x.numel());
  for (size_t row = 0; row * n < x.numel(); ++row) {
    double m = -INFINITY, total = 0;
    for (int64_t j = 0; j < n; ++j)
      m = std::max(m, x.at(row * n + j));
    for (int64_t j = 0; j < n; ++j)
      total += std::exp(x.at(row * n + j) - m);
    for (int64_t j = 0; j < n; ++j)
      y[row * n + j] = std::exp(x.at(row * n + j) - m) / total;
  }
  return y;
}

}  // namespace

TEST_CASE("nn: matmul matches a naive triple loop") {
  struct Case {
    int64_t m, k, n;
  };
  for (DType t : kFloatTypes)
    for (Case c : {Case{1, 1, 1}, Case{3, 5, 7}, Case{17, 32, 9}, Case{1, 13, 1}}) {
      CAPTURE(c.m);
      CAPTURE(c.k);
      CAPTURE(c.n);
      Run r = run_nn("matmul", t, {{"M", c.m}, {"K", c.k}, {"N", c.n}});
      expect_close(r.out("y"),
                   naive_gemm(r.in("a"), r.in("b"), nullptr, c.m, c.k, c.n, false, false, 1, 0),
                   rtol_for(t), atol_for(t));
    }
}

TEST_CASE("nn: bmm multiplies each batch entry") {
  for (DType t : kFloatTypes)
    for (int64_t b_size : {1, 3}) {
      const int64_t m = 4, k = 5, n = 3;
      Run r = run_nn("bmm", t, {{"B", b_size}, {"M", m}, {"K", k}, {"N", n}});
      std::vector<double> want;
      for (int64_t b = 0; b < b_size; ++b) {
        Tensor a(t, {m, k}), bb(t, {k, n});
        for (int64_t e = 0; e < m * k; ++e)
          a.set(e, r.in("a").at(b * m * k + e));
        for (int64_t e = 0; e < k * n; ++e)
          bb.set(e, r.in("b").at(b * k * n + e));
        auto y = naive_gemm(a, bb, nullptr, m, k, n, false, false, 1, 0);
        want.insert(want.end(), y.begin(), y.end());
      }
      expect_close(r.out("y"), want, rtol_for(t), atol_for(t));
    }
}

TEST_CASE("nn: gemm with alpha, beta and transposed operands") {
  struct Case {
    int64_t m, k, n;
    bool trans_a, trans_b;
    double alpha, beta;
  };
  const Case cases[] = {{1, 1, 1, false, false, 1.0, 1.0}, {3, 5, 7, false, false, 0.5, -2.0},
                        {3, 5, 7, true, false, 1.5, 0.0},  {4, 1, 6, false, true, -1.0, 0.25},
                        {5, 3, 2, true, true, 2.0, 1.0},   {7, 9, 1, true, true, 1.0, 3.0}};
  for (DType t : kFloatTypes)
    for (const Case& c : cases) {
      CAPTURE(c.m);
      CAPTURE(c.k);
      CAPTURE(c.n);
      CAPTURE(c.trans_a);
      CAPTURE(c.trans_b);
      int64_t p = c.trans_a ? c.k : c.m, q = c.trans_a ? c.m : c.k;
      Run r = run_nn("gemm", t, {{"P", p}, {"Q", q}, {"N", c.n}}, {},
                     {{"alpha", attr_float(c.alpha)},
                      {"beta", attr_float(c.beta)},
                      {"trans_a", attr_int(c.trans_a)},
                      {"trans_b", attr_int(c.trans_b)}});
      const Tensor& cin = r.in("c");
      expect_close(r.out("y"),
                   naive_gemm(r.in("a"), r.in("b"), &cin, c.m, c.k, c.n, c.trans_a, c.trans_b,
                              c.alpha, c.beta),
                   rtol_for(t), atol_for(t));
    }
}

TEST_CASE("nn: softmax rows sum to one and match a naive softmax") {
  for (DType t : kFloatTypes)
    for (int64_t n : {1, 7, 1000})
      for (const std::vector<int64_t>& batch : {std::vector<int64_t>{}, {3, 5}}) {
        RunSpec spec;
        spec.target = "ops/nn.toml:softmax";
        spec.sizes = {{"N", n}};
        spec.dtypes = {{"T", t}};
        spec.batch = batch;
        spec.ranges = {{"x", {-20.0, 20.0}}};
        Run r = run(spec);
        const Tensor& y = r.out("y");
        expect_close(y, naive_softmax(r.in("x"), n), rtol_for(t), 1e-12);
        for (int64_t row = 0; row < product(batch); ++row) {
          double total = 0;
          for (int64_t j = 0; j < n; ++j)
            total += y.at(row * n + j);
          CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
        }
      }
}

TEST_CASE("nn: softmax is stable for large inputs") {
  Tensor x(DType::f32, {3});
  for (size_t k = 0; k < 3; ++k)
    x.set(k, 1000.0 + static_cast<double>(k));
  RunSpec spec;
  spec.target = "ops/nn.toml:softmax";
  spec.sizes = {{"N", 3}};
  spec.given = {{"x", x}};
  expect_close(run(spec).out("y"), naive_softmax(x, 3), 1e-6, 1e-12);
}

TEST_CASE("nn: log_softmax equals the log of softmax") {
  for (DType t : kFloatTypes)
    for (int64_t n : {1, 7, 300})
      for (const std::vector<int64_t>& batch : {std::vector<int64_t>{}, {2, 3}}) {
        RunSpec spec;
        spec.target = "ops/nn.toml:log_softmax";
        spec.sizes = {{"N", n}};
        spec.dtypes = {{"T", t}};
        spec.batch = batch;
        spec.ranges = {{"x", {-8.0, 8.0}}};
        Run r = run(spec);
        std::vector<double> want = naive_softmax(r.in("x"), n);
        for (double& w : want)
          w = std::log(w);
        expect_close(r.out("y"), want, rtol_for(t), atol_for(t));
      }
}

TEST_CASE("nn: layernorm and rmsnorm match naive loops") {
  for (DType t : kFloatTypes)
    for (int64_t n : {1, 7, 256})
      for (const std::vector<int64_t>& batch : {std::vector<int64_t>{}, {3, 5}}) {
        CAPTURE(n);
        const double eps = 1e-3;
        Run ln = run_nn("layernorm", t, {{"N", n}}, batch, {{"eps", attr_float(eps)}}, 7);
        Run rms = run_nn("rmsnorm", t, {{"N", n}}, batch, {{"eps", attr_float(eps)}}, 7);
        const Tensor &x = ln.in("x"), &gamma = ln.in("gamma"), &beta = ln.in("beta");
        std::vector<double> want_ln(x.numel()), want_rms(x.numel());
        for (int64_t row = 0; row < product(batch); ++row) {
          double mean = 0, var = 0, ms = 0;
          for (int64_t j = 0; j < n; ++j)
            mean += x.at(row * n + j) / n;
          for (int64_t j = 0; j < n; ++j) {
            double d = x.at(row * n + j) - mean;
            var += d * d / n;
            ms += x.at(row * n + j) * x.at(row * n + j) / n;
          }
          for (int64_t j = 0; j < n; ++j) {
            double v = x.at(row * n + j);
            want_ln[row * n + j] = (v - mean) / std::sqrt(var + eps) * gamma.at(j) + beta.at(j);
            want_rms[row * n + j] = v / std::sqrt(ms + eps) * rms.in("gamma").at(j);
          }
        }
        expect_close(ln.out("y"), want_ln, rtol_for(t), atol_for(t));
        expect_close(rms.out("y"), want_rms, rtol_for(t), atol_for(t));
      }
}

TEST_CASE("nn: conv2d matches a direct convolution with stride, padding, dilation, groups") {
  struct Case {
    int64_t b, c, h, w, f, r, s, stride, pad, dilation, groups;
  };
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1}, {2, 3, 7, 6, 4, 3, 3, 1, 0, 1, 1},
      {1, 3, 7, 6, 2, 3, 2, 2, 1, 1, 1}, {2, 4, 9, 8, 6, 3, 3, 1, 2, 2, 2},
      {1, 6, 5, 7, 6, 3, 1, 2, 1, 1, 3}, {1, 4, 8, 8, 4, 2, 2, 3, 1, 2, 4},
  };
  for (DType t : kFloatTypes)
    for (const Case& c : cases) {
      CAPTURE(c.c);
      CAPTURE(c.h);
      CAPTURE(c.stride);
      CAPTURE(c.pad);
      CAPTURE(c.dilation);
      CAPTURE(c.groups);
      Run r = run_nn(
          "conv2d", t,
          {{"B", c.b}, {"C", c.c}, {"H", c.h}, {"W", c.w}, {"F", c.f}, {"R", c.r}, {"S", c.s}}, {},
          {{"stride", attr_int(c.stride)},
           {"pad", attr_int(c.pad)},
           {"dilation", attr_int(c.dilation)},
           {"groups", attr_int(c.groups)}});
      const Tensor &x = r.in("x"), &w = r.in("w");
      int64_t oh = (c.h + 2 * c.pad - c.dilation * (c.r - 1) - 1) / c.stride + 1;
      int64_t ow = (c.w + 2 * c.pad - c.dilation * (c.s - 1) - 1) / c.stride + 1;
      int64_t cg = c.c / c.groups, fg = c.f / c.groups;
      std::vector<double> want(c.b * c.f * oh * ow);
      for (int64_t b = 0; b < c.b; ++b)
        for (int64_t f = 0; f < c.f; ++f)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double acc = 0;
              for (int64_t ch = 0; ch < cg; ++ch)
                for (int64_t u = 0; u < c.r; ++u)
                  for (int64_t v = 0; v < c.s; ++v) {
                    int64_t y = i * c.stride + u * c.dilation - c.pad;
                    int64_t xx = j * c.stride + v * c.dilation - c.pad;
                    if (y < 0 || y >= c.h || xx < 0 || xx >= c.w) continue;
                    int64_t in_ch = (f / fg) * cg + ch;
                    acc += x.at(offset({c.b, c.c, c.h, c.w}, {b, in_ch, y, xx})) *
                           w.at(offset({c.f, cg, c.r, c.s}, {f, ch, u, v}));
                  }
              want[offset({c.b, c.f, oh, ow}, {b, f, i, j})] = acc;
            }
      REQUIRE(r.out("y").dims == std::vector<int64_t>{c.b, c.f, oh, ow});
      expect_close(r.out("y"), want, rtol_for(t), atol_for(t));
    }
}

TEST_CASE("nn: max and average pooling with padding") {
  struct Case {
    int64_t b, c, h, w, kernel, stride, pad;
  };
  const Case cases[] = {{1, 1, 1, 1, 1, 1, 0},
                        {2, 3, 7, 6, 2, 2, 0},
                        {1, 2, 9, 5, 3, 2, 1},
                        {1, 1, 4, 4, 3, 1, 1},
                        {2, 1, 5, 7, 2, 3, 1}};
  // Max pooling takes integers too (padding is the dtype's lowest value); average pooling floats.
  std::vector<DType> types(kFloatTypes.begin(), kFloatTypes.end());
  for (DType t : {DType::i32, DType::i8, DType::u8})
    types.push_back(t);
  for (DType t : types)
    for (const Case& c : cases) {
      CAPTURE(kiln::dtype_name(t));
      CAPTURE(c.h);
      CAPTURE(c.w);
      CAPTURE(c.kernel);
      CAPTURE(c.stride);
      CAPTURE(c.pad);
      SizeBindings sizes = {{"B", c.b}, {"C", c.c}, {"H", c.h}, {"W", c.w}};
      std::map<std::string, AttrValue> attrs = {
          {"kernel", attr_int(c.kernel)}, {"stride", attr_int(c.stride)}, {"pad", attr_int(c.pad)}};
      Run mx = run_nn("maxpool2d", t, sizes, {}, attrs, 3);
      const bool floats = kiln::is_float(t);
      Run avg = run_nn("avgpool2d", floats ? t : DType::f32, sizes, {}, attrs, 3);
      const Tensor& x = mx.in("x");
      int64_t oh = (c.h + 2 * c.pad - c.kernel) / c.stride + 1;
      int64_t ow = (c.w + 2 * c.pad - c.kernel) / c.stride + 1;
      std::vector<double> want_max, want_avg;
      for_each_index({c.b, c.c, oh, ow}, [&](const std::vector<int64_t>& o) {
        double m = -INFINITY, total = 0;
        for (int64_t u = 0; u < c.kernel; ++u)
          for (int64_t v = 0; v < c.kernel; ++v) {
            int64_t y = o[2] * c.stride + u - c.pad, xx = o[3] * c.stride + v - c.pad;
            if (y < 0 || y >= c.h || xx < 0 || xx >= c.w) continue;
            double e = x.at(offset({c.b, c.c, c.h, c.w}, {o[0], o[1], y, xx}));
            m = std::max(m, e);
            total += e;
          }
        want_max.push_back(m);
        want_avg.push_back(total / static_cast<double>(c.kernel * c.kernel));
      });
      expect_close(mx.out("y"), want_max, 0, 0);
      if (floats) expect_close(avg.out("y"), want_avg, rtol_for(t), atol_for(t));
    }
}

TEST_CASE("nn: attention with and without a causal mask matches a naive loop") {
  struct Case {
    int64_t b, h, l, s, d;
  };
  const Case cases[] = {{1, 1, 1, 1, 1}, {2, 3, 5, 7, 4}, {1, 2, 8, 8, 16}, {1, 1, 6, 3, 5}};
  for (DType t : kFloatTypes)
    for (const Case& c : cases)
      for (bool causal : {false, true}) {
        CAPTURE(c.l);
        CAPTURE(c.s);
        CAPTURE(c.d);
        CAPTURE(causal);
        Run r = run_nn("attention", t, {{"B", c.b}, {"H", c.h}, {"L", c.l}, {"S", c.s}, {"D", c.d}},
                       {}, {{"causal", attr_bool(causal)}});
        const Tensor &q = r.in("q"), &k = r.in("k"), &v = r.in("v");
        std::vector<double> want(c.b * c.h * c.l * c.d);
        for (int64_t bh = 0; bh < c.b * c.h; ++bh)
          for (int64_t i = 0; i < c.l; ++i) {
            std::vector<double> p(c.s, 0.0);
            double m = -INFINITY, total = 0;
            for (int64_t j = 0; j < c.s; ++j) {
              if (causal && j > i) continue;
              double dot = 0;
              for (int64_t e = 0; e < c.d; ++e)
                dot += q.at((bh * c.l + i) * c.d + e) * k.at((bh * c.s + j) * c.d + e);
              p[j] = dot / std::sqrt(static_cast<double>(c.d));
              m = std::max(m, p[j]);
            }
            for (int64_t j = 0; j < c.s; ++j) {
              p[j] = causal && j > i ? 0.0 : std::exp(p[j] - m);
              total += p[j];
            }
            for (int64_t e = 0; e < c.d; ++e) {
              double acc = 0;
              for (int64_t j = 0; j < c.s; ++j)
                acc += p[j] / total * v.at((bh * c.s + j) * c.d + e);
              want[(bh * c.l + i) * c.d + e] = acc;
            }
          }
        expect_close(r.out("y"), want, rtol_for(t), atol_for(t));
      }
}
