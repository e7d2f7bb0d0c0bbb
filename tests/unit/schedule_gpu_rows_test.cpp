// Scheduler tests of the GPU's mapping of batches of rows: a block per row, each row across
// its threads (tests/unit/schedule_sim.h simulates the loop IR; block tiles and tensor cores
// are in schedule_gpu_test.cpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: on the GPU a batch of rows runs a block per row, each row across threads") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.gpu_tile.rows = 0;  // no block tiles: the plain mapping of every nest
  const std::vector<Env> sizes = {{{"B", 3}, {"M", 5}, {"N", 7}, {"K", 4}},
                                  {{"B", 1}, {"M", 2}, {"N", 1}, {"K", 1}},
                                  {{"B", 2}, {"M", 0}, {"N", 3}, {"K", 2}}};
  auto root_loop = [](const ScheduledKernel& r) -> const LoopNode& {
    std::vector<const LoopNode*> top = top_level(*r.nest.root);
    REQUIRE(top.size() == 1);
    REQUIRE(top[0]->kind == LoopNode::Kind::loop);
    return *top[0];
  };

  // The max of each row and the row's exponentials, batched: a thread per (batch, row) would walk
  // its row N elements apart from its neighbours' rows. One block per (batch, row) instead, the
  // row across its threads.
  KernelBuilder rows;
  int x = rows.buffer("x", {B, M, N}), m = rows.buffer("m", {B, M}),
      e = rows.buffer("e", {B, M, N});
  rows.stmt(Statement::Kind::reduce_init, {B, M}, m, {it(0), it(1)}).reduce = ReduceKind::max;
  rows.stmt(Statement::Kind::reduce_update, {B, M, N}, m, {it(0), it(1)},
            load(x, {it(0), it(1), it(2)}))
      .reduce = ReduceKind::max;
  rows.stmt(
      Statement::Kind::assign, {B, M, N}, e, {it(0), it(1), it(2)},
      op(Op::exp2,
         {op(Op::add, {load(x, {it(0), it(1), it(2)}), op(Op::neg, {load(m, {it(0), it(1)})})})}));
  ScheduledKernel r = check_legal(rows, opt, sizes);
  report("batched row max and exponentials, GPU", r);
  const LoopNode& block = root_loop(r);
  CHECK(block.mapping == Mapping::block_x);
  CHECK(block.iter.rfind("g_", 0) == 0);  // the batch and row loops collapsed into one
  std::vector<const LoopNode*> all = loops(block);
  int threads = 0;
  for (const LoopNode* l : all)
    if (l != &block) {
      CHECK(l->mapping == Mapping::thread_x);  // the reduction and the exponentials
      ++threads;
    }
  CHECK(threads == 2);

  // A transposing copy: nothing inside walks memory, so the last loop stays on the threads and
  // the loops outside it are one block loop.
  KernelBuilder copy;
  int a = copy.buffer("a", {B, N, M}), t = copy.buffer("t", {B, M, N});
  copy.stmt(Statement::Kind::assign, {B, M, N}, t, {it(0), it(1), it(2)},
            load(a, {it(0), it(2), it(1)}));
  ScheduledKernel rc = check_legal(copy, opt, sizes);
  report("batched transposing copy, GPU", rc);
  const LoopNode& outer = root_loop(rc);
  CHECK(outer.mapping == Mapping::block_x);
  CHECK(outer.iter.rfind("g_", 0) == 0);
  std::vector<const LoopNode*> inner = loops(outer);
  REQUIRE(inner.size() == 2);
  CHECK(inner[1]->mapping == Mapping::thread_x);

  // A batched product without block tiles: threads on j read b[k, j] side by side, a[i, k] is the
  // same for all of them; each thread keeps its k loop, and the loops around it are one loop
  // across the grid's threads (a thread an element, whatever N: not B·M blocks of which
  // threads past N idle). (No lanes: a[i, k] walks along k at each element's own row.)
  KernelBuilder bmm;
  int pa = bmm.buffer("a", {B, M, K}), pb = bmm.buffer("b", {B, K, N}),
      pc = bmm.buffer("c", {B, M, N});
  bmm.stmt(Statement::Kind::reduce_init, {B, M, N}, pc, {it(0), it(1), it(2)});
  bmm.stmt(Statement::Kind::reduce_update, {B, M, N, K}, pc, {it(0), it(1), it(2)},
           op(Op::mul, {load(pa, {it(0), it(1), it(3)}), load(pb, {it(0), it(3), it(2)})}));
  ScheduledKernel rb = check_legal(bmm, opt, sizes);
  report("batched matmul, GPU, no block tile", rb);
  const LoopNode& grid = root_loop(rb);
  CHECK(grid.mapping == Mapping::thread_x);
  CHECK(grid.iter.rfind("g_", 0) == 0);
  std::vector<const LoopNode*> below = loops(grid);
  REQUIRE(below.size() == 2);
  CHECK(below[1]->mapping == Mapping::serial);  // k, in a register
}
