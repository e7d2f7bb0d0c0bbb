// The lanes past a register tile's full lane tiles (register_tile.cpp, Tiler::blocked): one
// masked tile of as many vectors as they need, not a tile a vector at a time.
#include <doctest/doctest.h>

#include <vector>

#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: the lanes past the full tiles run in one tile of the vectors they need") {
  // y[m, n] = sum(x[k, n + r] * w[m, k, r], k, r): a convolution's rows (filters m) by lanes
  // (outputs n), two reduction loops, so no packed panel: full tiles of 4 vectors of 8 lanes,
  // then the lanes left (fewer than 32) in one tile of ceil(left / 8) vectors, masked.
  KernelBuilder b;
  int x = b.buffer("x", {K, N + R}), w = b.buffer("w", {M, K, R}), y = b.buffer("y", {M, N});
  b.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {M, N, K, R}, y, {it(0), it(1)},
         op(Op::mul, {load(x, {it(2), it(1) + it(3)}), load(w, {it(0), it(2), it(3)})}));
  ScheduleOptions opt;
  opt.micro = {3, 4, 64, 32};
  std::vector<Env> sizes;
  for (int64_t n : {7, 32, 37, 50, 64, 95})
    sizes.push_back({{"M", 4}, {"N", n}, {"K", 2}, {"R", 3}});
  ScheduledKernel r = check_legal(b, opt, sizes);  // every element's sum, each term once
  report("lane tails", r);

  // The guards around the tiles of the lanes left: one per vector count, each holding partial
  // tiles of that many vectors.
  std::vector<std::pair<const LoopNode*, int64_t>> tails;
  for (const LoopNode* g : nodes_of(*r.nest.root, LoopNode::Kind::guard)) {
    int64_t lanes = 0;
    bool partial = true;
    for (const LoopNode* a : nodes_of(*g, LoopNode::Kind::alloc))
      if (a->tile_rows > 0) {
        partial = partial && a->tile_lane_count != nullptr;
        lanes = a->tile_lanes;
      }
    if (lanes > 0 && partial) tails.push_back({g, lanes});
  }
  REQUIRE(tails.size() == 4);
  for (size_t v = 0; v < tails.size(); ++v)
    CHECK(tails[v].second == 8 * static_cast<int64_t>(v + 1));
  // Exactly one of them runs where lanes are left, the one of ceil(left / 8) vectors; none
  // where the full tiles cover the row.
  for (const Env& s : sizes) {
    const int64_t left = s.at("N") % 32;
    int runs = 0;
    for (const auto& [g, lanes] : tails)
      if (eval(*g->cond, s)) {
        ++runs;
        CHECK(lanes == (left + 7) / 8 * 8);
      }
    CHECK(runs == (left > 0 ? 1 : 0));
  }
}
