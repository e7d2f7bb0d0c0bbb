/** \file
 * The renderer of each backend a runtime descriptor can name (`backend = "c"`): what turns a
 * scheduled kernel plan into source text for that runtime's compiler.
 */
#pragma once

#include <string>

#include "backends/c_style.h"

namespace kiln {

/** The renderer for `backend`; throws std::runtime_error for a backend without one. */
const CStyleRenderer& renderer_for(const std::string& backend);

}  // namespace kiln
