#include "ir/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

namespace kiln {

namespace {

constexpr std::array<std::string_view, 10> kNames = {"f64", "f32", "f16", "bf16", "i64",
                                                     "i32", "i16", "i8",  "u8",   "bool"};

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
  static const std::vector<DType> all = {DType::f64, DType::f32,    DType::f16, DType::bf16,
                                         DType::i64, DType::i32,    DType::i16, DType::i8,
                                         DType::u8,  DType::boolean};
  return all;
}

bool is_float(DType t) {
  return t <= DType::bf16;
}

bool is_int(DType t) {
  return t >= DType::i64 && t <= DType::u8;
}

bool is_signed_int(DType t) {
  return t >= DType::i64 && t <= DType::i8;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 64;
    case DType::f32:
    case DType::i32:
      return 32;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
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
