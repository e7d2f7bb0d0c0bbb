/** \file
 * Element types of Kiln tensors and the facts about them that every pass asks for.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kiln {

/** The ten element types. `boolean` prints as `bool`. */
enum class DType : uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };

/** The spelling used in specs and printouts: "f32", "bool", ... */
std::string_view dtype_name(DType t);

/** Parses a dtype spelling; nullopt when `s` is not one. */
std::optional<DType> parse_dtype(std::string_view s);

/** All ten dtypes, in declaration order. */
const std::vector<DType>& all_dtypes();

/** True for f64, f32, f16 and bf16. */
bool is_float(DType t);

/** True for the integer types (not bool). */
bool is_int(DType t);

/** True for the signed integer types. */
bool is_signed_int(DType t);

/** Storage width in bits (bool is 8). */
int dtype_bits(DType t);

/** Wraps an exact integer to the range of integer dtype `t` (two's complement); bool maps to 0/1.
 */
int64_t wrap_int(DType t, int64_t v);

/** Rounds a double to the nearest value representable in float dtype `t` (round to nearest even).
 */
double round_to_float(DType t, double v);

}  // namespace kiln
