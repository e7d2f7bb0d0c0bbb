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

}  // namespace kiln
