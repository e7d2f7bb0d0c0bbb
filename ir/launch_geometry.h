/** \file
 * How one kernel is launched: a grid of blocks of threads and the dynamic shared memory of a
 * GPU kernel. Backends compute it (backends/backend.h), runtimes pass it to their plugin's
 * `launch` (include/kiln/plugin_api.h `kiln_launch`). CPU kernels are one call: 1x1x1, none.
 */
#pragma once

#include <array>
#include <cstdint>

namespace kiln {

struct LaunchGeometry {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;
  bool operator==(const LaunchGeometry&) const = default;
};

}  // namespace kiln
