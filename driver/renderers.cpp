#include "driver/renderers.h"

#include <stdexcept>

#include "backends/c_renderer.h"

namespace kiln {

const CStyleRenderer& renderer_for(const std::string& backend) {
  static const CRenderer c;
  // Until the OpenMP renderer lands, the openmp backend renders plain C (serial kernels).
  if (backend == "c" || backend == "openmp") return c;
  throw std::runtime_error("no renderer for backend '" + backend + "'");
}

}  // namespace kiln
