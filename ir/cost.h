/** \file
 * The cost model of a graph for bound sizes: the arithmetic it does (flops) and the compulsory
 * memory traffic (bytes), from which `kiln bench` reports GFLOP/s and GB/s. A count, not a
 * prediction: it knows nothing about caches, fusion or the schedule.
 *
 * flops: every arithmetic elementwise op (unary, binary, ternary) counts one per output element,
 *   transcendentals (exp2, log2, sqrt, sin, recip) and comparisons included, `mulacc` two (a
 *   multiply and an add); a `reduce` or `scan` counts one per operand element, a `scatter` one per
 *   position; the extern `gemm` counts 2·M·N·K. Data ops (input, constant, index, view, copy,
 *   cast, bitcast, gather) count nothing. Only
 *   nodes an output depends on count.
 * bytes: every graph input read once plus every output written once, at its dtype's width.
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace kiln {

/** The work of one run of a graph. */
struct GraphCost {
  int64_t flops = 0;
  int64_t bytes = 0;  ///< inputs read plus outputs written
};

/** Counts `g` for `sizes`, which must bind every size variable. Throws SizeError when a count
 *  overflows int64 and std::runtime_error for an unbound size variable. */
GraphCost graph_cost(const Graph& g, const std::map<std::string, int64_t>& sizes);

}  // namespace kiln
