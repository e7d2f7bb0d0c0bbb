/** \file
 * OpenMP C: the C renderer plus pragmas from each loop's mapping. A parallel loop becomes
 * `#pragma omp parallel for` (with `collapse(n)` over the perfectly nested parallel loops below
 * it), a simd loop `#pragma omp simd`, with a `reduction` clause and KILN_INTERLEAVE (four vector
 * accumulators) when it carries a sum or product into a scalar accumulator. The body of each
 * parallel loop becomes a function of its own with `restrict` buffer parameters
 * (outlines_parallel_bodies). Compiled with -fopenmp by the `openmp` runtime.
 */
#pragma once

#include "backends/c_style.h"

namespace kiln {

class OpenMPRenderer : public CStyleRenderer {
 protected:
  std::string loop_annotation(const LoopNode& loop, const LoopSite& site) const override;
  bool outlines_parallel_bodies() const override;
};

}  // namespace kiln
