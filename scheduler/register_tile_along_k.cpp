// The register tiler's dot-product form along k: a decode step's few rows against an operand
// that lies along k, read where it lies instead of packed transposed (register_tile.h's file
// comment).
#include <set>

#include "scheduler/loop_algebra.h"
#include "scheduler/register_tile_tiler.h"
#include "scheduler/tile_bounds.h"

namespace kiln::register_tiling {

int64_t Tiler::along_k(const TileNest& t, const LoopNode& row) const {
  if (shape_.along_k_rows <= 0 || t.loops.size() != 2) return 0;
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  const DType sum = plan_.buffers.at(s.buffer).dtype;
  if (sum != DType::f32 && sum != DType::f64) return 0;
  const LoopNode& k = *t.loops.front();
  std::set<std::string> ks = driven_iterators(*t.stmt, k.iter),
                        lanes = driven_iterators(*t.stmt, t.loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter);
  if (ks.size() != 1 || k.step != 1) return 0;
  const std::string& kv = *ks.begin();
  // The statement iterator is the k loop's iterator itself (not an expression of it).
  for (size_t i = 0; i < t.stmt->args.size(); ++i)
    if (iterator_name(static_cast<int>(i)) == kv &&
        !(t.stmt->args[i] && t.stmt->args[i]->kind == AstExpr::Kind::iterator &&
          t.stmt->args[i]->name == k.iter))
      return 0;
  if (!tileable_statement(plan_, s, ks)) return 0;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  bool lane_operand = false;
  for (const ScalarExpr* l : loads) {
    if (!uses_vars(*l, ks)) continue;
    if (!l->mask.empty() || l->index.empty() ||
        !unit_stride(l->index, plan_.buffers.at(l->buffer).shape, kv))
      return 0;
    lane_operand |= uses_vars(*l, lanes) && !uses_vars(*l, rows);
  }
  // An operand that lies along the lanes (matmul's b) is read where it lies by the direct
  // row tiles (lane_block) instead.
  if (!lane_operand || lanes_contiguous(t, row)) return 0;
  const std::string row_t = row.iter + "t";
  if (needed_lane_end(s, *t.stmt, t.loops, row.iter, row_t, shape_.along_k_rows, plan_.size_vars) ||
      narrowed_to_rows(s, *t.stmt, k, row.iter, row_t, shape_.along_k_rows, plan_.size_vars))
    return 0;
  return shape_.vector_bytes / (sum == DType::f64 ? 8 : 4);
}

LoopNodePtr Tiler::or_along_k(const LoopNode& row, const TileNest& t, int64_t kv,
                              const std::string& lane_c, int64_t block_lanes,
                              const std::string& row_c, LoopNodePtr packed) {
  const LoopNode& lane = *t.loops.back();
  const LoopNode& k = *t.loops.front();
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  const int64_t rows = shape_.along_k_rows, lanes = shape_.vector_bytes >= 64 ? 4 : 2;
  const std::string lane_t = lane.iter + "t";
  // Whole vectors of k, then the k left one at a time.
  auto whole = std::make_shared<LoopNode>(k);
  whole->cond = ast_op("lt", {ast_iter(k.iter), sub(upper(k), ast_int(kv - 1))});
  whole->step = kv;
  whole->tile = false;
  whole->mapping = Mapping::serial;
  auto vector_stmt = std::make_shared<LoopNode>(*t.stmt);
  vector_stmt->k_lanes = kv;
  whole->body = {vector_stmt};
  auto rest = std::make_shared<LoopNode>(k);
  rest->init = add(
      k.init, ast_op("mul", {ast_op("pdiv_q", {sub(upper(k), k.init), ast_int(kv)}), ast_int(kv)}));
  rest->tile = false;
  rest->mapping = Mapping::serial;
  rest->body = {std::make_shared<LoopNode>(*t.stmt)};

  // The lane block's tiles of `n` rows by `l` lanes.
  auto tiles = [&](int64_t n, int64_t l) {
    auto alloc = std::make_shared<LoopNode>();
    alloc->kind = LoopNode::Kind::alloc;
    alloc->space = MemorySpace::local;
    alloc->statement = t.stmt->statement;
    alloc->name = "tile" + std::to_string(count_++);
    alloc->tile_rows = n;
    alloc->tile_lanes = l;
    alloc->tile_row = row.iter;
    alloc->tile_lane = lane.iter;
    alloc->tile_row_origin = ast_iter(row_c);
    if (n > 1)
      alloc->tile_row_count = ast_op("min", {ast_int(n), sub(upper(row), ast_iter(row_c))});
    alloc->tile_lane_origin = ast_iter(lane_t);
    alloc->tile_lane_count = remaining(lane, lane_t, l);
    alloc->k_lanes = kv;
    alloc->k_iter = k.iter;
    if (init_) {  // one pass over k: the sums are stored, the init never loaded
      alloc->tile_fresh = ast_int(1);
      alloc->tile_init = init_->statement;
      for (const AstExprPtr& a : init_->args)
        alloc->tile_init_args.push_back(a ? substitute(a, init_lane_, ast_iter(lane.iter)) : a);
    }
    std::set<std::string> used;
    for (const IntExpr& e : s.index)
      e.collect_vars(used);
    alloc->args.resize(t.stmt->args.size());
    for (size_t a = 0; a < alloc->args.size(); ++a)
      if (used.count(iterator_name(static_cast<int>(a)))) alloc->args[a] = t.stmt->args[a];
    alloc->body = {whole, rest};
    AstExprPtr saved = last_block_;
    last_block_ = nullptr;  // one pass: the epilogue follows every tile
    LoopNodePtr tile = epilogue_ ? with_epilogue(alloc, row, lane) : LoopNodePtr(alloc);
    last_block_ = saved;
    return coincident_loop(
        lane_t, ast_iter(lane_c),
        ast_op("lt", {ast_iter(lane_t),
                      ast_op("min", {add(ast_iter(lane_c), ast_int(block_lanes)), upper(lane)})}),
        l, {tile});
  };
  // One row (a decode step) takes tiles of twice the lanes instead of computing three rows
  // more on its operands: 8 sums and 9 vector loads a vector of k, where a tile of 4 rows by
  // 4 lanes would spill.
  AstExprPtr left = sub(upper(row), ast_iter(row_c));
  auto few = std::make_shared<LoopNode>();
  few->body = {make_guard(ast_op("eq", {left, ast_int(1)}), tiles(1, 2 * lanes))};
  if (rows > 1)
    few->body.push_back(make_guard(ast_op("gt", {left, ast_int(1)}), tiles(rows, lanes)));
  auto both = std::make_shared<LoopNode>();
  both->body = {make_guard(ast_op("le", {left, ast_int(rows)}),
                           make_guard(ast_op("lt", {k.init, upper(k)}), few)),
                make_guard(ast_op("gt", {left, ast_int(rows)}), std::move(packed))};
  return both;
}

}  // namespace kiln::register_tiling
