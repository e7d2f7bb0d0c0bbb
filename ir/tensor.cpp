#include "ir/tensor.h"

#include <bit>
#include <cstring>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>

#include "ir/sizes.h"

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
  return int_to_string(t.dtype, t.i[k]);
}

}  // namespace

Tensor::Tensor(DType t, std::vector<int64_t> d) : dtype(t), dims(std::move(d)) {
  size_t n = 0;
  try {
    n = static_cast<size_t>(checked_numel(dims, "tensor"));
    if (is_float(t))
      f.assign(n, 0.0);
    else
      i.assign(n, 0);
  } catch (const SizeError& e) {  // "tensor: ..." becomes "tensor f32[...]: ..."
    throw SizeError(std::string(e.what()).replace(0, 6, "tensor " + tensor_type_str(*this)));
  } catch (const std::exception&) {  // std::bad_alloc, std::length_error
    throw TensorAllocError("out of memory for " + tensor_type_str(*this) + " (" +
                           std::to_string(n * 8) +
                           " bytes: the interpreter holds every element in 8 bytes)");
  }
}

size_t Tensor::numel() const {
  std::optional<int64_t> n = checked_product(dims);
  if (!n) throw SizeError("tensor " + tensor_type_str(*this) + ": the element count overflows");
  return static_cast<size_t>(*n);
}

double Tensor::at(size_t k) const {
  return is_float(dtype) ? f[k] : int_to_double(dtype, i[k]);
}

void Tensor::set(size_t k, double v) {
  if (is_float(dtype))
    f[k] = round_to_float(dtype, v);
  else if (dtype == DType::boolean)
    i[k] = v != 0;
  else if (dtype == DType::u64 && v >= 0)
    i[k] = float_to_int(dtype, v);  // exact up to 2^64
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
    out.set(k, is_float(t) ? v : std::floor(v));
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
  size_t nans = 0, lo_at = 0,
         hi_at = 0;  // integers: the positions of the extremes, printed exactly
  for (size_t k = 0; k < n && !is_float(t.dtype); ++k) {
    if (int_less(t.dtype, t.i[k], t.i[lo_at])) lo_at = k;
    if (int_less(t.dtype, t.i[hi_at], t.i[k])) hi_at = k;
  }
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
    s = "min " + (exact ? format_element(t, lo_at) : format_double(lo)) + " max " +
        (exact ? format_element(t, hi_at) : format_double(hi)) + " mean " +
        format_double(sum / static_cast<double>(n - nans)) + " ";
  }
  if (nans) s += "nan " + std::to_string(nans) + " ";
  s += "[";
  for (size_t k = 0; k < n && k < kShown; ++k)
    s += (k ? ", " : "") + format_element(t, k);
  return s + (n > kShown ? ", ...]" : "]");
}

namespace {

/** IEEE binary16 bits of `v`, which must already be rounded to f16. */
uint64_t encode_half(double v) {
  uint64_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (std::isnan(v)) return 0x7e00;
  if (std::isinf(v)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e = std::ilogb(a);
  if (e < -14) return sign | static_cast<uint64_t>(std::ldexp(a, 24));  // subnormal
  return sign | (static_cast<uint64_t>(e + 15) << 10) |
         static_cast<uint64_t>((std::ldexp(a, -e) - 1) * 1024);
}

double decode_half(uint64_t h) {
  double sign = (h & 0x8000) ? -1 : 1;
  int exp = static_cast<int>((h >> 10) & 0x1f);
  double mant = static_cast<double>(h & 0x3ff);
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant != 0 ? NAN : sign * INFINITY;
  return sign * std::ldexp(1 + mant / 1024, exp - 15);
}

}  // namespace

uint64_t element_bits(const Tensor& t, size_t k) {
  double v = is_float(t.dtype) ? round_to_float(t.dtype, t.f[k]) : 0;
  if (t.dtype == DType::f64) return std::bit_cast<uint64_t>(v);
  if (t.dtype == DType::f32) return std::bit_cast<uint32_t>(static_cast<float>(v));
  if (t.dtype == DType::bf16) return std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16;
  if (t.dtype == DType::f16) return encode_half(v);
  int bits = dtype_bits(t.dtype);
  uint64_t u = static_cast<uint64_t>(t.i[k]);
  return bits == 64 ? u : u & ((uint64_t{1} << bits) - 1);
}

void set_element_bits(Tensor& out, size_t k, uint64_t b) {
  auto as_float = [](uint64_t w) { return std::bit_cast<float>(static_cast<uint32_t>(w)); };
  if (out.dtype == DType::f64) out.f[k] = std::bit_cast<double>(b);
  if (out.dtype == DType::f32) out.f[k] = as_float(b);
  if (out.dtype == DType::bf16) out.f[k] = as_float(b << 16);
  if (out.dtype == DType::f16) out.f[k] = decode_half(b);
  if (!is_float(out.dtype)) out.i[k] = wrap_int(out.dtype, static_cast<int64_t>(b));
}

std::vector<uint8_t> tensor_to_bytes(const Tensor& t) {
  size_t width = dtype_bits(t.dtype) / 8;
  std::vector<uint8_t> out(
      static_cast<size_t>(checked_bytes(t.dtype, t.dims, "tensor " + tensor_type_str(t))));
  for (size_t k = 0; k < t.numel(); ++k) {
    uint64_t b = element_bits(t, k);
    std::memcpy(out.data() + k * width, &b, width);  // little-endian hosts
  }
  return out;
}

Tensor tensor_from_bytes(DType t, const std::vector<int64_t>& dims, const void* data) {
  Tensor out(t, dims);
  size_t width = dtype_bits(t) / 8;
  for (size_t k = 0; k < out.numel(); ++k) {
    uint64_t b = 0;
    std::memcpy(&b, static_cast<const uint8_t*>(data) + k * width, width);
    set_element_bits(out, k, b);
  }
  return out;
}

}  // namespace kiln
