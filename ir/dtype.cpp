#include "ir/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

namespace kiln {

namespace {

constexpr std::array<std::string_view, 13> kNames = {
    "f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64", "bool"};

/** Rounds a finite double to a binary float with `mantissa` stored bits and exponent range
 *  [min_exp, max_exp] (IEEE semantics: subnormals, overflow to infinity). */
double round_binary(double v, int mantissa, int min_exp, int max_exp) {
  if (!std::isfinite(v) || v == 0) return v;
  int e = std::ilogb(v);
  if (e < min_exp) e = min_exp;  // subnormal range: fixed quantum
  double quantum = std::ldexp(1.0, e - mantissa);
  double r = std::nearbyint(v / quantum) * quantum;  // default rounding mode: nearest even
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mantissa), max_exp);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, v);
  return r;
}

}  // namespace

std::string_view dtype_name(DType t) {
  return kNames[static_cast<int>(t)];
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<DType>(i);
  return std::nullopt;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = {
      DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32,    DType::i16,
      DType::i8,  DType::u8,  DType::u16, DType::u32,  DType::u64, DType::boolean};
  return all;
}

bool is_float(DType t) {
  return t <= DType::bf16;
}

bool is_int(DType t) {
  return t >= DType::i64 && t <= DType::u64;
}

bool is_signed_int(DType t) {
  return t >= DType::i64 && t <= DType::i8;
}

bool is_unsigned_int(DType t) {
  return t >= DType::u8 && t <= DType::u64;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
    case DType::u64:
      return 64;
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 32;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 16;
    default:
      return 8;
  }
}

int64_t wrap_int(DType t, int64_t v) {
  if (t == DType::boolean) return v != 0;
  int bits = dtype_bits(t);
  if (bits == 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed_int(t) && (u >> (bits - 1))) u |= ~mask;
  return static_cast<int64_t>(u);
}

double int_to_double(DType t, int64_t v) {
  return t == DType::u64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

std::string int_to_string(DType t, int64_t v) {
  return t == DType::u64 ? std::to_string(static_cast<uint64_t>(v)) : std::to_string(v);
}

bool int_less(DType t, int64_t a, int64_t b) {
  return t == DType::u64 ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

int64_t int_min_of(DType t) {
  return is_signed_int(t) ? static_cast<int64_t>(~uint64_t{0} << (dtype_bits(t) - 1)) : 0;
}

int64_t int_max_of(DType t) {
  if (t == DType::boolean) return 1;
  return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(int_min_of(t)) - 1));
}

int64_t float_to_int(DType t, double v) {
  if (t == DType::boolean) return v != 0;
  if (std::isnan(v)) return 0;
  if (v >= int_to_double(t, int_max_of(t))) return int_max_of(t);  // 2^63, 2^64: saturate
  if (v <= int_to_double(t, int_min_of(t))) return int_min_of(t);
  if (t == DType::u64) return static_cast<int64_t>(static_cast<uint64_t>(v));
  return static_cast<int64_t>(v);
}

double round_to_float(DType t, double v) {
  switch (t) {
    case DType::f32:
      return static_cast<double>(static_cast<float>(v));
    case DType::f16:
      return round_binary(v, 10, -14, 15);
    case DType::bf16:
      return round_binary(v, 7, -126, 127);
    default:
      return v;
  }
}

}  // namespace kiln
