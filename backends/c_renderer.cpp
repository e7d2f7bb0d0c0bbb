#include "backends/c_renderer.h"

namespace kiln {

std::string CRenderer::loop_annotation(const LoopNode& loop, const LoopSite& site) const {
  if (!loop.reduction || !site.accumulator) return "";
  ReduceKind r = site.kernel.statements.at(site.accumulator->statement).reduce;
  return r == ReduceKind::sum || r == ReduceKind::prod ? "KILN_INTERLEAVE" : "";
}

}  // namespace kiln
