/** \file
 * The plain C backend: the C-style base with no pragmas; the compiler auto-vectorises the
 * unit-stride innermost loops.
 */
#pragma once

#include "backends/c_style.h"

namespace kiln {

/** Plain C (C11). */
class CRenderer : public CStyleRenderer {};

}  // namespace kiln
