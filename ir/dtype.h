/** \file
 * Element types of Kiln tensors and the facts about them that every pass asks for.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/** The thirteen element types. `boolean` prints as `bool`. */
enum class DType : uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, u16, u32, u64, boolean };

/** The spelling used in specs and printouts: "f32", "bool", ... */
std::string_view dtype_name(DType t);

/** Parses a dtype spelling; nullopt when `s` is not one. */
std::optional<DType> parse_dtype(std::string_view s);

/** All thirteen dtypes, in declaration order. */
const std::vector<DType>& all_dtypes();

/** True for f64, f32, f16 and bf16. */
bool is_float(DType t);

/** True for the integer types (not bool). */
bool is_int(DType t);

/** True for the signed integer types. */
bool is_signed_int(DType t);

/** True for u8, u16, u32 and u64. */
bool is_unsigned_int(DType t);

/** Storage width in bits (bool is 8). */
int dtype_bits(DType t);

/** Wraps an exact integer to the range of integer dtype `t` (two's complement); bool maps to 0/1.
 */
int64_t wrap_int(DType t, int64_t v);

/* Integer elements are held in int64. Every dtype's values fit there except u64's above 2^63 - 1,
 * which are held as their bits (two's complement): the helpers below read them back exactly. */

/** Element `v` of integer or bool dtype `t` as a double (u64 read as unsigned; exact up to 2^53).
 */
double int_to_double(DType t, int64_t v);

/** Element `v` of integer or bool dtype `t` in decimal ("18446744073709551615" for u64's max). */
std::string int_to_string(DType t, int64_t v);

/** `a < b` for elements of integer or bool dtype `t` (unsigned for u64). */
bool int_less(DType t, int64_t a, int64_t b);

/** The smallest and largest values of integer or bool dtype `t`, as held (u64's max is -1). */
int64_t int_min_of(DType t);
int64_t int_max_of(DType t);

/** The C-style conversion of a double to integer dtype `t`: truncate toward zero, NaN -> 0,
 *  values outside the range saturate to its min or max; bool is v != 0. */
int64_t float_to_int(DType t, double v);

/** Rounds a double to the nearest value representable in float dtype `t` (round to nearest even).
 */
double round_to_float(DType t, double v);

}  // namespace kiln
