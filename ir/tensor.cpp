#include "ir/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace kiln {

namespace {

/** splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same on every platform. */
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /** Uniform in [0, 1) with 53 random bits. */
  double next_unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

/** Truncates toward zero; NaN becomes 0 and values outside int64 saturate. */
int64_t double_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 0x1.0p63) return std::numeric_limits<int64_t>::max();
  if (v < -0x1.0p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string format_element(const Tensor& t, size_t k) {
  if (is_float(t.dtype)) return format_double(t.f[k]);
  return std::to_string(t.i[k]);
}

}  // namespace

Tensor::Tensor(DType t, std::vector<int64_t> d) : dtype(t), dims(std::move(d)) {
  for (int64_t x : dims)
    if (x < 0) throw std::runtime_error("tensor dimension " + std::to_string(x) + " is negative");
  if (is_float(t))
    f.assign(numel(), 0.0);
  else
    i.assign(numel(), 0);
}

size_t Tensor::numel() const {
  size_t n = 1;
  for (int64_t x : dims)
    n *= static_cast<size_t>(x);
  return n;
}

double Tensor::at(size_t k) const {
  return is_float(dtype) ? f[k] : static_cast<double>(i[k]);
}

void Tensor::set(size_t k, double v) {
  if (is_float(dtype))
    f[k] = round_to_float(dtype, v);
  else if (dtype == DType::boolean)
    i[k] = v != 0;
  else
    i[k] = wrap_int(dtype, double_to_int64(v));
}

void Tensor::set_int(size_t k, int64_t v) {
  if (is_float(dtype))
    f[k] = round_to_float(dtype, static_cast<double>(v));
  else
    i[k] = wrap_int(dtype, v);
}

Tensor random_tensor(DType t, const std::vector<int64_t>& dims, uint64_t seed, double lo,
                     double hi) {
  Tensor out(t, dims);
  SplitMix64 rng(seed);
  for (size_t k = 0; k < out.numel(); ++k) {
    if (t == DType::boolean) {
      out.i[k] = static_cast<int64_t>(rng.next() >> 63);
      continue;
    }
    // std::fma rounds once on every platform; `lo + (hi - lo) * u` could be contracted or not.
    double v = std::fma(hi - lo, rng.next_unit(), lo);
    if (v >= hi && hi > lo) v = std::nextafter(hi, lo);
    if (is_float(t))
      out.f[k] = round_to_float(t, v);
    else
      out.i[k] = wrap_int(t, double_to_int64(std::floor(v)));
  }
  return out;
}

std::string tensor_type_str(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (size_t k = 0; k < t.dims.size(); ++k)
    s += (k ? ", " : "") + std::to_string(t.dims[k]);
  return s + "]";
}

std::string tensor_summary(const Tensor& t) {
  constexpr size_t kShown = 6;
  size_t n = t.numel();
  if (n == 0) return "empty";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  size_t nans = 0;
  for (size_t k = 0; k < n; ++k) {
    double v = t.at(k);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::string s;
  if (nans < n) {
    bool exact = !is_float(t.dtype);
    s = "min " + (exact ? std::to_string(static_cast<int64_t>(lo)) : format_double(lo)) + " max " +
        (exact ? std::to_string(static_cast<int64_t>(hi)) : format_double(hi)) + " mean " +
        format_double(sum / static_cast<double>(n - nans)) + " ";
  }
  if (nans) s += "nan " + std::to_string(nans) + " ";
  s += "[";
  for (size_t k = 0; k < n && k < kShown; ++k)
    s += (k ? ", " : "") + format_element(t, k);
  return s + (n > kShown ? ", ...]" : "]");
}

}  // namespace kiln
