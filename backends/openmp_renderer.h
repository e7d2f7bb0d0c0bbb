/** \file
 * OpenMP C: the C renderer plus pragmas from each loop's mapping. A parallel loop becomes
 * `#pragma omp parallel for` (with `collapse(n)` over the perfectly nested parallel loops below
 * it), a simd loop `#pragma omp simd`, with a `reduction` clause and KILN_INTERLEAVE (four vector
 * accumulators) when it carries a sum or product into a scalar accumulator. The body of each
 * parallel loop becomes a function of its own with `restrict` buffer parameters
 * (outlines_parallel_bodies). Compiled with -fopenmp by the `openmp` runtime.
 *
 * A scan over one long row (a carried alloc mapped parallel, scheduler/carry_scans.h) runs as a
 * blocked scan when the row holds at least two parts of kScanPart elements: the row is cut into
 * up to kScanParts equal parts, a parallel loop combines each part's elements into its total
 * (storing nothing, the first part starting from the element before the row, the others from the
 * combiner's identity), one thread combines the totals in order into the value before each part,
 * and a second parallel loop scans each part from there, storing. Work 2N reads and N writes,
 * span N / parts + parts. Shorter rows run as one loop, and so does every row on fewer than four
 * threads (reading the row twice on two or three costs what they save) or inside an active
 * parallel region: a parallel loop around such a scan runs its rows on threads
 * when there are at least as many rows as threads (an `if` clause), else one row after another,
 * each split. A split float scan rounds as its parts add up, not as the one loop does.
 */
#pragma once

#include "backends/c_style.h"

namespace kiln {

/** The fewest elements of a part of a blocked scan, and the most parts. */
inline constexpr int64_t kScanPart = 4096;
inline constexpr int64_t kScanParts = 256;

class OpenMPRenderer : public CStyleRenderer {
 protected:
  std::string render_split_scan(const Context& c, const LoopNode& n, int depth) const override;
  /** omp_get_max_threads and omp_in_parallel, for plans with scans. */
  std::string plan_declarations(const KernelPlan& plan,
                                const RenderOptions& options) const override;
  std::string loop_annotation(const LoopNode& loop, const LoopSite& site) const override;
  bool outlines_parallel_bodies() const override;
};

}  // namespace kiln
