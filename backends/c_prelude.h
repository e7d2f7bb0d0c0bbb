/** \file
 * The C helper functions every generated translation unit starts with: floor division and
 * modulus for index arithmetic, NaN-propagating max, saturating float-to-integer conversion,
 * and f16/bf16 conversions (round to nearest even) for storage.
 */
#pragma once

namespace kiln {

/** The fixed-width integer typedefs, for translation units that include no headers. */
extern const char* const kPreludeTypedefs;

/** The C translation unit's head, after kPreludeTypedefs: the macros the helper functions use
 *  (KILN_FN, KILN_INF, KILN_NAN, KILN_RINTF, KILN_REASSOC, memcpy). */
extern const char* const kCPreludeHead;

/** The helper functions, valid C11 and CUDA C++ under a head that defines those macros
 *  (backends/cuda_prelude.h has the CUDA head). */
extern const char* const kPreludeFunctions;

/** The C backends' math functions, after kPreludeFunctions: `kiln_exp2_f32`, f32 2^x through
 *  the runtime's vector math library (where its flags define KILN_VECLIB) with masked lanes kept
 *  off its slow path, else as a polynomial that vectorises. The CUDA backend uses its own. */
extern const char* const kCPreludeMath;

/** Under --config CHECK=1: `kiln_check(offset, count, buffer)` returns `offset` when it is inside
 *  a buffer of `count` elements; else it fills the exported `kiln_check_record` (buffer, offset,
 *  count, 1) and traps, and the host's fault handler reports it (driver/fault_guard.h). */
extern const char* const kCBoundsCheck;

}  // namespace kiln
