/** \file
 * Limits on the size of programs Kiln accepts, checked where a program enters (the spec loader,
 * the scheduler) so that an oversized input fails at once with a message instead of running for
 * minutes in a stage whose cost grows with it.
 */
#pragma once

namespace kiln {

/** The most dimensions a tensor may have: a declared shape, including the dimensions a leading
 *  `...` stands for, and every buffer the scheduler sees (docs/spec-language.md). */
constexpr int kMaxRank = 64;

}  // namespace kiln
