#include "scheduler/tile_choice.h"

#include <algorithm>

namespace kiln {

namespace {

// Microseconds on an H200 (f16 operands, f32 accumulators; docs/performance.md): per element and
// per row or lane of a tile for each reduction block of 64, fitted to 1536 × K × 2816 at K = 256,
// 1024, 4096 with 128 × 256, 128 × 128 and 128 × 64 tiles (0.756, 0.46 and 0.33 µs a block); per
// element of its epilogue (7.0, 3.6, 1.8 µs a tile), and per element and operation of the
// statements after the sum (a tanh GELU's 60 added 0.87 ns an element on 128 × 256 tiles); the
// part of those a second block on the multiprocessor leaves showing, and the cost of three
// stages' shallower pipeline, fitted with them to fourteen sizes (one pick in fourteen off the
// fastest shape, by 24 %).
constexpr double kBlockPerElement = 8.06e-6;
constexpr double kBlockPerEdge = 1.28e-3;
constexpr double kFixedPerElement = 0.215e-3;
constexpr double kPerElementOp = 1.45e-5;
constexpr double kHiddenShowing = 0.3;
constexpr double kThreeStages = 1.05;
// One wave (no more tiles than multiprocessors): each multiprocessor holds one block, whose
// copies run S − 2 reduction blocks ahead of its products (one block of warpgroup instructions
// left in flight), so a block takes at least the copies' latency over that lead. Fitted to
// 128 × 64 tiles at M = 8 and 128, N = K = 4096 on an H200 (64 tiles): 0.73–0.87 µs a block
// with 4 stages, 0.46–0.56 with 8.
constexpr double kCopyLatency = 1.6;
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
  if (tiles <= units) per_block = std::max(per_block, kCopyLatency / std::max(shape.stages - 2, 1));
  const auto ops = static_cast<double>(std::max<int64_t>(problem.epilogue_ops, 0));
  const double epilogue =
      area * (kFixedPerElement +
              (blocks_per_unit(shape) >= 2 ? kHiddenShowing : 1.0) * kPerElementOp * ops);
  const double per_tile =
      epilogue +
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
