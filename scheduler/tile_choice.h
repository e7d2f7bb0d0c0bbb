/** \file
 * The launch-time choice among the tile shapes a contraction kernel is compiled at
 * (GpuTileShape::wgmma_variants). Sizes are symbolic when a kernel compiles, and no one tile
 * shape is fastest at every size: a 128 × 256 tile keeps a Hopper multiprocessor's tensor cores
 * busiest, but 512³ makes 8 of them for 132 multiprocessors. Each launch therefore estimates, by
 * the sizes it binds, the time of every compiled shape and takes the least.
 *
 * The estimate: a tile of R × L elements on one multiprocessor takes, per reduction block of
 * 64, the time measured for its shape (the default list's and two more, with the TMA filling
 * the stages), else α·R·L (the products) + β·(R + L) (the copies, which a smaller tile repeats
 * more often per element), 5 % more with three pipeline stages than with four; then its
 * epilogue, R·L·(f + g·ops) for an epilogue of `ops` operations, of which a multiprocessor
 * holding two blocks hides all but ρ of the operations' part behind the other block's
 * products, and a fixed cost per tile (its start and its end); the tiles spread evenly over the
 * multiprocessors, each running ⌈tiles / units⌉ of them. Where they are one wave, each
 * multiprocessor holds one block and a reduction block takes at least λ / (S − 2): the copies'
 * latency over the stages the pipeline runs ahead (few rows, M ≤ 128, are latency-bound: eight
 * stages beat four). A shape holds two blocks a multiprocessor where two of its pipelines (stages ×
 * (R + L) × 64 × 2 bytes) fit in Hopper's 228 KiB. The constants are fitted to f16 products with
 * and without a tanh GELU after them on an H200 (docs/performance.md, "Tile shapes refitted for the
 * TMA pipeline"); only their ratios matter to the choice.
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "scheduler/gpu_tile.h"

namespace kiln {

/** What one launch of a tiled contraction computes: `outer` matrices of rows × lanes elements,
 *  each a sum over `depth` terms. */
struct TileProblem {
  int64_t outer = 1;
  int64_t rows = 0;
  int64_t lanes = 0;
  int64_t depth = 0;
  int64_t epilogue_ops = 0;  ///< GpuTileDims::epilogue_ops
};

/** The problem of statement `dims.statement` of `k` at the bound sizes (`env`: size variable →
 *  value). */
TileProblem tile_problem(const Kernel& k, const GpuTileDims& dims,
                         const std::map<std::string, int64_t>& env);

/** The blocks of `shape` a Hopper multiprocessor holds at once by its shared memory (1 or 2; the
 *  256 threads' registers allow no more). */
int blocks_per_unit(const WgmmaShape& shape);

/** The estimated time of `shape` on `problem` over `units` multiprocessors, in microseconds of
 *  the H200 the constants were fitted on. */
double tile_cost_us(const TileProblem& problem, const WgmmaShape& shape, int units);

/** The index in `shapes` of the least estimated time (the first of equals); 0 where `units` is
 *  not positive or the problem is empty. */
size_t choose_tile(const TileProblem& problem, const std::vector<WgmmaShape>& shapes, int units);

}  // namespace kiln
