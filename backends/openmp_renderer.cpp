#include "backends/openmp_renderer.h"

namespace kiln {

std::string OpenMPRenderer::loop_annotation(const LoopNode& loop, const LoopSite& site) const {
  if (loop.mapping == Mapping::parallel && !site.collapsed) {
    std::string s = "#pragma omp parallel for schedule(static)";
    if (site.collapse > 1) s += " collapse(" + std::to_string(site.collapse) + ")";
    return s;
  }
  if (loop.mapping != Mapping::simd) return "";
  std::string s = "#pragma omp simd";
  if (loop.reduction && site.accumulator) {
    ReduceKind r = site.kernel.statements.at(site.accumulator->statement).reduce;
    if (r == ReduceKind::sum) s += " reduction(+:" + site.accumulator->name + ")";
    if (r == ReduceKind::prod) s += " reduction(*:" + site.accumulator->name + ")";
    if (r == ReduceKind::sum || r == ReduceKind::prod) s += "\nKILN_INTERLEAVE";
  }
  return s;
}

bool OpenMPRenderer::outlines_parallel_bodies() const {
  return true;
}

}  // namespace kiln
