// The cuda backend's launch geometry (backends/cuda_renderer.h): its loops stride, so any grid is
// correct; the geometry only has to give the work enough blocks, from the sizes alone.
#include <doctest/doctest.h>

#include <algorithm>

#include "backends/cuda_renderer.h"
#include "tests/support/kernel_builder.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const IntExpr R = IntExpr::var("R"), C = IntExpr::var("C");

/** The geometry of a kernel with a row reduction and a row-wise update over [R, C], bound to
 *  `r` and `c`. */
LaunchGeometry rows_geometry(int64_t r, int64_t c, bool groups = false) {
  KernelBuilder b;
  int x = b.buffer("x", {R, C}), s = b.buffer("s", {R}), y = b.buffer("y", {R, C});
  b.stmt(Statement::Kind::reduce_init, {R}, s, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {R, C}, s, {it(0)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::assign, {R, C}, y, {it(0), it(1)},
         op(Op::mul, {load(x, {it(0), it(1)}), load(s, {it(0)})}));
  std::vector<int64_t> sizes;
  for (const std::string& v : b.plan.size_vars)
    sizes.push_back(v == "R" ? r : c);
  return cuda_launch_geometry(b.plan, b.kernel(), sizes.data(), groups);
}

}  // namespace

TEST_CASE("cuda geometry: a thread per point, a block per short row, at most kCudaMaxBlocks") {
  LaunchGeometry g = rows_geometry(8192, 4096);  // 2^25 points: capped
  CHECK(g.block[0] == kCudaBlockThreads);
  CHECK(g.block[1] == 1);
  CHECK(g.grid[0] == kCudaMaxBlocks);
  CHECK(rows_geometry(8, 64).grid[0] == 8);     // 512 points would be 2 blocks for 8 rows
  CHECK(rows_geometry(3, 1000).grid[0] == 12);  // 3000 points: 12 blocks of 256 threads
  CHECK(rows_geometry(0, 100).grid[0] == 1);    // nothing to do: still a valid launch
  CHECK(rows_geometry(100000, 2).grid[0] == kCudaMaxBlocks);
}

TEST_CASE("cuda geometry: short rows in groups of threads take a block per group of rows") {
  // f32 rows of 64 take a warp each, 8 rows a block (scheduler/group_rows.h): 8192 rows need
  // 1024 blocks, where a block per row would leave 7 of 8 of them without work.
  CHECK(rows_geometry(8192, 64, true).grid[0] == 1024);
  CHECK(rows_geometry(8192, 64, true).block[0] == kCudaBlockThreads);
  CHECK(rows_geometry(65536, 64, true).grid[0] == kCudaMaxBlocks);
  // Rows of 4096 f32 take the whole block: a block per row, as without groups.
  CHECK(rows_geometry(2048, 4096, true).grid[0] == 2048);
  // Few rows: at least min(rows, 1024) blocks, for a schedule that did not group them.
  CHECK(rows_geometry(8, 64, true).grid[0] == 8);
  CHECK(rows_geometry(3000, 64, true).grid[0] == 1024);
  CHECK(rows_geometry(0, 100, true).grid[0] == 1);
}
