// The register tiler's nest for the matrix units (AMX-BF16, AMX-INT8) and for the dot-product
// tiles in vector registers (VNNI, AVX512-BF16): register_tile.h's file comment.
#include <algorithm>
#include <set>

#include "scheduler/loop_algebra.h"
#include "scheduler/register_tile_tiler.h"

namespace kiln::register_tiling {

int Tiler::dot(const Statement& s) const {
  return plan_.buffers.at(s.buffer).dtype == DType::i32
             ? (shape_.amx_int8 ? 0 : shape_.dot_bytes)
             : (shape_.amx_bf16 ? 0 : shape_.bf16_dot_bytes);
}

std::optional<std::pair<const ScalarExpr*, const ScalarExpr*>> Tiler::matrix_operands(
    const TileNest& t, const LoopNode& row) const {
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  if (!matrix_statement(plan_, s, bf16(), int8())) return std::nullopt;
  DType sum = plan_.buffers.at(s.buffer).dtype;
  std::set<std::string> lanes = driven_iterators(*t.stmt, t.loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter);
  const ScalarExpr *a = nullptr, *b = nullptr;
  for (const ScalarExprPtr& f : s.value->args) {
    const ScalarExpr* load = matrix_factor(plan_, *f, sum);
    bool r = uses_vars(*load, rows), l = uses_vars(*load, lanes);
    if (r && !l && !a)
      a = load;
    else if (l && !r && !b)
      b = load;
    else
      return std::nullopt;
  }
  if (!a || !b) return std::nullopt;
  return std::make_pair(a, b);
}

LoopNodePtr Tiler::nest(const std::vector<LoopNodePtr>& loops, const LoopNode& stmt) {
  return wrap(loops, std::make_shared<LoopNode>(stmt));
}

LoopNodePtr Tiler::restricted(const LoopNode& loop, const AstExprPtr& from, int64_t n) {
  auto copy = std::make_shared<LoopNode>(loop);
  copy->init = from;
  copy->cond =
      ast_op("lt", {ast_iter(loop.iter), ast_op("min", {add(from, ast_int(n)), upper(loop)})});
  copy->step = 1;
  copy->tile = false;
  copy->mapping = Mapping::serial;
  return copy;
}

LoopNodePtr Tiler::matrix_blocked(const LoopNode& row, const TileNest& t,
                                  const std::vector<const LoopNode*>& loops,
                                  const std::shared_ptr<LoopNode>& block, int64_t kv) {
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  const int dot_bytes = dot(s);
  const bool vnni = dot_bytes > 0, i32 = plan_.buffers.at(s.buffer).dtype == DType::i32;
  // Rows and lanes of a tile; lane blocks and row blocks of whole tiles.
  const int64_t vectors = i32 ? shape_.dot_vectors : kBf16DotVectors;
  const int64_t n = vnni ? shape_.dot_rows : 32, nl = vnni ? vectors * dot_bytes / 4 : 32;
  // Row blocks round up to whole tiles: 512 rows of 6-row tiles are one block of 516, not
  // one of 510 and one of 2 that would pack b's block again for those 2.
  const int64_t lanes = std::max<int64_t>(1, shape_.matrix_block_lanes / nl) * nl,
                rows = (shape_.matrix_block_rows + n - 1) / n * n;
  const LoopNode& lane = *t.loops.back();
  const LoopNode& k = *loops.front();  // the k loop of one block
  const std::string lane_c = lane.iter + "c", row_c = row.iter + "c";
  const std::string lane_t = lane.iter + "t", row_t = row.iter + "t";
  auto [a, b] = *matrix_operands(t, row);
  std::set<std::string> ks = driven_iterators(*t.stmt, k.iter);
  auto along_k = [&](const ScalarExpr& l) {
    return ks.size() == 1 && unit_stride(l.index, plan_.buffers.at(l.buffer).shape, *ks.begin());
  };
  const bool a_along_k = along_k(*a), b_along_k = along_k(*b);
  // vpdpbusd multiplies unsigned bytes by signed ones (ir/loop_ir.h, DotSigns); vdpbf16ps
  // takes bf16 pairs as they are.
  const bool a_u8 = plan_.buffers.at(a->buffer).dtype == DType::u8,
             b_u8 = plan_.buffers.at(b->buffer).dtype == DType::u8;
  const DotSigns signs = !i32   ? DotSigns::bf16_pairs
                         : a_u8 ? (b_u8 ? DotSigns::unsigned_unsigned : DotSigns::unsigned_signed)
                                : (b_u8 ? DotSigns::signed_unsigned : DotSigns::signed_signed);
  auto on_vectors = [&](LoopNode& node) {
    if (!vnni) return;
    node.dot_bytes = dot_bytes;
    node.dot_signs = signs;
  };
  AstExprPtr k_count =
      ast_op("min", {ast_int(block->step), sub(upper(*t.loops.front()), ast_iter(block->iter))});
  LoopNodePtr k_loop = std::make_shared<LoopNode>(k);

  // The tiles of one row tile: n × nl sums each, the last lanes and rows partial.
  matrix_ = true;
  AstExprPtr lane_end = ast_op("min", {add(ast_iter(lane_c), ast_int(lanes)), upper(lane)});
  dot_bytes_ = dot_bytes;
  dot_signs_ = signs;
  LoopNodePtr tiles =
      coincident_loop(lane_t, ast_iter(lane_c), ast_op("lt", {ast_iter(lane_t), lane_end}), nl,
                      {tile_alloc(row, t, loops, nl, true, n, row_t,
                                  ast_op("min", {ast_int(n), sub(upper(row), ast_iter(row_t))}))});
  matrix_ = false;
  dot_bytes_ = 0;

  // A matrix pack of one k block of `t`'s statement.
  auto matrix_pack = [&]() {
    auto p = std::make_shared<LoopNode>();
    p->kind = LoopNode::Kind::alloc;
    p->space = MemorySpace::local;
    p->statement = t.stmt->statement;
    p->name = "pack" + std::to_string(packs_++);
    p->matrix = true;
    p->tile_row = row.iter;
    p->tile_lane = lane.iter;
    p->pack_depth = block->step;
    p->pack_iter = k.iter;
    p->pack_origin = k.init;
    p->pack_count = k_count;
    on_vectors(*p);
    return p;
  };
  // a's rows of the row tile, k inner where a moves along k.
  auto a_pack = matrix_pack();
  a_pack->tile_rows = n;
  a_pack->tile_row_origin = ast_iter(row_t);
  a_pack->tile_row_count = ast_op("min", {ast_int(n), sub(upper(row), ast_iter(row_t))});
  LoopNodePtr a_rows = restricted(row, ast_iter(row_t), n);
  a_pack->body = {a_along_k ? nest({a_rows, k_loop}, *t.stmt) : nest({k_loop, a_rows}, *t.stmt),
                  tiles};
  auto row_tiles = std::make_shared<LoopNode>(row);
  row_tiles->iter = row_t;
  row_tiles->init = ast_iter(row_c);
  row_tiles->cond = ast_op(
      "lt", {ast_iter(row_t), ast_op("min", {add(ast_iter(row_c), ast_int(rows)), upper(row)})});
  row_tiles->step = n;
  row_tiles->mapping = Mapping::serial;
  row_tiles->body = {a_pack};

  // b's block, lane tile by lane tile, in k pairs; k inner where b moves along k.
  auto b_pack = matrix_pack();
  b_pack->tile_lanes = nl;
  b_pack->tile_lane_origin = ast_iter(lane_t);
  b_pack->tile_lane_count = remaining(lane, lane_t, nl);
  b_pack->pack_lane_base = ast_iter(lane_c);
  b_pack->pack_lanes = lanes;
  // Its k loop takes the pairs of bf16 (quads of 8-bit integers): each instance fills them.
  LoopNodePtr b_lanes = restricted(lane, ast_iter(lane_t), nl);
  auto k_pairs = std::make_shared<LoopNode>(k);
  k_pairs->step = plan_.buffers.at(b->buffer).dtype == DType::bf16 ? 2 : 4;
  LoopNodePtr fill =
      b_along_k ? nest({b_lanes, k_pairs}, *t.stmt) : nest({k_pairs, b_lanes}, *t.stmt);
  b_pack->body = {coincident_loop(lane_t, ast_iter(lane_c),
                                  ast_op("lt", {ast_iter(lane_t), lane_end}), nl, {fill}),
                  row_tiles};
  block->body = {b_pack};

  auto row_blocks = std::make_shared<LoopNode>(row);
  row_blocks->iter = row_c;
  row_blocks->cond = ast_op("lt", {ast_iter(row_c), upper(row)});
  row_blocks->step = rows;
  row_blocks->tile = true;
  row_blocks->body = {kv > 0 ? or_along_k(row, t, kv, lane_c, lanes, row_c, block)
                             : LoopNodePtr(block)};
  auto blocks = std::make_shared<LoopNode>(*coincident_loop(
      lane_c, lane.init, ast_op("lt", {ast_iter(lane_c), upper(lane)}), lanes, {row_blocks}));
  blocks->tile = true;
  return blocks;
}

}  // namespace kiln::register_tiling
