#include "scheduler/tile_choice.h"

#include <algorithm>

namespace kiln {

namespace {

// Microseconds on an H200 (f16 operands, f32 accumulators, the stages filled by the TMA;
// docs/performance.md, "Tile shapes refitted for the TMA pipeline"), from each shape pinned on
// thirteen products (GEMMs from 512³ to 8192 × 3072 × 768, a batch of 32, a bias and tanh GELU
// after three of them: tools/gpu/probes/tile_fit.sh) and fitted together, least squares of the
// logarithms: a reduction block of 64 on a tile of each shape of GPU_WGMMA's default list and
// of two more (its products and copies: a 128 × 256 tile's m64n256 steps keep the tensor cores
// busier per element than a 128 × 64 tile's; a multiprocessor holding two blocks of 128 × 64
// or 128 × 128 × 3 overlaps one's waits with the other's products). Other shapes take the
// estimate below it, fitted to the cp.async pipeline before the TMA: per element and per row
// or lane of the tile, 5 % more with three stages than four.
struct MeasuredShape {
  int rows, lanes, stages;
  double per_block;
};
constexpr MeasuredShape kMeasured[] = {
    {128, 256, 4, 0.705}, {128, 256, 3, 0.917}, {128, 128, 4, 0.549}, {128, 128, 3, 0.555},
    {256, 128, 4, 0.756}, {128, 64, 4, 0.310},  {128, 64, 8, 0.441}};
constexpr double kBlockPerElement = 8.06e-6;
constexpr double kBlockPerEdge = 1.28e-3;
constexpr double kThreeStages = 1.05;
// Per element of a tile's epilogue, and per element and operation of the statements after the
// sum; the part of those a second block on the multiprocessor leaves showing; and per tile, its
// start and end (barriers initialised, the first stages' copies in flight before any product,
// the last products drained): fitted with the blocks above (8192 × 768 outputs over K = 768 are
// 12 blocks a tile, and a 128 × 128 tile's 384 tiles pay it three times where 128 × 256's pay
// it twice: 0.031 ms against 0.039 at three stages).
constexpr double kFixedPerElement = 0.185e-3;
constexpr double kPerElementOp = 1.03e-5;
constexpr double kHiddenShowing = 0.56;
constexpr double kPerTile = 1.42;
// One wave (no more tiles than multiprocessors): each multiprocessor holds one block, whose
// copies run S − 2 reduction blocks ahead of its products (one block of warpgroup instructions
// left in flight), so a block takes at least the copies' latency over that lead (M = 128, N = K
// = 4096: eight stages of 128 × 64 0.034 ms against four stages' 0.037).
constexpr double kCopyLatency = 1.01;
constexpr int64_t kBlockDepth = 64;
constexpr int64_t kSharedPerUnit = 228 * 1024;  // Hopper's shared memory a multiprocessor
constexpr int64_t kSharedPerBlock = 1024;       // of it the system keeps for each block

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

TileProblem tile_problem(const Kernel& k, const GpuTileDims& dims,
                         const std::map<std::string, int64_t>& env) {
  const Statement& s = k.statements.at(dims.statement);
  auto extent = [&](int d) { return std::max<int64_t>(s.extents.at(d).eval(env), 0); };
  TileProblem p;
  p.rows = extent(dims.rows);
  p.lanes = extent(dims.lanes);
  for (int d : dims.outer)
    p.outer *= extent(d);
  p.depth = 1;
  for (int d : dims.depth)
    p.depth *= extent(d);
  p.epilogue_ops = dims.epilogue_ops;
  return p;
}

int blocks_per_unit(const WgmmaShape& shape) {
  const int64_t pipeline = int64_t{shape.stages} * (shape.rows + shape.lanes) * kBlockDepth * 2;
  return static_cast<int>(std::clamp<int64_t>(kSharedPerUnit / (pipeline + kSharedPerBlock), 1, 2));
}

double tile_cost_us(const TileProblem& problem, const WgmmaShape& shape, int units) {
  const int64_t tiles =
      problem.outer * ceil_div(problem.rows, shape.rows) * ceil_div(problem.lanes, shape.lanes);
  const auto area = static_cast<double>(shape.rows) * shape.lanes;
  double per_block = (kBlockPerElement * area + kBlockPerEdge * (shape.rows + shape.lanes)) *
                     (shape.stages <= 3 ? kThreeStages : 1.0);
  for (const MeasuredShape& m : kMeasured)
    if (m.rows == shape.rows && m.lanes == shape.lanes && m.stages == shape.stages)
      per_block = m.per_block;
  if (tiles <= units) per_block = std::max(per_block, kCopyLatency / std::max(shape.stages - 2, 1));
  const auto ops = static_cast<double>(std::max<int64_t>(problem.epilogue_ops, 0));
  const double epilogue =
      area * (kFixedPerElement +
              (blocks_per_unit(shape) >= 2 ? kHiddenShowing : 1.0) * kPerElementOp * ops);
  const double per_tile =
      kPerTile + epilogue +
      static_cast<double>(ceil_div(std::max<int64_t>(problem.depth, 1), kBlockDepth)) * per_block;
  return static_cast<double>(ceil_div(tiles, std::max(units, 1))) * per_tile;
}

size_t choose_tile(const TileProblem& problem, const std::vector<WgmmaShape>& shapes, int units) {
  if (units <= 0 || shapes.empty() || problem.outer <= 0 || problem.rows <= 0 || problem.lanes <= 0)
    return 0;
  size_t best = 0;
  double least = tile_cost_us(problem, shapes[0], units);
  for (size_t i = 1; i < shapes.size(); ++i) {
    double cost = tile_cost_us(problem, shapes[i], units);
    if (cost < least) least = cost, best = i;
  }
  return best;
}

}  // namespace kiln
