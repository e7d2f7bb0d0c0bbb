// Scheduler tests of what follows isl's schedule: accumulators in registers, register tiles,
// vector lanes, the matrix unit, scans (tests/unit/schedule_sim.h simulates the loop IR; the
// GPU's block tiles are in schedule_gpu_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: a reduction accumulates in a register across its loop, not through memory") {
  KernelBuilder b = matmul();
  ScheduleOptions opt = untiled();
  opt.sink = false;  // else j sinks below k (the next test) and the element moves inside the nest
  ScheduledKernel r =
      check_legal(b, opt, {{{"M", 3}, {"N", 4}, {"K", 5}}, {{"M", 2}, {"N", 1}, {"K", 1}}});
  report("matmul, accumulator", r);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 1);
  const LoopNode& acc = *found[0];
  CHECK(acc.space == MemorySpace::local);
  CHECK(acc.statement == 1);
  // The element is C[i, j]: the k argument is left out, the others are bound outside the loop.
  REQUIRE(acc.args.size() == 3);
  CHECK(acc.args[0]);
  CHECK(acc.args[1]);
  CHECK_FALSE(acc.args[2]);
  std::vector<const LoopNode*> inner = loops(acc);
  REQUIRE(inner.size() == 1);
  CHECK(inner[0]->reduction);
  CHECK_FALSE(inner[0]->coincident);

  // f16 keeps its sum in memory: rounding once instead of at every step would change results.
  KernelBuilder h = matmul();
  for (Buffer& buf : h.plan.buffers)
    buf.dtype = DType::f16;
  ScheduledKernel hr = schedule_kernel(h.plan, h.kernel(), opt);
  found.clear();
  allocs(*hr.nest.root, found);
  CHECK(found.empty());
}

TEST_CASE("schedule: an init isl fuses into its reduction's loop moves before it, promoted") {
  // Attention's softmax over [heads, i, j]: the exponentials stored, then summed. isl puts the
  // sum's init in the first iteration of the loop of its update, under a guard; it moves before
  // the loop and the sum accumulates in a register.
  KernelBuilder b;
  int sc = b.buffer("sc", {H, N, N}), mx = b.buffer("mx", {H, N}), e = b.buffer("e", {H, N, N}),
      sm = b.buffer("sm", {H, N}), p = b.buffer("p", {H, N, N});
  b.stmt(Statement::Kind::reduce_init, {H, N}, mx, {it(0), it(1)}).reduce = ReduceKind::max;
  b.stmt(Statement::Kind::reduce_update, {H, N, N}, mx, {it(0), it(1)},
         load(sc, {it(0), it(1), it(2)}))
      .reduce = ReduceKind::max;
  b.stmt(Statement::Kind::assign, {H, N, N}, e, {it(0), it(1), it(2)},
         op(Op::exp2, {op(Op::add, {load(sc, {it(0), it(1), it(2)}),
                                    op(Op::neg, {load(mx, {it(0), it(1)})})})}));
  b.stmt(Statement::Kind::reduce_init, {H, N}, sm, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {H, N, N}, sm, {it(0), it(1)},
         load(e, {it(0), it(1), it(2)}));
  b.stmt(Statement::Kind::assign, {H, N, N}, p, {it(0), it(1), it(2)},
         op(Op::mul, {load(e, {it(0), it(1), it(2)}), op(Op::recip, {load(sm, {it(0), it(1)})})}));
  std::vector<Env> sizes = {{{"H", 2}, {"N", 5}}, {{"H", 1}, {"N", 1}}};
  ScheduledKernel r = check_legal(b, untiled(), sizes);
  report("attention's softmax", r);
  // No loop holds a guarded init beside its update; both reductions accumulate in registers.
  const Kernel& k = b.kernel();
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<LoopNodePtr> body;
    flatten_blocks(l->body, body);
    for (const LoopNodePtr& g : body)
      if (g->kind == LoopNode::Kind::guard)
        for (const LoopNodePtr& init : g->body)
          for (const LoopNodePtr& u : body)
            if (init->kind == LoopNode::Kind::stmt && u->kind == LoopNode::Kind::stmt)
              CHECK_FALSE(
                  (k.statements[init->statement].kind == Statement::Kind::reduce_init &&
                   k.statements[u->statement].buffer == k.statements[init->statement].buffer));
  }
  std::vector<const LoopNode*> promoted;
  allocs(*r.nest.root, promoted);
  std::set<int> accumulated;
  for (const LoopNode* a : promoted)
    accumulated.insert(a->statement);
  CHECK(accumulated.count(1));
  CHECK(accumulated.count(4));
  // isl orders the row's phases in one band member (j, N + j, 2N + j), which carries the
  // dependences between them; the loop of each phase carries none but its reduction's, and
  // says so (build_ast checks each loop): the normalisation's loop is coincident (check_legal
  // ran it backwards), the sum's may run across lanes.
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<LoopNodePtr> body;
    flatten_blocks(l->body, body);
    for (const LoopNodePtr& c : body)
      if (c->kind == LoopNode::Kind::stmt && c->statement == 5)
        CHECK(l->coincident);
      else if (c->kind == LoopNode::Kind::stmt && c->statement == 4)
        CHECK(l->only_reductions);
  }
}

TEST_CASE("schedule: a contraction's parallel loop sinks below its reduction, across lanes") {
  KernelBuilder b = matmul();
  ScheduleOptions opt = untiled();
  opt.backend_simd = true;
  ScheduledKernel r = check_legal(b, opt,
                                  {{{"M", 3}, {"N", 4}, {"K", 5}},
                                   {{"M", 2}, {"N", 1}, {"K", 1}},
                                   {{"M", 1}, {"N", 7}, {"K", 0}}});
  report("matmul, sunk", r);
  CHECK(transforms_to_text(r.transforms).find("sink parallel loops below reductions") !=
        std::string::npos);
  // for i { for j S0; for k for j S1; for j S2 }: the update's j loop is innermost, unit-stride
  // along b's rows and the result's, and across vector lanes; no register holds C[i, j].
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  CHECK(found.empty());
  int sunk = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<const LoopNode*> inner = loops(*l);
    if (inner.size() != 2 || l->coincident) continue;  // the k loop with j inside
    ++sunk;
    CHECK(inner[1]->coincident);
    CHECK(inner[1]->mapping == Mapping::simd);
    CHECK(loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*inner[1])}).find("S1(") !=
          std::string::npos);
  }
  CHECK(sunk == 1);
  // A column walk (the reduction reads b[j, k]: stride K along j) does not sink.
  KernelBuilder t;
  int a = t.buffer("a", {M, K}), bt = t.buffer("bt", {N, K}), c = t.buffer("c", {M, N});
  t.stmt(Statement::Kind::reduce_init, {M, N}, c, {it(0), it(1)});
  t.stmt(Statement::Kind::reduce_update, {M, N, K}, c, {it(0), it(1)},
         op(Op::mul, {load(a, {it(0), it(2)}), load(bt, {it(1), it(2)})}));
  ScheduledKernel rt = check_legal(t, opt, {{{"M", 3}, {"N", 4}, {"K", 5}}});
  found.clear();
  allocs(*rt.nest.root, found);
  CHECK(found.size() == 1);  // the dot product over k stays in a register
}

TEST_CASE("schedule: a column reduction's consumer walks rows, not columns") {
  // mean[j] = sum(x[i, j], i); y[i, j] = x[i, j] - mean[j]: isl orders y's band (j, i) after the
  // dependence on mean[j]; the j loop sinks below y's i loop, so that y and x run along rows
  // across vector lanes, and the rows go to threads (the j loop out of the collapse).
  KernelBuilder b;
  int x = b.buffer("x", {M, N}), mean = b.buffer("mean", {N}), y = b.buffer("y", {M, N});
  b.stmt(Statement::Kind::reduce_init, {N}, mean, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {N, M}, mean, {it(0)}, load(x, {it(1), it(0)}));
  b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)},
         op(Op::add, {load(x, {it(0), it(1)}), op(Op::neg, {load(mean, {it(1)})})}));
  ScheduleOptions opt = untiled();
  opt.backend_threads = opt.backend_simd = true;
  ScheduledKernel r = check_legal(b, opt, {{{"M", 3}, {"N", 5}}, {{"M", 1}, {"N", 4}}});
  report("column reduction and its consumer", r);
  int consumers = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<const LoopNode*> inner = loops(*l);
    if (inner.size() != 2) continue;
    std::string text = loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*l)});
    if (text.find("S2(") == std::string::npos) continue;
    ++consumers;
    // for (cA ...) for (cB ...) S2(cA, cB): the outer loop drives y's row i0, the inner its
    // column i1.
    CHECK(text.find("S2(" + l->iter + ", " + inner[1]->iter + ")") != std::string::npos);
    CHECK(l->mapping == Mapping::parallel);
    CHECK(inner[1]->mapping == Mapping::simd);
  }
  CHECK(consumers == 1);
}

TEST_CASE("schedule: simd needs unit-stride accesses; a column walk stays serial") {
  KernelBuilder b;
  int x = b.buffer("x", {M, N}), y = b.buffer("y", {M, N}), t = b.buffer("t", {N, M});
  b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::assign, {M, N}, t, {it(1), it(0)}, load(x, {it(0), it(1)}));
  ScheduleOptions opt = untiled();
  opt.backend_threads = opt.backend_simd = true;
  opt.max_collapse = 1;
  ScheduledKernel r = check_legal(b, opt, {{{"M", 3}, {"N", 5}}});
  report("unit stride", r);
  // The inner loop that writes t[j, i] walks t by M: serial; the one that copies row by row is
  // simd. (Were they fused, the shared inner loop would be serial.)
  int simd = 0, strided = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    if (!loops(*l).empty() && loops(*l).size() > 1) continue;  // innermost loops only
    std::string text = loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*l)});
    bool writes_t = text.find("S1(") != std::string::npos;
    strided += writes_t;
    simd += l->mapping == Mapping::simd;
    if (writes_t) CHECK(l->mapping == Mapping::serial);
  }
  CHECK(strided >= 1);
  CHECK(simd + strided >= 1);
}

TEST_CASE(
    "schedule: MICRO=auto takes 32-byte vectors for one-loop reductions (64 where the "
    "target runs them at full width), 64 for several") {
  KernelBuilder mm = matmul();
  RegisterTileShape one = automatic_tile_shape(mm.plan);
  CHECK((one.rows == 3 && one.vectors == 8 && one.vector_bytes == 32));
  // A target with full-width 64-byte vectors: 6 rows of 4 (24 of AVX-512's 32 registers).
  RegisterTileShape wide = automatic_tile_shape(mm.plan, 64);
  CHECK((wide.rows == 6 && wide.vectors == 4 && wide.vector_bytes == 64));
  // A reduction over two loops (k and a second one): a convolution's kind.
  KernelBuilder two;
  IntExpr L = IntExpr::var("L");
  int x = two.buffer("x", {M, K, L}), w = two.buffer("w", {K, L, N}), y = two.buffer("y", {M, N});
  two.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  two.stmt(Statement::Kind::reduce_update, {M, N, K, L}, y, {it(0), it(1)},
           op(Op::mul, {load(x, {it(0), it(2), it(3)}), load(w, {it(2), it(3), it(1)})}));
  RegisterTileShape several = automatic_tile_shape(two.plan);
  CHECK((several.rows == 6 && several.vectors == 2 && several.vector_bytes == 64));
  CHECK(automatic_tile_shape(two.plan, 64).vectors == 2);
}

TEST_CASE("schedule: a contraction keeps a register tile of rows by vector lanes, in k blocks") {
  KernelBuilder b = matmul();
  ScheduleOptions opt;
  opt.micro = {6, 2, 64, 64};
  opt.backend_threads = true;
  // Full row and lane tiles with remainders of both, and k in blocks of 64 with a partial one;
  // lanes left over a whole vector and a part (59 = 32 + 16 + 11); sizes below one tile; an
  // empty reduction.
  std::vector<Env> sizes = {{{"M", 13}, {"N", 70}, {"K", 130}},
                            {{"M", 8}, {"N", 59}, {"K", 65}},
                            {{"M", 6}, {"N", 32}, {"K", 64}},
                            {{"M", 5}, {"N", 31}, {"K", 3}},
                            {{"M", 7}, {"N", 33}, {"K", 0}}};
  ScheduledKernel r = check_legal(b, opt, sizes);
  report("matmul, register-tiled", r);
  CHECK(transforms_to_text(r.transforms).find("register tile 6 rows x 2 vectors of 64 bytes") !=
        std::string::npos);
  CHECK(transforms_to_text(r.transforms).find("tile 32") == std::string::npos);  // not isl's
  // Tiles of two vectors, then masked tiles of one vector for the lanes left; each of 6 rows,
  // the last of them holding the rows left (min(6, M - it)): the full tiles of a row block of
  // at most 4 row tiles read b where it lies, those of a larger one from b's packed panel
  // (RegisterTileShape::direct_row_tiles), and a block of one row (a decode step) runs direct
  // tiles of one row: four copies of the reduction.
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 4);
  CHECK(found[0]->tile_rows == 1);
  CHECK_FALSE(found[0]->tile_row_count);
  CHECK(found[0]->tile_lanes == 32);
  CHECK(found[0]->tile_init == 0);
  const LoopNode& tile = *found[1];
  CHECK(tile.tile_lanes == 32);  // two 64-byte vectors of f32
  CHECK_FALSE(tile.tile_lane_count);
  const std::string text = loop_nest_to_text(r.nest);
  CHECK(text.find("if ((M - c0c) == 1)") != std::string::npos);
  CHECK(text.find("(M - c0c) <= 24)") != std::string::npos);
  CHECK(text.find("if ((M - c0c) > 24)") != std::string::npos);
  for (size_t k = 1; k < 4; ++k) {
    CHECK(found[k]->tile_rows == 6);
    CHECK(found[k]->tile_row_count);
    CHECK(found[k]->tile_lanes == (k < 3 ? 32 : 16));
    CHECK(static_cast<bool>(found[k]->tile_lane_count) == (k == 3));  // min(16, N - jt) lanes
    // The init (S0) is folded in: each tile starts from 0 in the first k block instead of
    // loading what a pass of its own stored (check_legal ran it there, and alone for K = 0).
    CHECK(found[k]->tile_init == 0);
    REQUIRE(found[k]->tile_fresh);
    CHECK(loop_node_to_text(*found[k]).find("S0 in registers where") != std::string::npos);
  }
  // Inside: the k loop of one block, the update's j loop gone into the lanes.
  std::vector<const LoopNode*> inner = loops(tile);
  REQUIRE(inner.size() == 1);
  CHECK_FALSE(inner[0]->coincident);
  // Read where it lies, b's k rows are a row of b apart: the direct tile's k loop prefetches
  // the lines of its 32 lanes (two of 64 bytes) 16 k rows ahead, b's loads only
  // (RegisterTileShape::prefetch_k); the packed tiles read the pack and prefetch nothing.
  std::vector<const LoopNode*> fetched = nodes_of(*inner[0], LoopNode::Kind::prefetch);
  REQUIRE(fetched.size() == 2);
  for (const LoopNode* f : fetched) {
    CHECK(f->prefetch_buffers == std::vector<int>{1});
    CHECK(loop_node_to_text(*f).find("min((c2 + 16), (K - 1))), the loads of b1;") !=
          std::string::npos);
  }
  CHECK(loop_node_to_text(*fetched[1]).find("c1t + 16") != std::string::npos);
  CHECK(nodes_of(*found[0], LoopNode::Kind::prefetch).size() == 2);
  CHECK(nodes_of(*found[2], LoopNode::Kind::prefetch).empty());
  CHECK(nodes_of(*found[3], LoopNode::Kind::prefetch).empty());
  ScheduleOptions quiet = opt;
  quiet.micro.prefetch_k = 0;
  CHECK(nodes_of(*check_legal(b, quiet, sizes).nest.root, LoopNode::Kind::prefetch).empty());
  // BLIS's order: lane blocks by row blocks run across threads (collapsed), each with its own
  // packs; inside them the k-block loop is a serial tile loop around the pack, whose lane tiles
  // each row tile sweeps.
  bool block = false, lanes_parallel = false, rows_parallel = false, swept = false;
  for (const LoopNode* l : loops(*r.nest.root)) {
    block |= l->tile && !l->coincident && l->step == 64 && l->mapping == Mapping::serial;
    lanes_parallel |= l->tile && l->iter == "c1c" && l->mapping == Mapping::parallel;
    rows_parallel |= l->tile && l->iter == "c0c" && l->mapping == Mapping::parallel;
    if (l->iter == "c0t")
      for (const LoopNode* in : loops(*l))
        swept |= in->iter == "c1t" && in->mapping == Mapping::serial;
  }
  CHECK(block);
  CHECK(lanes_parallel);
  CHECK(rows_parallel);
  CHECK(swept);

  // f64: 16 lanes per two vectors (the full tiles three times: b where it lies, in tiles of
  // one row and of six, and packed).
  KernelBuilder d = matmul(DType::f64);
  ScheduledKernel rd = check_legal(d, opt, {{{"M", 7}, {"N", 17}, {"K", 65}}});
  found.clear();
  allocs(*rd.nest.root, found);
  REQUIRE(found.size() == 4);
  CHECK(found[0]->tile_lanes == 16);
  CHECK(found[1]->tile_lanes == 16);
  CHECK(found[2]->tile_lanes == 16);
  CHECK(found[3]->tile_lanes == 8);
  CHECK(found[3]->tile_lane_count);

  // Sizes past 4 row tiles a row block run the packed tiles too (M = 30: 5 tiles of 6).
  check_legal(b, opt, {{{"M", 30}, {"N", 70}, {"K", 130}}});

  // f16 and a value the lanes cannot compute (exp2 of a lane-varying load) keep the plain nest.
  KernelBuilder h = matmul(DType::f16);
  KernelBuilder e;
  int a = e.buffer("a", {M, K}), bb = e.buffer("b", {K, N}), c = e.buffer("c", {M, N});
  e.stmt(Statement::Kind::reduce_init, {M, N}, c, {it(0), it(1)});
  e.stmt(Statement::Kind::reduce_update, {M, N, K}, c, {it(0), it(1)},
         op(Op::mul, {load(a, {it(0), it(2)}), op(Op::exp2, {load(bb, {it(2), it(1)})})}));
  for (const KernelBuilder* k : {&h, &e}) {
    ScheduledKernel rk = check_legal(*k, opt, {{{"M", 7}, {"N", 33}, {"K", 3}}});
    found.clear();
    allocs(*rk.nest.root, found);
    for (const LoopNode* f : found)
      CHECK(f->tile_rows == 0);
  }
}

TEST_CASE("schedule: x · wᵀ keeps a register tile; the packed panel gathers w's strided rows") {
  // y[i, j] = sum(x[i, k] * w[j, k], k), the nn.Linear layout: w moves along the lanes j with
  // stride K. Every row of a tile shares it, so the packed panel gathers it once per k block and
  // the tile reads it contiguously: the nest is the one matmul gets.
  KernelBuilder b;
  int x = b.buffer("x", {M, K}), w = b.buffer("w", {N, K}), y = b.buffer("y", {M, N});
  b.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {M, N, K}, y, {it(0), it(1)},
         op(Op::mul, {load(x, {it(0), it(2)}), load(w, {it(1), it(2)})}));
  ScheduleOptions opt;
  opt.micro = {3, 2, 64, 32};
  std::vector<Env> sizes = {{{"M", 7}, {"N", 37}, {"K", 130}},
                            {{"M", 3}, {"N", 16}, {"K", 64}},
                            {{"M", 2}, {"N", 5}, {"K", 3}},
                            {{"M", 4}, {"N", 17}, {"K", 0}}};
  ScheduledKernel r = check_legal(b, opt, sizes);
  report("x · wᵀ, register-tiled", r);
  std::vector<const LoopNode*> found = nodes_of(*r.nest.root, LoopNode::Kind::alloc);
  int packs = 0, tiles = 0;
  for (const LoopNode* a : found) {
    packs += a->pack_depth > 0;
    tiles += a->tile_rows > 0 && a->pack_depth == 0;
  }
  CHECK(packs >= 1);
  CHECK(tiles >= 1);
  // w lies along k: the fill reads 8 k rows of a lane as one 32-byte vector and transposes
  // blocks of 8 lanes (fill_k), the k rows past the last whole 8 one at a time. matmul's b lies
  // along the lanes: its fill stores them as they are.
  auto transposed = [](const ScheduledKernel& k) {
    std::set<int64_t> rows;
    for (const LoopNode* s : nodes_of(*k.nest.root, LoopNode::Kind::stmt))
      rows.insert(s->fill_k);
    return rows;
  };
  CHECK(transposed(r) == std::set<int64_t>{0, 8});
  CHECK(transposed(check_legal(matmul(DType::f32), opt, sizes)) == std::set<int64_t>{0});

  // A row block of at most 4 rows (M = 3, 2, 4 above; M = 7 packs) runs the reduction along k
  // instead: a tile of 4 rows by 2 lanes (32-byte vectors), or of one row by 4 lanes where the
  // block has one row, each element a vector of 8 partial sums over k, w read where it lies; a
  // loop of whole vectors of k, then the k left one at a time (K = 130: 16 vectors and 2; K = 3:
  // none and 3). check_legal ran each of them.
  auto along_k = [](const ScheduledKernel& k) {
    std::vector<const LoopNode*> out;
    for (const LoopNode* a : nodes_of(*k.nest.root, LoopNode::Kind::alloc))
      if (a->k_lanes > 0) out.push_back(a);
    return out;
  };
  std::vector<const LoopNode*> dot = along_k(r);
  REQUIRE(dot.size() == 2);
  for (size_t d = 0; d < 2; ++d) {
    CHECK(dot[d]->k_lanes == 8);
    CHECK(dot[d]->tile_rows == (d == 0 ? 1 : 4));
    CHECK(dot[d]->tile_lanes == (d == 0 ? 4 : 2));
    CHECK(static_cast<bool>(dot[d]->tile_row_count) == (d == 1));
    CHECK(dot[d]->tile_lane_count);
    CHECK(dot[d]->tile_init == 0);  // the init folded in: one pass over k stores the sums
    REQUIRE(dot[d]->body.size() == 2);
    CHECK(dot[d]->body[0]->step == 8);
    CHECK(dot[d]->body[1]->step == 1);
    std::set<int64_t> k_lanes;
    for (const LoopNode* st : nodes_of(*dot[d], LoopNode::Kind::stmt))
      k_lanes.insert(st->k_lanes);
    CHECK(k_lanes == std::set<int64_t>{0, 8});
  }
  check_legal(b, opt, {{{"M", 1}, {"N", 9}, {"K", 37}}, {{"M", 1}, {"N", 3}, {"K", 8}}});
  const std::string text = loop_nest_to_text(r.nest);
  CHECK(text.find("register tile along c2 (vectors of 8 k summed at the end)") !=
        std::string::npos);
  // matmul's b lies along the lanes (the direct row tiles read it), and the form is a knob.
  CHECK(along_k(check_legal(matmul(DType::f32), opt, sizes)).empty());
  ScheduleOptions packed = opt;
  packed.micro.along_k_rows = 0;
  CHECK(along_k(check_legal(b, packed, sizes)).empty());
  // An operand that moves along k with a stride (x[k, i]: aᵀ · w) keeps the pack.
  KernelBuilder at;
  int xa = at.buffer("x", {K, M}), wa = at.buffer("w", {N, K}), ya = at.buffer("y", {M, N});
  at.stmt(Statement::Kind::reduce_init, {M, N}, ya, {it(0), it(1)});
  at.stmt(Statement::Kind::reduce_update, {M, N, K}, ya, {it(0), it(1)},
          op(Op::mul, {load(xa, {it(2), it(0)}), load(wa, {it(1), it(2)})}));
  CHECK(along_k(check_legal(at, opt, sizes)).empty());

  // Without a register tile the lane loop does not sink: w would be walked K apart at every k.
  ScheduledKernel plain = check_legal(b, untiled(), sizes);
  found.clear();
  allocs(*plain.nest.root, found);
  for (const LoopNode* a : found)
    CHECK(a->tile_rows == 0);
  std::vector<const LoopNode*> all = loops(*plain.nest.root);
  REQUIRE_FALSE(all.empty());
  CHECK(all.back()->reduction);  // k innermost, where both operands are contiguous

  // A strided operand that moves with the rows too (p[j, i, k]: every row a panel of its own)
  // is no shared panel: no register tile.
  KernelBuilder t;
  int p = t.buffer("p", {N, M, K}), q = t.buffer("q", {K, N}), z = t.buffer("z", {M, N});
  t.stmt(Statement::Kind::reduce_init, {M, N}, z, {it(0), it(1)});
  t.stmt(Statement::Kind::reduce_update, {M, N, K}, z, {it(0), it(1)},
         op(Op::mul, {load(p, {it(1), it(0), it(2)}), load(q, {it(2), it(1)})}));
  ScheduledKernel rt = check_legal(t, opt, sizes);
  for (const LoopNode* f : nodes_of(*rt.nest.root, LoopNode::Kind::alloc))
    CHECK(f->tile_rows == 0);
}

TEST_CASE("schedule: a window of stride 2 keeps a register tile; stride 3 does not") {
  // y[m, n] = sum(x[k, 2n + r] * w[m, k, r], k, r): a strided convolution's rows (filters m)
  // by lanes (outputs n), its input read at every second element along the lanes. The tile
  // loads two vectors and their even lanes (backends/c_style_expr.cpp); the reduction is two
  // loops, so there is no packed panel to gather it.
  auto strided = [](int64_t stride) {
    KernelBuilder b;
    int x = b.buffer("x", {K, IntExpr(stride) * N + R}), w = b.buffer("w", {M, K, R}),
        y = b.buffer("y", {M, N});
    b.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
    b.stmt(Statement::Kind::reduce_update, {M, N, K, R}, y, {it(0), it(1)},
           op(Op::mul,
              {load(x, {it(2), IntExpr(stride) * it(1) + it(3)}), load(w, {it(0), it(2), it(3)})}));
    return b;
  };
  ScheduleOptions opt;
  opt.micro = {3, 2, 64, 32};
  std::vector<Env> sizes = {{{"M", 7}, {"N", 37}, {"K", 5}, {"R", 3}},
                            {{"M", 3}, {"N", 16}, {"K", 2}, {"R", 1}},
                            {{"M", 2}, {"N", 5}, {"K", 3}, {"R", 2}}};
  ScheduledKernel two = check_legal(strided(2), opt, sizes);
  report("stride 2, register-tiled", two);
  int tiles = 0;
  for (const LoopNode* a : nodes_of(*two.nest.root, LoopNode::Kind::alloc))
    tiles += a->tile_rows > 0;
  CHECK(tiles >= 1);
  ScheduledKernel three = check_legal(strided(3), opt, sizes);
  for (const LoopNode* a : nodes_of(*three.nest.root, LoopNode::Kind::alloc))
    CHECK(a->tile_rows == 0);
}

TEST_CASE("schedule: an f16 or bf16 product accumulating in f32 keeps a register tile") {
  // build_statements accumulates an f16 or bf16 sum in an f32 temp; the product of the narrow
  // loads computes in f32 (the C renderers convert at loads), so the tile applies as in f32:
  // the packed panel holds b's row converted once per k block.
  for (DType t : {DType::f16, DType::bf16}) {
    KernelBuilder b = matmul(t);
    b.plan.buffers[2].dtype = DType::f32;  // C, the accumulator
    ScheduleOptions opt;
    opt.micro = {3, 2, 64, 32};
    ScheduledKernel r =
        check_legal(b, opt, {{{"M", 7}, {"N", 70}, {"K", 300}}, {{"M", 2}, {"N", 5}, {"K", 3}}});
    int packs = 0, tiles = 0;
    for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc)) {
      packs += a->pack_depth > 0;
      tiles += a->tile_rows > 0 && a->pack_depth == 0;
    }
    CHECK(packs >= 1);
    CHECK(tiles >= 1);
  }
}

TEST_CASE("schedule: a product written into merged heads, o[n, D·h + d], keeps its tile") {
  // P·V of attention computed straight into [N, H·D] (build_statements writes a reduce through
  // the view that merges the heads): isl cannot multiply the size D by the iterator h, so it
  // sees o's second dimension split into (h, d) and the access stays exact. Without that the
  // write would cover a whole row of o and every loop but n would lose its coincidence.
  const IntExpr D = IntExpr::var("D");
  KernelBuilder b;
  int p = b.buffer("p", {H, N, N}), v = b.buffer("v", {H, N, D}), o = b.buffer("o", {N, H * D}),
      y = b.buffer("y", {N, H * D});
  b.stmt(Statement::Kind::reduce_init, {H, N, D}, o, {it(1), D * it(0) + it(2)});
  b.stmt(Statement::Kind::reduce_update, {H, N, D, N}, o, {it(1), D * it(0) + it(2)},
         op(Op::mul, {load(p, {it(0), it(1), it(3)}), load(v, {it(0), it(3), it(2)})}));
  ScheduleOptions opt;
  opt.micro = {3, 2, 64, 32};
  std::vector<Env> sizes = {{{"H", 2}, {"N", 7}, {"D", 17}},
                            {{"H", 3}, {"N", 2}, {"D", 64}},
                            {{"H", 1}, {"N", 1}, {"D", 1}}};
  ScheduledKernel r = check_legal(b, opt, sizes);
  report("P·V into merged heads", r);
  int tiles = 0;
  for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc))
    tiles += a->tile_rows > 0 && a->pack_depth == 0;
  CHECK(tiles >= 1);
  std::vector<const LoopNode*> all = loops(*r.nest.root);
  REQUIRE_FALSE(all.empty());
  CHECK(all.front()->coincident);

  // A later statement of the kernel that reads o plainly, o[n, c]: isl sees that read as the
  // whole row (sound), and the order stays legal.
  b.stmt(Statement::Kind::assign, {N, H * D}, y, {it(0), it(1)},
         op(Op::mul, {load(o, {it(0), it(1)}), load(o, {it(0), it(1)})}));
  check_legal(b, opt, sizes);
}

TEST_CASE("schedule: a scan carries its running value in a register; a leading axis sinks") {
  // y[.., k] = y[.., k - 1] (masked: 0 before the row) + x[.., k], over rows of N.
  auto scan = [](KernelBuilder& b, const Shape& shape, int axis) {
    int x = b.buffer("x", shape), y = b.buffer("y", shape);
    std::vector<IntExpr> at, before;
    for (size_t d = 0; d < shape.size(); ++d)
      at.push_back(it(static_cast<int>(d)));
    before = at;
    before[axis] = at[axis] - 1;
    ScalarExprPtr prev = load(y, before);
    std::const_pointer_cast<ScalarExpr>(prev)->mask.push_back({before[axis], shape[axis]});
    b.stmt(Statement::Kind::assign, shape, y, at, op(Op::add, {prev, load(x, at)}));
  };
  ScheduleOptions opt = untiled();
  opt.backend_threads = opt.backend_simd = true;
  const std::vector<Env> sizes = {{{"M", 3}, {"N", 5}}, {{"M", 1}, {"N", 1}}};
  // Rows: the row loop is parallel, the register carries the walk along each row, which may split
  // across threads (rows of one length: when they are few, backends/openmp_renderer.h).
  KernelBuilder rows;
  scan(rows, {M, N}, 1);
  ScheduledKernel r = check_legal(rows, opt, sizes);
  report("scan along rows", r);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->carried);
  CHECK(found[0]->mapping == Mapping::parallel);
  REQUIRE(loops(*found[0]).size() == 1);
  CHECK(loops(*found[0])[0]->mapping == Mapping::serial);
  CHECK(transforms_to_text(r.transforms).find("carry scans (split across threads)") !=
        std::string::npos);
  // One row, and no split without parallel loops.
  KernelBuilder one;
  scan(one, {N}, 0);
  found.clear();
  ScheduledKernel split = check_legal(one, opt, sizes);  // kept alive: found points into it
  allocs(*split.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->mapping == Mapping::parallel);
  opt.parallel = false;
  found.clear();
  ScheduledKernel serial = check_legal(one, opt, sizes);
  allocs(*serial.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->mapping == Mapping::serial);
  // Along the leading axis the column loop sinks below the walk and runs across lanes.
  opt.parallel = true;
  KernelBuilder lead;
  scan(lead, {M, N}, 0);
  ScheduledKernel l = check_legal(lead, opt, sizes);
  report("scan along columns", l);
  found.clear();
  allocs(*l.nest.root, found);
  CHECK(found.empty());
  std::vector<const LoopNode*> walk = loops(*l.nest.root);
  REQUIRE(walk.size() == 2);
  CHECK_FALSE(walk[0]->coincident);
  CHECK(walk[1]->coincident);
  CHECK(walk[1]->mapping != Mapping::serial);  // across threads, or lanes without them
}

namespace {

/** Every stmt node under `n`, in pre-order. */
void stmt_nodes(const LoopNode& n, std::vector<const LoopNode*>& out) {
  if (n.kind == LoopNode::Kind::stmt) out.push_back(&n);
  for (const LoopNodePtr& c : n.body)
    stmt_nodes(*c, out);
}

/** A row's bounded max, the exponentials over the square that read it, and their bounded sum
 *  (causal attention's softmax after its scores); `e_bounded` gives the exponentials the sum's
 *  bound too (scheduler/demanded_domains.h). */
KernelBuilder causal_softmax(bool e_bounded) {
  KernelBuilder b;
  int sc = b.buffer("sc", {H, N, N}), mx = b.buffer("mx", {H, N}), e = b.buffer("e", {H, N, N}),
      sm = b.buffer("sm", {H, N});
  const std::vector<IntExpr> below = {it(1) - it(2)};  // j <= i
  b.stmt(Statement::Kind::reduce_init, {H, N}, mx, {it(0), it(1)}).reduce = ReduceKind::max;
  Statement& m = b.stmt(Statement::Kind::reduce_update, {H, N, N}, mx, {it(0), it(1)},
                        load(sc, {it(0), it(1), it(2)}));
  m.reduce = ReduceKind::max;
  m.domain = below;
  Statement& x = b.stmt(Statement::Kind::assign, {H, N, N}, e, {it(0), it(1), it(2)},
                        op(Op::exp2, {op(Op::add, {load(sc, {it(0), it(1), it(2)}),
                                                   op(Op::neg, {load(mx, {it(0), it(1)})})})}));
  if (e_bounded) x.domain = below;
  b.stmt(Statement::Kind::reduce_init, {H, N}, sm, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {H, N, N}, sm, {it(0), it(1)},
         load(e, {it(0), it(1), it(2)}))
      .domain = below;
  return b;
}

}  // namespace

TEST_CASE("schedule: a row's bounded max and the exponentials after it are not fused by a skew") {
  // One ILP over the whole component skews the exponentials past the max (`for c < N + i: if
  // (c <= i) max(i, c); if (c >= i) exp(i, c - i)`): a serial loop with guards. The schedule
  // keeps each phase in a loop of its own over plain iterators, and a kernel whose accesses all
  // stream along its inner loop is not tiled (default options: isl's tiling on).
  for (bool bounded : {false, true}) {
    CAPTURE(bounded);
    KernelBuilder b = causal_softmax(bounded);
    ScheduledKernel r = schedule_kernel(b.plan, b.kernel(), isl_tiled());
    report("causal softmax", r);
    std::vector<const LoopNode*> stmts;
    stmt_nodes(*r.nest.root, stmts);
    CHECK(stmts.size() == 5);
    for (const LoopNode* s : stmts)
      for (const AstExprPtr& a : s->args)
        if (a) CHECK(a->kind == AstExpr::Kind::iterator);
    for (const Transform& t : r.transforms)
      CHECK(t.kind != Transform::Kind::tile);
    for (const LoopNode* l : loops(*r.nest.root))
      CHECK_FALSE(l->tile);
    if (!bounded) continue;
    // With the exponentials under the sum's bound they share its loop: one loop over j <= i
    // that computes, stores and adds each one (a vector loop where the backend has lanes).
    bool shared = false;
    for (const LoopNode* l : loops(*r.nest.root)) {
      std::vector<const LoopNode*> inside;
      for (const LoopNodePtr& c : l->body)
        stmt_nodes(*c, inside);
      std::set<int> which;
      for (const LoopNode* s : inside)
        which.insert(s->statement);
      shared |= which == std::set<int>{2, 4};
    }
    CHECK(shared);
  }
}

TEST_CASE(
    "schedule: a register tile's reduction stops where a select on its term is false for every "
    "row") {
  // P·V of causal attention made rectangular (tile_bounded.h): o[h, i, d] += (j <= i ? p[h, i,
  // j] · v[h, j, d] : 0) over the whole box. Past the tile's last row the term is zero for all
  // its rows: the j loop of each tile ends at origin + rows.
  KernelBuilder b;
  const IntExpr D = IntExpr::var("D");
  int p = b.buffer("p", {H, N, N}), v = b.buffer("v", {H, N, D}), o = b.buffer("o", {H, N, D});
  auto at = std::make_shared<ScalarExpr>();
  at->kind = ScalarExpr::Kind::iterator;
  at->dtype = DType::i64;
  at->index = {it(1) - it(3)};
  auto minus_one = std::make_shared<ScalarExpr>();
  minus_one->dtype = DType::i64;
  minus_one->int_value = -1;
  auto below = op(Op::cmplt, {minus_one, at});
  std::const_pointer_cast<ScalarExpr>(below)->dtype = DType::boolean;
  auto zero = std::make_shared<ScalarExpr>();
  b.stmt(Statement::Kind::reduce_init, {H, N, D}, o, {it(0), it(1), it(2)});
  b.stmt(Statement::Kind::reduce_update, {H, N, D, N}, o, {it(0), it(1), it(2)},
         op(Op::where,
            {below, op(Op::mul, {load(p, {it(0), it(1), it(3)}), load(v, {it(0), it(3), it(2)})}),
             zero}));
  ScheduleOptions opt;
  opt.micro = {6, 2, 256, 64};
  ScheduledKernel r = schedule_kernel(b.plan, b.kernel(), opt);
  report("causal P·V", r);
  std::vector<const LoopNode*> tiles;
  allocs(*r.nest.root, tiles);
  int narrowed = 0, register_tiles = 0;
  for (const LoopNode* t : tiles) {
    if (t->tile_rows == 0) continue;  // a pack
    ++register_tiles;
    REQUIRE(!t->body.empty());
    std::vector<const LoopNode*> inner = loops(*t);
    REQUIRE(!inner.empty());
    const std::string cond = loop_expr_to_text(*inner[0]->cond);
    const std::string origin = loop_expr_to_text(*t->tile_row_origin);
    CAPTURE(cond);
    narrowed += cond.find(t->tile_rows > 1 ? origin + " + " + std::to_string(t->tile_rows - 1)
                                           : origin) != std::string::npos;
  }
  CHECK(register_tiles > 0);
  CHECK(narrowed == register_tiles);
}

TEST_CASE("schedule: a register tile's lane tiles stop where no lane is read (Statement::needed)") {
  // Causal attention's scores made rectangular for the tiles (tile_bounded.h), read only where
  // j <= i: s[h, i, j] += q[h, i, d] · k[h, j, d] over the box, needed where i - j >= 0. In each
  // row tile the lane tiles end past the tile's last row.
  KernelBuilder b;
  const IntExpr D = IntExpr::var("D");
  int q = b.buffer("q", {H, N, D}), kk = b.buffer("k", {H, N, D}), sc = b.buffer("s", {H, N, N});
  b.stmt(Statement::Kind::reduce_init, {H, N, N}, sc, {it(0), it(1), it(2)});
  b.stmt(Statement::Kind::reduce_update, {H, N, N, D}, sc, {it(0), it(1), it(2)},
         op(Op::mul, {load(q, {it(0), it(1), it(3)}), load(kk, {it(0), it(2), it(3)})}))
      .needed = {it(1) - it(2)};
  ScheduleOptions opt;
  opt.micro = {6, 2, 256, 64};
  ScheduledKernel r = schedule_kernel(b.plan, b.kernel(), opt);
  report("causal scores", r);
  std::vector<const LoopNode*> tiles;
  allocs(*r.nest.root, tiles);
  int register_tiles = 0;
  for (const LoopNode* t : tiles) {
    if (t->tile_rows == 0) continue;  // a pack
    ++register_tiles;
    const std::string origin = loop_expr_to_text(*t->tile_row_origin);
    const std::string lane = loop_expr_to_text(*t->tile_lane_origin);
    // The loop of the tile's lane origin, the tile's parent.
    const LoopNode* lanes = nullptr;
    for (const LoopNode* l : loops(*r.nest.root))
      for (const LoopNodePtr& c : l->body)
        if (c.get() == t && l->iter == lane) lanes = l;
    REQUIRE(lanes);
    const std::string cond = loop_expr_to_text(*lanes->cond);
    CAPTURE(cond);
    CHECK(cond.find(origin + " + 5") != std::string::npos);
  }
  CHECK(register_tiles > 0);
}
