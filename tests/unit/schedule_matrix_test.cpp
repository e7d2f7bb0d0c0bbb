// Scheduler tests of contractions on the matrix unit (AMX-BF16, AMX-INT8) and on dot-product
// vectors (VNNI, vdpbf16ps) where there is none (scheduler/register_tile.h; tests/unit/
// schedule_sim.h simulates the loop IR). The vector register tiles are in
// schedule_lowering_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: a bf16 product runs on the matrix unit where the target has one") {
  // With AMX-BF16 (RegisterTileShape::amx_bf16) the one-loop contraction of two bf16 loads
  // takes 32 × 32 matrix-unit tiles over two bf16 packs: a's rows per row tile, b's lanes per
  // lane block in k pairs (its fill's k loop steps by 2). The simulator runs the tiles' bodies
  // as written, so partial row and lane tiles and short k blocks are checked for legality.
  KernelBuilder b = matmul(DType::bf16);
  b.plan.buffers[2].dtype = DType::f32;  // C, the accumulator
  ScheduleOptions opt;
  opt.micro = {3, 2, 64, 32};
  opt.micro.amx_bf16 = true;
  opt.micro.matrix_depth = 64;
  opt.micro.matrix_block_lanes = 64;
  opt.micro.matrix_block_rows = 32;
  // Partial row and lane tiles, two lane blocks and two row blocks, three k blocks (the last
  // partial), K = 0; small, as the simulator runs every instance (and under sanitizers in CI).
  std::vector<Env> sizes = {{{"M", 7}, {"N", 70}, {"K", 150}},
                            {{"M", 40}, {"N", 33}, {"K", 70}},
                            {{"M", 2}, {"N", 5}, {"K", 3}},
                            {{"M", 4}, {"N", 17}, {"K", 0}}};
  ScheduledKernel r = check_legal(b, opt, sizes);
  report("bf16 matmul on the matrix unit", r);
  int tiles = 0, row_packs = 0, lane_packs = 0;
  for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc)) {
    if (!a->matrix) continue;
    if (a->pack_depth == 0) {
      ++tiles;
      CHECK(a->tile_rows == 32);
      CHECK(a->tile_lanes == 32);
      CHECK(a->tile_row_count);
      CHECK(a->tile_lane_count);
      continue;
    }
    CHECK(a->pack_depth == 64);
    REQUIRE(a->pack_count);
    if (a->tile_rows > 0) {
      ++row_packs;
    } else {
      ++lane_packs;
      // The fill: lane tiles, then k in pairs, then the lanes (b[k, n] moves along n).
      std::vector<const LoopNode*> fill = loops(*a->body.at(0));
      REQUIRE(fill.size() == 3);
      CHECK(fill[1]->iter == a->pack_iter);
      CHECK(fill[1]->step == 2);
      CHECK(fill[2]->iter == a->tile_lane);
    }
  }
  CHECK(tiles == 1);
  CHECK(row_packs == 1);
  CHECK(lane_packs == 1);
  CHECK(loop_nest_to_text(r.nest).find("matrix-unit tile") != std::string::npos);

  // x · wᵀ: w moves along k, so its fill runs k innermost (still in pairs).
  auto bf16 = [](ScalarExprPtr e) {
    std::const_pointer_cast<ScalarExpr>(e)->dtype = DType::bf16;
    return e;
  };
  KernelBuilder l;
  int x = l.buffer("x", {M, K}), w = l.buffer("w", {N, K}), y = l.buffer("y", {M, N});
  l.plan.buffers[x].dtype = l.plan.buffers[w].dtype = DType::bf16;
  l.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  l.stmt(Statement::Kind::reduce_update, {M, N, K}, y, {it(0), it(1)},
         bf16(op(Op::mul, {bf16(load(x, {it(0), it(2)})), bf16(load(w, {it(1), it(2)}))})));
  ScheduledKernel rl = check_legal(l, opt, sizes);
  bool k_inner = false;
  for (const LoopNode* a : nodes_of(*rl.nest.root, LoopNode::Kind::alloc))
    if (a->matrix && a->pack_depth > 0 && a->tile_rows == 0) {
      std::vector<const LoopNode*> fill = loops(*a->body.at(0));
      REQUIRE(fill.size() == 3);
      k_inner = fill[2]->iter == a->pack_iter && fill[2]->step == 2;
    }
  CHECK(k_inner);

  // Not on the matrix unit: f32 operands, a bf16 operand that is not a load (its f32 value need
  // not be a bf16 one), or no unit. They keep the vector tile.
  auto matrix_nodes = [](const ScheduledKernel& k) {
    int n = 0;
    for (const LoopNode* a : nodes_of(*k.nest.root, LoopNode::Kind::alloc))
      n += a->matrix;
    return n;
  };
  CHECK(matrix_nodes(check_legal(matmul(DType::f32), opt, sizes)) == 0);
  KernelBuilder e = matmul(DType::bf16);
  e.plan.buffers[2].dtype = DType::f32;
  Statement& update = e.plan.kernels[0].statements.back();
  auto product = std::make_shared<ScalarExpr>(*update.value);
  product->args[0] = bf16(op(Op::neg, {product->args[0]}));
  update.value = product;
  ScheduledKernel re = check_legal(e, opt, sizes);
  CHECK(matrix_nodes(re) == 0);
  int vector_tiles = 0;
  for (const LoopNode* a : nodes_of(*re.nest.root, LoopNode::Kind::alloc))
    vector_tiles += a->tile_rows > 0 && a->pack_depth == 0;
  CHECK(vector_tiles >= 1);
  ScheduleOptions off = opt;
  off.micro.amx_bf16 = false;
  CHECK(matrix_nodes(check_legal(b, off, sizes)) == 0);
}

TEST_CASE("schedule: an 8-bit integer product summing in i32 runs on the matrix unit") {
  // y[m, n] = sum(i32(a[m, k]) * i32(b[k, n]), k) with a and b i8 or u8: with AMX-INT8 the
  // same nest as bf16's, b's fill taking k in quads. Without the unit an i32 sum keeps no tile.
  auto typed = [](ScalarExprPtr e, DType t) {
    std::const_pointer_cast<ScalarExpr>(e)->dtype = t;
    return e;
  };
  for (DType at : {DType::i8, DType::u8}) {
    KernelBuilder b;
    int A = b.buffer("A", {M, K}), Bm = b.buffer("B", {K, N}), C = b.buffer("C", {M, N});
    b.plan.buffers[A].dtype = at;
    b.plan.buffers[Bm].dtype = DType::i8;
    b.plan.buffers[C].dtype = DType::i32;
    b.stmt(Statement::Kind::reduce_init, {M, N}, C, {it(0), it(1)});
    b.stmt(Statement::Kind::reduce_update, {M, N, K}, C, {it(0), it(1)},
           typed(op(Op::mul, {typed(op(Op::cast, {typed(load(A, {it(0), it(2)}), at)}), DType::i32),
                              typed(op(Op::cast, {typed(load(Bm, {it(2), it(1)}), DType::i8)}),
                                    DType::i32)}),
                 DType::i32));
    ScheduleOptions opt;
    opt.micro = {3, 2, 64, 32};
    opt.micro.amx_int8 = true;
    opt.micro.matrix_depth = 128;
    opt.micro.matrix_block_lanes = 64;
    opt.micro.matrix_block_rows = 32;
    std::vector<Env> sizes = {{{"M", 7}, {"N", 70}, {"K", 150}},
                              {{"M", 40}, {"N", 9}, {"K", 30}},
                              {{"M", 2}, {"N", 5}, {"K", 3}}};
    ScheduledKernel r = check_legal(b, opt, sizes);
    int tiles = 0, quads = 0;
    for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc)) {
      tiles += a->matrix && a->pack_depth == 0;
      if (a->matrix && a->pack_depth > 0 && a->tile_rows == 0) {
        std::vector<const LoopNode*> fill = loops(*a->body.at(0));
        REQUIRE(fill.size() == 3);
        quads += fill[1]->iter == a->pack_iter && fill[1]->step == 4;
      }
    }
    CHECK(tiles == 1);
    CHECK(quads == 1);
    ScheduleOptions off = opt;
    off.micro.amx_int8 = false;
    off.micro.amx_bf16 = true;  // a bf16 unit does not take integers
    ScheduledKernel plain = check_legal(b, off, sizes);
    for (const LoopNode* a : nodes_of(*plain.nest.root, LoopNode::Kind::alloc))
      CHECK(a->tile_rows == 0);
  }
}

TEST_CASE("schedule: an 8-bit integer product runs on VNNI vectors where there is no AMX") {
  // With VNNI (RegisterTileShape::dot_bytes) and no AMX-INT8 the same nest as the matrix
  // unit's, its tiles 6 rows by 4 vectors of 16 i32 sums (64 lanes) on vector registers, b's
  // fill in quads of k; the signs of a and b pick how vpdpbusd takes them (DotSigns), marked on
  // the tile and both packs. With AMX-INT8 too the matrix unit wins; with neither, or with the
  // knob off (VNNI=0: dot_bytes 0), an i32 sum keeps no tile.
  auto typed = [](ScalarExprPtr e, DType t) {
    std::const_pointer_cast<ScalarExpr>(e)->dtype = t;
    return e;
  };
  const std::pair<std::pair<DType, DType>, DotSigns> cases[] = {
      {{DType::u8, DType::i8}, DotSigns::unsigned_signed},
      {{DType::i8, DType::u8}, DotSigns::signed_unsigned},
      {{DType::i8, DType::i8}, DotSigns::signed_signed},
      {{DType::u8, DType::u8}, DotSigns::unsigned_unsigned}};
  for (const auto& [types, signs] : cases) {
    const auto [at, bt] = types;
    CAPTURE(dtype_name(at));
    CAPTURE(dtype_name(bt));
    KernelBuilder b;
    int A = b.buffer("A", {M, K}), Bm = b.buffer("B", {K, N}), C = b.buffer("C", {M, N});
    b.plan.buffers[A].dtype = at;
    b.plan.buffers[Bm].dtype = bt;
    b.plan.buffers[C].dtype = DType::i32;
    b.stmt(Statement::Kind::reduce_init, {M, N}, C, {it(0), it(1)});
    b.stmt(
        Statement::Kind::reduce_update, {M, N, K}, C, {it(0), it(1)},
        typed(op(Op::mul, {typed(op(Op::cast, {typed(load(A, {it(0), it(2)}), at)}), DType::i32),
                           typed(op(Op::cast, {typed(load(Bm, {it(2), it(1)}), bt)}), DType::i32)}),
              DType::i32));
    ScheduleOptions opt;
    opt.micro = {3, 2, 64, 32};
    opt.micro.dot_bytes = 64;
    opt.micro.matrix_depth = 64;
    opt.micro.matrix_block_lanes = 128;
    opt.micro.matrix_block_rows = 12;
    // Partial row tiles (M = 7, 13), partial lane tiles and two lane blocks (N = 70, 130), k
    // blocks of 64 with a partial last one and k not a multiple of 4 (K = 150, 3), K = 1.
    std::vector<Env> sizes = {{{"M", 7}, {"N", 130}, {"K", 150}},
                              {{"M", 13}, {"N", 70}, {"K", 3}},
                              {{"M", 1}, {"N", 5}, {"K", 1}}};
    ScheduledKernel r = check_legal(b, opt, sizes);
    int tiles = 0, row_packs = 0, quads = 0;
    for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc)) {
      if (!a->matrix) continue;
      CHECK(a->dot_bytes == 64);
      CHECK(a->dot_signs == signs);
      if (a->pack_depth == 0) {
        ++tiles;
        CHECK(a->tile_rows == 6);
        CHECK(a->tile_lanes == 64);
      } else if (a->tile_rows > 0) {
        ++row_packs;
        CHECK(a->tile_rows == 6);
      } else {
        CHECK(a->tile_lanes == 64);
        CHECK(a->pack_lanes == 128);
        std::vector<const LoopNode*> fill = loops(*a->body.at(0));
        REQUIRE(fill.size() == 3);
        quads += fill[1]->iter == a->pack_iter && fill[1]->step == 4;
      }
    }
    CHECK(tiles == 1);
    CHECK(row_packs == 1);
    CHECK(quads == 1);
    CHECK(loop_nest_to_text(r.nest).find("dot-product tile") != std::string::npos);

    ScheduleOptions amx = opt;
    amx.micro.amx_int8 = true;
    const ScheduledKernel ra = check_legal(b, amx, sizes);
    for (const LoopNode* a : nodes_of(*ra.nest.root, LoopNode::Kind::alloc))
      CHECK(a->dot_bytes == 0);
    ScheduleOptions off = opt;
    off.micro.dot_bytes = 0;
    const ScheduledKernel ro = check_legal(b, off, sizes);
    for (const LoopNode* a : nodes_of(*ro.nest.root, LoopNode::Kind::alloc))
      CHECK(a->tile_rows == 0);
  }
}

TEST_CASE("schedule: a bf16 product runs on vdpbf16ps vectors where there is no AMX-BF16") {
  // With AVX512-BF16 (RegisterTileShape::bf16_dot_bytes) and no AMX-BF16 the matrix unit's nest
  // with tiles of 6 rows by 4 vectors of 16 f32 sums on vector registers, b's fill in pairs of
  // k, for b[k, n] and for w[n, k] alike; the operands as they are (DotSigns::bf16_pairs).
  // With AMX-BF16 the matrix unit wins; with the knob off the f32 register tile takes it.
  for (bool transposed : {false, true}) {
    CAPTURE(transposed);
    KernelBuilder b;
    int A = b.buffer("A", {M, K}), Bm = transposed ? b.buffer("W", {N, K}) : b.buffer("B", {K, N}),
        C = b.buffer("C", {M, N});
    b.plan.buffers[A].dtype = DType::bf16;
    b.plan.buffers[Bm].dtype = DType::bf16;
    auto bf16 = [](ScalarExprPtr e) {
      std::const_pointer_cast<ScalarExpr>(e)->dtype = DType::bf16;
      return e;
    };
    // The product of the bf16 loads computes in f32, as build_statements writes it.
    b.stmt(Statement::Kind::reduce_init, {M, N}, C, {it(0), it(1)});
    b.stmt(Statement::Kind::reduce_update, {M, N, K}, C, {it(0), it(1)},
           op(Op::mul, {bf16(load(A, {it(0), it(2)})),
                        bf16(transposed ? load(Bm, {it(1), it(2)}) : load(Bm, {it(2), it(1)}))}));
    ScheduleOptions opt;
    opt.micro = {3, 2, 64, 32};
    opt.micro.bf16_dot_bytes = 64;
    opt.micro.matrix_depth = 64;
    opt.micro.matrix_block_lanes = 128;
    opt.micro.matrix_block_rows = 12;
    std::vector<Env> sizes = {{{"M", 7}, {"N", 130}, {"K", 150}},
                              {{"M", 13}, {"N", 70}, {"K", 3}},
                              {{"M", 1}, {"N", 5}, {"K", 1}}};
    ScheduledKernel r = check_legal(b, opt, sizes);
    int tiles = 0, row_packs = 0, pairs = 0;
    for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc)) {
      if (!a->matrix) continue;
      CHECK(a->dot_bytes == 64);
      CHECK(a->dot_signs == DotSigns::bf16_pairs);
      if (a->pack_depth == 0) {
        ++tiles;
        CHECK(a->tile_rows == 6);
        CHECK(a->tile_lanes == 64);
      } else if (a->tile_rows > 0) {
        ++row_packs;
        CHECK(a->tile_rows == 6);
      } else {
        CHECK(a->tile_lanes == 64);
        CHECK(a->pack_lanes == 128);
        for (const LoopNode* l : loops(*a->body.at(0)))
          pairs += l->iter == a->pack_iter && l->step == 2;
      }
    }
    CHECK(tiles == 1);
    CHECK(row_packs == 1);
    CHECK(pairs == 1);
    CHECK(loop_nest_to_text(r.nest).find("64-byte vdpbf16ps vectors (bf16 pairs)") !=
          std::string::npos);

    ScheduleOptions amx = opt;
    amx.micro.amx_bf16 = true;
    int amx_tiles = 0;
    const ScheduledKernel ra = check_legal(b, amx, sizes);
    for (const LoopNode* a : nodes_of(*ra.nest.root, LoopNode::Kind::alloc)) {
      CHECK(a->dot_bytes == 0);
      amx_tiles += a->matrix && a->pack_depth == 0 && a->tile_rows == 32;
    }
    CHECK(amx_tiles == 1);
    ScheduleOptions off = opt;
    off.micro.bf16_dot_bytes = 0;
    int vector_tiles = 0;
    const ScheduledKernel ro = check_legal(b, off, sizes);
    for (const LoopNode* a : nodes_of(*ro.nest.root, LoopNode::Kind::alloc)) {
      CHECK_FALSE(a->matrix);
      vector_tiles += a->tile_rows == 3;
    }
    CHECK(vector_tiles > 0);
  }
}

TEST_CASE(
    "schedule: a matrix tile's sums reach its epilogue in the tile where nothing else reads them") {
  // y = bf16(a · b): the f32 sums C are a temp that only the epilogue (the cast) reads, so the
  // matrix-unit tile runs the epilogue inside itself in the last k block (sums_to_epilogue),
  // and its sums never go to C there. A second reader of C keeps them in C.
  auto product = [](bool second_reader) {
    KernelBuilder b = matmul(DType::bf16);
    const int C = 2;
    b.plan.buffers[C].dtype = DType::f32;
    int y = b.buffer("y", {M, N});
    b.plan.buffers[y].dtype = DType::bf16;
    b.plan.buffers[y].kind = BufferKind::output;
    ScalarExprPtr sum = load(C, {it(0), it(1)});
    auto cast = std::make_shared<ScalarExpr>();
    cast->kind = ScalarExpr::Kind::op;
    cast->op = Op::cast;
    cast->dtype = DType::bf16;
    cast->args = {sum};
    b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, cast);
    if (second_reader) {
      int z = b.buffer("z", {M, N});
      b.plan.buffers[z].kind = BufferKind::output;
      b.stmt(Statement::Kind::assign, {M, N}, z, {it(0), it(1)}, load(C, {it(0), it(1)}));
    }
    return b;
  };
  ScheduleOptions opt;
  opt.micro = {3, 2, 64, 32};
  opt.micro.amx_bf16 = true;
  opt.micro.matrix_depth = 64;
  opt.micro.matrix_block_lanes = 64;
  opt.micro.matrix_block_rows = 32;
  std::vector<Env> sizes = {{{"M", 7}, {"N", 40}, {"K", 150}}, {{"M", 33}, {"N", 5}, {"K", 3}}};
  auto tiles = [](const ScheduledKernel& r) {
    std::vector<const LoopNode*> out;
    for (const LoopNode* a : nodes_of(*r.nest.root, LoopNode::Kind::alloc))
      if (a->matrix && a->pack_depth == 0) out.push_back(a);
    return out;
  };
  // The simulator runs the epilogue where the tile holds it: after the tile's last block.
  ScheduledKernel r = check_legal(product(false), opt, sizes);
  report("bf16 matmul with its cast inside the tile", r);
  REQUIRE(!tiles(r).empty());
  for (const LoopNode* t : tiles(r)) {
    CHECK(t->sums_to_epilogue);
    REQUIRE(t->body.size() == 2);
    CHECK(t->body[1]->kind == LoopNode::Kind::guard);
    CHECK(nodes_of(*t->body[1], LoopNode::Kind::stmt).at(0)->statement == 2);
  }
  ScheduledKernel kept = check_legal(product(true), opt, sizes);
  REQUIRE(!tiles(kept).empty());
  for (const LoopNode* t : tiles(kept)) {
    CHECK(!t->sums_to_epilogue);
    CHECK(t->body.size() == 1);
  }
}
