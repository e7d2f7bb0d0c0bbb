// The register tile's row packs (RegisterTileShape::pack_rows): a's rows copied per row tile
// and k block where they are f16, bf16 or not contiguous along k.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: f16 and strided row operands are packed per row tile and k block") {
  // RegisterTileShape::pack_rows: a row operand (moving along the rows and k, not the lanes)
  // that is f16 or bf16, or not contiguous along k, is copied per row tile and k block into a
  // pack that the row tile's lane tiles read; a contiguous f32 one is read in place.
  auto row_packs = [](const ScheduledKernel& k) {
    std::vector<const LoopNode*> out;
    for (const LoopNode* a : nodes_of(*k.nest.root, LoopNode::Kind::alloc))
      if (a->pack_depth > 0 && a->tile_rows > 0 && !a->matrix) out.push_back(a);
    return out;
  };
  // The iterator of the fill's innermost loop.
  auto fill_inner = [](const LoopNode& pack) {
    const LoopNode* n = pack.body.at(0).get();
    std::string iter;
    while (n->kind == LoopNode::Kind::loop) {
      iter = n->iter;
      n = n->body.at(0).get();
    }
    return iter;
  };
  ScheduleOptions opt;
  opt.micro = {3, 2, 64, 32};
  const std::vector<Env> sizes = {{{"M", 7}, {"N", 70}, {"K", 300}},
                                  {{"M", 2}, {"N", 5}, {"K", 3}},
                                  {{"M", 4}, {"N", 17}, {"K", 0}}};
  for (DType t : {DType::f16, DType::bf16}) {
    KernelBuilder b = matmul(t);
    b.plan.buffers[2].dtype = DType::f32;
    ScheduledKernel r = check_legal(b, opt, sizes);
    std::vector<const LoopNode*> packs = row_packs(r);
    REQUIRE(!packs.empty());
    for (const LoopNode* p : packs) {
      CHECK((p->tile_rows == 3 || p->tile_rows == 1));  // 1: a block of one row
      CHECK(p->pack_depth == 64);
      CHECK(fill_inner(*p) == p->pack_iter);  // a[i, k]: the fill reads along k
      int tiles = 0;
      for (size_t c = 1; c < p->body.size(); ++c)
        for (const LoopNode* a : nodes_of(*p->body[c], LoopNode::Kind::alloc))
          tiles += a->tile_rows == p->tile_rows && a->pack_depth == 0 &&
                   same_expr(*a->tile_row_origin, *p->tile_row_origin);
      CHECK(tiles >= 1);
    }
    ScheduleOptions off = opt;
    off.micro.pack_rows = false;
    CHECK(row_packs(check_legal(b, off, sizes)).empty());
  }
  // aᵀ · b: a[k, i] lies along the rows; its pack is filled rows innermost.
  KernelBuilder at;
  int a = at.buffer("a", {K, M}), bb = at.buffer("b", {K, N}), y = at.buffer("y", {M, N});
  at.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  at.stmt(Statement::Kind::reduce_update, {M, N, K}, y, {it(0), it(1)},
          op(Op::mul, {load(a, {it(2), it(0)}), load(bb, {it(2), it(1)})}));
  ScheduledKernel ra = check_legal(at, opt, sizes);
  std::vector<const LoopNode*> packs = row_packs(ra);
  REQUIRE(!packs.empty());
  for (const LoopNode* p : packs)
    CHECK(fill_inner(*p) == p->tile_row);
  CHECK(row_packs(check_legal(matmul(DType::f32), opt, sizes)).empty());
}
