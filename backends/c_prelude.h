/** \file
 * The C helper functions every generated translation unit starts with: floor division and
 * modulus for index arithmetic, NaN-propagating max, saturating float-to-integer conversion,
 * and f16/bf16 conversions (round to nearest even) for storage.
 */
#pragma once

namespace kiln {

/** The helper text, valid C11 and C++ (CUDA device code prefixes it with its own qualifiers via
 *  the KILN_FN macro). */
extern const char* const kCPrelude;

/** Under --config CHECK=1: `kiln_check(offset, count, buffer)` returns `offset` when it is inside
 *  a buffer of `count` elements; else it fills the exported `kiln_check_record` (buffer, offset,
 *  count, 1) and traps, and the host's fault handler reports it (driver/fault_guard.h). */
extern const char* const kCBoundsCheck;

}  // namespace kiln
