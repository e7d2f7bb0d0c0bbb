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
    // Four vector accumulators: one waits on the add's latency at every step (the runtime's
    // -fno-unroll-loops leaves one), four keep the adder busy (docs/performance.md).
    if (r == ReduceKind::sum || r == ReduceKind::prod) s += "\n#pragma clang loop interleave_count(4)";
  }
  return s;
}

bool OpenMPRenderer::outlines_parallel_bodies() const {
  return true;
}

}  // namespace kiln
