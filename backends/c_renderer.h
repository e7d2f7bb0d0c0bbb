/** \file
 * The plain C backend: the C-style base with no pragmas but KILN_INTERLEAVE; the compiler
 * auto-vectorises the unit-stride innermost loops.
 */
#pragma once

#include "backends/c_style.h"

namespace kiln {

/** Plain C (C11). A loop that accumulates a sum or product into a register gets
 *  KILN_INTERLEAVE (four vector accumulators under clang, nothing under other compilers). */
class CRenderer : public CStyleRenderer {
 protected:
  std::string loop_annotation(const LoopNode& loop, const LoopSite& site) const override;
};

}  // namespace kiln
