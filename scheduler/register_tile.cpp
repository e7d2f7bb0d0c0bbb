#include "scheduler/register_tile.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "scheduler/isl_text.h"
#include "scheduler/loop_algebra.h"
#include "scheduler/map_loops.h"
#include "scheduler/register_tile_tiler.h"
#include "scheduler/tile_bounds.h"

namespace kiln::register_tiling {

namespace {

std::optional<TileNest> tile_nest(const KernelPlan& plan, const Kernel& k, const LoopNode& row,
                                  const LoopNode& child, bool bf16, bool int8) {
  if (child.kind != LoopNode::Kind::loop || child.coincident) return std::nullopt;
  TileNest t;
  t.stmt = perfect_nest(child, t.loops);
  if (!t.stmt || t.stmt->statement < 0 || t.loops.size() < 2) return std::nullopt;
  const LoopNode& lane = *t.loops.back();
  if (!lane.coincident || lane.step != 1) return std::nullopt;
  for (size_t a = 0; a < t.loops.size(); ++a) {
    const LoopNode& l = *t.loops[a];
    if (!canonical_loop(l) || (a + 1 < t.loops.size() && l.coincident)) return std::nullopt;
    std::vector<std::string> others = {row.iter};
    for (const LoopNode* m : t.loops)
      if (m != &l) others.push_back(m->iter);
    for (const std::string& it : others)
      if (uses_iterator(*l.init, it) || uses_iterator(*l.cond, it)) return std::nullopt;
  }
  const Statement& s = k.statements.at(t.stmt->statement);
  std::set<std::string> lanes = driven_iterators(*t.stmt, lane.iter),
                        rows = driven_iterators(*t.stmt, row.iter);
  if (lanes.size() != 1 || rows.size() != 1 || lanes == rows) return std::nullopt;
  // An operand every row shares may move along the lanes with a stride where the reduction is
  // one loop: the packed panel gathers it (lane_block() below, map_loops.h packable_statement).
  // An operand read at every second element along the lanes (a window of stride 2) loads as
  // two vectors and their even lanes (backends/c_style_expr.cpp, render_lanes).
  if (!tileable_statement(plan, s, lanes, bf16, int8) ||
      (!unit_stride_statement(plan, k, *t.stmt, lane.iter) &&
       !(t.loops.size() == 2 && packable_statement(plan, k, *t.stmt, lane.iter, *rows.begin())) &&
       !(!matrix_statement(plan, s, bf16, int8) && stride2_statement(plan, k, *t.stmt, lane.iter))))
    return std::nullopt;
  // Each row and lane a distinct element: the row by +1 into an iterator that some index
  // dimension but the last moves with, the lane by +1 along the last; the reduction
  // iterators do not move it.
  for (size_t a = 0; a < t.stmt->args.size(); ++a)
    if (t.stmt->args[a] && uses_iterator(*t.stmt->args[a], row.iter) &&
        !plus_iterator(*t.stmt->args[a], row.iter))
      return std::nullopt;
  for (size_t a = 0; a < t.stmt->args.size(); ++a)
    if (t.stmt->args[a] && uses_iterator(*t.stmt->args[a], lane.iter) &&
        !plus_iterator(*t.stmt->args[a], lane.iter))
      return std::nullopt;
  std::set<std::string> reduced;
  for (size_t l = 0; l + 1 < t.loops.size(); ++l)
    for (const std::string& v : driven_iterators(*t.stmt, t.loops[l]->iter))
      reduced.insert(v);
  const std::string &row_var = *rows.begin(), &lane_var = *lanes.begin();
  // Trailing dimensions of extent 1 (a reduction's keepdim) do not count.
  const Shape& shape = plan.buffers.at(s.buffer).shape;
  size_t end = s.index.size();
  while (end > 1 && shape.size() == s.index.size() && shape[end - 1] == IntExpr(1))
    --end;
  bool row_moves = false;
  for (size_t d = 0; d < s.index.size(); ++d) {
    bool last = d + 1 == end;
    for (const std::string& v : reduced)
      if (affine_coefficient(s.index[d], v) != 0) return std::nullopt;
    std::optional<int64_t> r = affine_coefficient(s.index[d], row_var);
    std::optional<int64_t> l = affine_coefficient(s.index[d], lane_var);
    if (!r || !l) return std::nullopt;
    if (d >= end ? (*l != 0 || *r != 0) : last ? (*l != 1 || *r != 0) : *l != 0)
      return std::nullopt;
    row_moves |= d + 1 < end && *r != 0;
  }
  if (!row_moves) return std::nullopt;
  return t;
}

/** The statement iterators of stmt node `n` as the loop iterators that are their values (`from`
 *  renamed `to`); nothing when a value is not a plain loop iterator. */
std::optional<std::map<std::string, IntExpr>> loop_values(const LoopNode& n,
                                                          const std::string& from,
                                                          const std::string& to) {
  std::map<std::string, IntExpr> out;
  for (size_t a = 0; a < n.args.size(); ++a) {
    if (!n.args[a]) continue;
    if (n.args[a]->kind != AstExpr::Kind::iterator) return std::nullopt;
    const std::string& it = n.args[a]->name;
    out[iterator_name(static_cast<int>(a))] = IntExpr::var(it == from ? to : it);
  }
  return out;
}

/** The first value from `start` below `end` past the tiles of `n` from `start`. */
AstExprPtr after_tiles(const AstExprPtr& start, const AstExprPtr& end, int64_t n) {
  AstExprPtr count = sub(end, start);
  AstExprPtr tiled = add(start, ast_op("mul", {ast_int(n), ast_op("fdiv_q", {count, ast_int(n)})}));
  return ast_op("max", {start, tiled});
}

}  // namespace

/** The lanes a partial tile of `lanes` at `lane_t` holds: min(lanes, end - lane_t). */
AstExprPtr remaining(const LoopNode& lane, const std::string& lane_t, int64_t lanes) {
  return ast_op("min", {ast_int(lanes), sub(upper(lane), ast_iter(lane_t))});
}

LoopNodePtr Tiler::visit(const LoopNodePtr& n) {
  if (n->kind == LoopNode::Kind::stmt || n->kind == LoopNode::Kind::alloc) return n;
  if (candidate(*n))
    if (LoopNodePtr t = tile(n)) return t;
  bool changed = false;
  std::vector<LoopNodePtr> body;
  for (const LoopNodePtr& c : n->body) {
    body.push_back(visit(c));
    changed |= body.back() != c;
  }
  if (!changed) return n;
  auto copy = std::make_shared<LoopNode>(*n);
  copy->body = std::move(body);
  return copy;
}

LoopNodePtr Tiler::tile(const LoopNodePtr& top) {
  std::vector<LoopNodePtr> band = {top};
  std::vector<LoopNodePtr> children;
  for (;;) {
    children.clear();
    flatten_blocks(band.back()->body, children);
    if (children.size() != 1 || !candidate(*children[0])) break;
    bool rectangular = true;
    for (const LoopNodePtr& l : band)
      rectangular = rectangular && !uses_iterator(*children[0]->init, l->iter) &&
                    !uses_iterator(*children[0]->cond, l->iter);
    if (!rectangular) break;
    band.push_back(children[0]);
  }
  // The row loop: most operands shared by the rows (b's row in a matmul, the input's in a
  // convolution), then the innermost.
  int row = -1, best = -1;
  std::vector<std::optional<TileNest>> nests;
  for (int r = static_cast<int>(band.size()) - 1; r >= 0; --r) {
    std::vector<std::optional<TileNest>> found;
    int score = -1;
    for (const LoopNodePtr& c : children) {
      found.push_back(tile_nest(plan_, kernel_, *band[r], *c, bf16(), int8()));
      if (found.back()) score = std::max(score, 0) + shared_operands(*found.back(), *band[r]);
    }
    if (score > best) row = r, best = score, nests = std::move(found);
  }
  if (row < 0) return nullptr;
  // The band carries no dependence: its loops distribute over the children in order and
  // permute freely (the row loop moves inside the others, around its tiles).
  std::vector<LoopNodePtr> others = band;
  others.erase(others.begin() + row);
  auto seq = std::make_shared<LoopNode>();
  seq->kind = LoopNode::Kind::block;
  for (size_t c = 0; c < children.size(); ++c) {
    if (!nests[c]) {
      seq->body.push_back(wrap(band, children[c]));
      continue;
    }
    // The init nest right before the reduction (its elements set to 0) is folded into the
    // tiles, which start from 0 in their first block instead of loading what it stored; it
    // runs on its own only when no block runs. Likewise the nest right after a reduction that
    // maps its elements (a bias, an activation) runs on each tile after the tile's last
    // block, and on its own only when no block runs.
    const LoopNode& outer = *nests[c]->loops.front();
    AstExprPtr no_block = ast_op("ge", {outer.init, upper(outer)});
    LoopNodePtr init;
    init_ = c > 0 && !nests[c - 1] ? init_of(*nests[c], *children[c - 1]) : nullptr;
    if (init_) {
      init = children[c - 1];
      seq->body.pop_back();
    }
    epilogue_ =
        c + 1 < children.size() && !nests[c + 1] ? epilogue(*nests[c], children[c + 1]) : nullptr;
    seq->body.push_back(wrap(others, blocked(*band[row], *nests[c])));
    if (init) seq->body.push_back(wrap(band, make_guard(no_block, init)));
    if (epilogue_) seq->body.push_back(wrap(band, make_guard(no_block, children[++c])));
    epilogue_ = nullptr;
    init_ = nullptr;
  }
  return seq;
}

const LoopNode* Tiler::epilogue(const TileNest& t, const LoopNodePtr& next) {
  std::vector<const LoopNode*> loops;
  const LoopNode* stmt = perfect_nest(*next, loops);
  if (!stmt || stmt->statement < 0 || loops.size() != 1) return nullptr;
  const LoopNode &own = *loops[0], &lane = *t.loops.back();
  if (!canonical_loop(own) || own.step != 1 || !same_expr(*own.init, *lane.init) ||
      !same_expr(*upper(own), *upper(lane)))
    return nullptr;
  const Statement& reduced = kernel_.statements.at(t.stmt->statement);
  const Statement& s = kernel_.statements.at(stmt->statement);
  if (s.kind != Statement::Kind::assign || !s.value || s.buffer == reduced.buffer) return nullptr;
  auto at_tile = loop_values(*t.stmt, "", ""), at_own = loop_values(*stmt, own.iter, lane.iter);
  if (!at_tile || !at_own) return nullptr;
  std::vector<IntExpr> element;
  for (const IntExpr& e : reduced.index)
    element.push_back(e.substitute(*at_tile));
  std::vector<const ScalarExpr*> loads, tile_loads;
  collect_loads(*s.value, loads);
  collect_loads(*reduced.value, tile_loads);
  bool reads = false;
  for (const ScalarExpr* l : loads) {
    if (l->buffer == s.buffer) return nullptr;
    if (l->buffer != reduced.buffer) continue;
    if (!l->mask.empty() || l->index.size() != element.size()) return nullptr;
    for (size_t d = 0; d < element.size(); ++d)
      if (l->index[d].substitute(*at_own) != element[d]) return nullptr;
    reads = true;
  }
  for (const ScalarExpr* l : tile_loads)
    if (l->buffer == s.buffer) return nullptr;
  for (size_t k = 0; k < s.extents.size(); ++k) {
    bool indexed = false;
    for (const IntExpr& e : s.index)
      indexed |= e.as_var() == iterator_name(static_cast<int>(k));
    if (!indexed) return nullptr;
  }
  if (!reads) return nullptr;
  epilogue_lane_ = own.iter;
  return stmt;
}

const LoopNode* Tiler::init_of(const TileNest& t, const LoopNode& prev) {
  std::vector<const LoopNode*> loops;
  const LoopNode* stmt = perfect_nest(prev, loops);
  if (!stmt || stmt->statement < 0 || loops.size() != 1) return nullptr;
  const LoopNode &own = *loops[0], &lane = *t.loops.back();
  if (!canonical_loop(own) || own.step != 1 || !same_expr(*own.init, *lane.init) ||
      !same_expr(*upper(own), *upper(lane)))
    return nullptr;
  const Statement& reduced = kernel_.statements.at(t.stmt->statement);
  const Statement& s = kernel_.statements.at(stmt->statement);
  if (s.kind != Statement::Kind::reduce_init || s.reduce != ReduceKind::sum ||
      s.buffer != reduced.buffer || s.index.size() != reduced.index.size() || !s.domain.empty())
    return nullptr;
  auto at_tile = loop_values(*t.stmt, "", ""), at_own = loop_values(*stmt, own.iter, lane.iter);
  if (!at_tile || !at_own) return nullptr;
  for (size_t d = 0; d < s.index.size(); ++d)
    if (s.index[d].substitute(*at_own) != reduced.index[d].substitute(*at_tile)) return nullptr;
  init_lane_ = own.iter;
  return stmt;
}

bool Tiler::sums_only_for_epilogue(int buffer) const {
  const Buffer& b = plan_.buffers.at(buffer);
  if (b.kind != BufferKind::temp || b.window_of >= 0) return false;
  for (const Kernel& k : plan_.kernels)
    if (&k != &kernel_ && std::find(k.buffers.begin(), k.buffers.end(), buffer) != k.buffers.end())
      return false;
  for (size_t i = 0; i < kernel_.statements.size(); ++i) {
    const Statement& s = kernel_.statements[i];
    if (static_cast<int>(i) == epilogue_->statement || !s.value) continue;
    std::vector<const ScalarExpr*> loads;
    collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      if (l->buffer == buffer) return false;
  }
  return true;
}

LoopNodePtr Tiler::with_epilogue(const LoopNodePtr& alloc, const LoopNode& row,
                                 const LoopNode& lane) {
  auto stmt = std::make_shared<LoopNode>(*epilogue_);
  for (AstExprPtr& a : stmt->args)
    if (a) a = substitute(a, epilogue_lane_, ast_iter(lane.iter));
  const AstExprPtr& lane_origin = alloc->tile_lane_origin;
  AstExprPtr lane_end = add(
      lane_origin, alloc->tile_lane_count ? alloc->tile_lane_count : ast_int(alloc->tile_lanes));
  LoopNodePtr nest = coincident_loop(lane.iter, lane_origin,
                                     ast_op("lt", {ast_iter(lane.iter), lane_end}), 1, {stmt});
  const AstExprPtr& row_origin = alloc->tile_row_origin;
  bool row_bound = row_origin->kind == AstExpr::Kind::iterator && row_origin->name == row.iter;
  AstExprPtr row_end =
      add(row_origin, alloc->tile_row_count ? alloc->tile_row_count : ast_int(alloc->tile_rows));
  if (!row_bound)  // a tile of several rows: its row loop; one row is the enclosing loop's
    nest = coincident_loop(row.iter, row_origin, ast_op("lt", {ast_iter(row.iter), row_end}), 1,
                           {nest});
  LoopNodePtr last = last_block_ ? make_guard(last_block_, nest) : nest;
  // A matrix-unit tile's sums reach its epilogue through a local copy where the buffer they
  // go to is read by nothing else: the unit stores them in L1 and the epilogue reads them
  // there (bf16 1024³ on a Sapphire Rapids core: 3.26–3.42 → 2.98–3.19 ms, the f32 sums' 4 MiB
  // no longer written and read back; docs/decisions.md).
  if (alloc->matrix && alloc->dot_bytes == 0 && last_block_ &&
      sums_only_for_epilogue(kernel_.statements.at(alloc->statement).buffer)) {
    auto inside = std::make_shared<LoopNode>(*alloc);
    inside->body.push_back(last);
    inside->sums_to_epilogue = true;
    return inside;
  }
  auto block = std::make_shared<LoopNode>();
  block->kind = LoopNode::Kind::block;
  block->body = {alloc, last};
  return block;
}

LoopNodePtr Tiler::wrap(const std::vector<LoopNodePtr>& loops, LoopNodePtr inner) {
  for (size_t a = loops.size(); a-- > 0;) {
    auto copy = std::make_shared<LoopNode>(*loops[a]);
    copy->body = {inner};
    inner = copy;
  }
  return inner;
}

bool Tiler::row_shared_constants(const TileNest& t, const LoopNode& row) const {
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  // Kept packs hold f32 or f64 (backends/packed_weights.h); others are filled at every call
  // and take row blocks like any pack.
  if (s.value->dtype != DType::f32 && s.value->dtype != DType::f64) return false;
  std::set<std::string> lanes = driven_iterators(*t.stmt, t.loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter);
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  bool any = false;
  for (const ScalarExpr* l : loads) {
    if (!uses_vars(*l, lanes) || uses_vars(*l, rows)) continue;
    const Buffer& b = plan_.buffers.at(l->buffer);
    if (b.kind != BufferKind::input || !b.constant) return false;
    any = true;
  }
  return any;
}

int64_t Tiler::transposed_fill(const TileNest& t, const LoopNode& row,
                               const std::vector<const LoopNode*>& loops) const {
  if (loops.size() != 2) return 0;
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  const bool f64 = s.value->dtype == DType::f64;
  if (!f64 && s.value->dtype != DType::f32 && s.value->dtype != DType::f16 &&
      s.value->dtype != DType::bf16)
    return 0;
  std::set<std::string> lanes = driven_iterators(*t.stmt, loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter),
                        ks = driven_iterators(*t.stmt, loops.front()->iter);
  if (ks.size() != 1) return 0;
  const std::string& k = *ks.begin();
  // The statement iterator is the k loop's iterator itself (not an expression of it).
  for (size_t i = 0; i < t.stmt->args.size(); ++i)
    if (iterator_name(static_cast<int>(i)) == k &&
        !(t.stmt->args[i] && t.stmt->args[i]->kind == AstExpr::Kind::iterator &&
          t.stmt->args[i]->name == loops.front()->iter))
      return 0;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  int packed = 0;
  for (const ScalarExpr* l : loads) {
    if (!uses_vars(*l, lanes) || uses_vars(*l, rows)) continue;
    if (!l->mask.empty() || l->index.empty()) return 0;
    const DType d = l->dtype;
    if (f64 ? d != DType::f64 : (d != DType::f32 && d != DType::f16 && d != DType::bf16)) return 0;
    for (size_t i = 0; i + 1 < l->index.size(); ++i)
      if (affine_coefficient(l->index[i], k) != std::optional<int64_t>(0)) return 0;
    if (affine_coefficient(l->index.back(), k) != std::optional<int64_t>(1)) return 0;
    for (const std::string& v : lanes)
      if (affine_coefficient(l->index.back(), v) != std::optional<int64_t>(0)) return 0;
    ++packed;
  }
  return packed > 0 ? shape_.vector_bytes / (f64 ? 8 : 4) : 0;
}

bool Tiler::lanes_contiguous(const TileNest& t, const LoopNode& row) const {
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  std::set<std::string> lanes = driven_iterators(*t.stmt, t.loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter);
  if (lanes.size() != 1) return false;
  const std::string& l = *lanes.begin();
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* e : loads) {
    if (!uses_vars(*e, lanes) || uses_vars(*e, rows)) continue;
    if (!e->mask.empty() || e->index.empty()) return false;
    for (size_t i = 0; i + 1 < e->index.size(); ++i)
      if (affine_coefficient(e->index[i], l) != std::optional<int64_t>(0)) return false;
    if (affine_coefficient(e->index.back(), l) != std::optional<int64_t>(1)) return false;
  }
  return true;
}

std::vector<const ScalarExpr*> Tiler::row_operands(const TileNest& t, const LoopNode& row,
                                                   const LoopNode& k) const {
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  std::set<std::string> lanes = driven_iterators(*t.stmt, t.loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter),
                        ks = driven_iterators(*t.stmt, k.iter);
  std::vector<const ScalarExpr*> loads, out;
  if (ks.size() != 1) return out;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    if (uses_vars(*l, rows) && uses_vars(*l, ks) && !uses_vars(*l, lanes)) out.push_back(l);
  return out;
}

bool Tiler::contiguous_along_k(const ScalarExpr& load, const TileNest& t, const LoopNode& k) const {
  std::set<std::string> ks = driven_iterators(*t.stmt, k.iter);
  return ks.size() == 1 &&
         unit_stride(load.index, plan_.buffers.at(load.buffer).shape, *ks.begin());
}

bool Tiler::packs_rows(const TileNest& t, const LoopNode& row,
                       const std::vector<const LoopNode*>& loops) const {
  if (!shape_.pack_rows) return false;
  for (const ScalarExpr* l : row_operands(t, row, *loops.front())) {
    const DType d = plan_.buffers.at(l->buffer).dtype;
    if (d == DType::f16 || d == DType::bf16 || !contiguous_along_k(*l, t, *loops.front()))
      return true;
  }
  return false;
}

LoopNodePtr Tiler::row_pack(const LoopNode& row, const TileNest& t,
                            const std::vector<const LoopNode*>& loops, const std::string& row_t,
                            int64_t rows, LoopNodePtr tiles) {
  const LoopNode& k = *loops.front();  // the k loop of one block
  auto p = std::make_shared<LoopNode>();
  p->kind = LoopNode::Kind::alloc;
  p->space = MemorySpace::local;
  p->statement = t.stmt->statement;
  p->name = "pack" + std::to_string(packs_++);
  p->tile_row = row.iter;
  p->tile_lane = t.loops.back()->iter;
  p->tile_rows = rows;
  p->tile_row_origin = ast_iter(row_t);
  if (rows > 1)
    p->tile_row_count = ast_op("min", {ast_int(rows), sub(upper(row), ast_iter(row_t))});
  p->pack_depth = shape_.depth;
  p->pack_iter = k.iter;
  p->pack_origin = k.init;
  // The fill reads along k where the first row operand lies along k (x[i, k]), else along the
  // rows (a[k, i]): each instance copies one element of each row operand.
  std::vector<const ScalarExpr*> operands = row_operands(t, row, k);
  const bool k_inner = operands.empty() || contiguous_along_k(*operands.front(), t, k);
  LoopNodePtr k_loop = std::make_shared<LoopNode>(k);
  LoopNodePtr row_loop = restricted(row, ast_iter(row_t), rows);
  p->body = {k_inner ? nest({row_loop, k_loop}, *t.stmt) : nest({k_loop, row_loop}, *t.stmt),
             std::move(tiles)};
  return p;
}

int Tiler::shared_operands(const TileNest& t, const LoopNode& row) const {
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  std::set<std::string> lanes = driven_iterators(*t.stmt, t.loops.back()->iter),
                        rows = driven_iterators(*t.stmt, row.iter);
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  int n = 0;
  for (const ScalarExpr* l : loads)
    n += uses_vars(*l, lanes) && !uses_vars(*l, rows);
  return n;
}

LoopNodePtr Tiler::blocked(const LoopNode& row, const TileNest& t) {
  const LoopNode& lane = *t.loops.back();
  const LoopNode& outer = *t.loops.front();
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  const bool matrix = t.loops.size() == 2 && matrix_operands(t, row).has_value();
  const int64_t depth = matrix ? shape_.matrix_depth : shape_.depth;
  const int64_t vector = shape_.vector_bytes / (dtype_bits(plan_.buffers.at(s.buffer).dtype) / 8);
  const std::string outer_t = outer.iter + "t";
  last_block_ = ast_op("ge", {add(ast_iter(outer_t), ast_int(depth)), upper(outer)});
  first_block_ = ast_op("eq", {ast_iter(outer_t), outer.init});

  // The outer reduction loop over one block.
  std::vector<const LoopNode*> loops = t.loops;
  auto in_block = std::make_shared<LoopNode>(outer);
  in_block->init = ast_iter(outer_t);
  in_block->cond =
      ast_op("lt", {ast_iter(outer.iter),
                    ast_op("min", {add(ast_iter(outer_t), ast_int(depth)), upper(outer)})});
  loops.front() = in_block.get();

  auto block = std::make_shared<LoopNode>(outer);
  block->iter = outer_t;
  block->cond = ast_op("lt", {ast_iter(outer_t), upper(outer)});
  block->step = depth;
  block->tile = true;
  const int64_t width = shape_.vectors * vector;
  const int64_t kv = along_k(t, row);
  if (matrix) return matrix_blocked(row, t, loops, block, kv);
  if (loops.size() == 2 && shared_operands(t, row) > 0) {
    // BLIS's order (file comment): lane blocks of `lanes` lanes, b's panel packed per k block
    // for all of a block's lane tiles, the row tiles sweeping them.
    const Statement& st = kernel_.statements.at(t.stmt->statement);
    const int64_t element = st.value->dtype == DType::f64 ? 8 : 4;  // f16, bf16 pack as f32
    const int64_t lanes =
        std::max<int64_t>(1, shape_.block_bytes / (depth * element * width)) * width;
    const std::string lane_c = lane.iter + "c";
    // Lane blocks by row blocks, each with its own packs, run across threads: no pack is
    // shared, and there are pairs enough for the threads whether the rows are few (decode)
    // or the lanes (a narrow output). A const weight's panels are packed once and kept
    // (backends/packed_weights.h): the rows are one block there, so that one thread fills
    // each lane block's part of the workspace.
    const bool weights = row_shared_constants(t, row);
    const std::string row_c = weights ? "" : row.iter + "c";
    const int64_t rows = shape_.rows * shape_.block_row_tiles;
    block->body = {lane_block(row, t, loops, lane_c, lanes, row_c, rows, width, false),
                   lane_block(row, t, loops, lane_c, lanes, row_c, rows, vector, true)};
    LoopNodePtr inner = block;
    if (!weights) {
      auto row_blocks = std::make_shared<LoopNode>(row);
      row_blocks->iter = row_c;
      row_blocks->cond = ast_op("lt", {ast_iter(row_c), upper(row)});
      row_blocks->step = rows;
      row_blocks->tile = true;
      row_blocks->body = {kv > 0 ? or_along_k(row, t, kv, lane_c, lanes, row_c, block)
                                 : LoopNodePtr(block)};
      inner = row_blocks;
    }
    auto blocks = std::make_shared<LoopNode>(*coincident_loop(
        lane_c, lane.init, ast_op("lt", {ast_iter(lane_c), upper(lane)}), lanes, {inner}));
    blocks->tile = true;
    return blocks;
  }
  std::vector<LoopNodePtr> body;
  body.push_back(lane_tiles(row, t, loops, lane.init, width, false));
  // The lanes past the last full-width tile (fewer than `width`) in one masked tile of as many
  // vectors as they need (docs/decisions.md, "The lanes left in one tile of the vectors they
  // need"): a tile of v vectors runs 6v FMAs a k step, where v tiles of one vector each wait
  // on their FMAs' latency and broadcast every row operand v times.
  AstExprPtr rest = after_tiles(lane.init, upper(lane), width);
  AstExprPtr left = sub(upper(lane), rest);
  for (int64_t v = 1; v <= shape_.vectors; ++v) {
    AstExprPtr fits = ast_op("le", {left, ast_int(v * vector)});
    AstExprPtr cond = ast_op("and", {ast_op("gt", {left, ast_int((v - 1) * vector)}), fits});
    body.push_back(make_guard(cond, lane_tiles(row, t, loops, rest, v * vector, true)));
  }
  block->body = std::move(body);
  return block;
}

LoopNodePtr Tiler::lane_block(const LoopNode& row, const TileNest& t,
                              const std::vector<const LoopNode*>& loops, const std::string& lane_c,
                              int64_t block, const std::string& row_c, int64_t block_rows,
                              int64_t lanes, bool partial) {
  const LoopNode& lane = *t.loops.back();
  const int64_t rows = shape_.rows;
  const std::string row_t = row.iter + "t", lane_t = lane.iter + "t";
  AstExprPtr first = ast_iter(lane_c), end = upper(lane);
  if (partial) {
    first = ast_op("max", {first, after_tiles(lane.init, upper(lane), shape_.vectors * lanes)});
  } else {
    end = sub(end, ast_int(lanes - 1));
  }
  end = ast_op("min", {add(ast_iter(lane_c), ast_int(block)), end});
  auto lane_loop = [&](LoopNodePtr body) {
    return coincident_loop(lane_t, first, ast_op("lt", {ast_iter(lane_t), end}), lanes, {body});
  };
  // The row tiles' lane tiles stop where no lane is read any more (Statement::needed); the
  // pack still fills the block's every tile.
  const Statement& st = kernel_.statements.at(t.stmt->statement);
  auto tile_lanes = [&](LoopNodePtr body, int64_t n) {
    AstExprPtr read_end =
        needed_lane_end(st, *t.stmt, t.loops, row.iter, row_t, n, plan_.size_vars);
    AstExprPtr stop = read_end ? ast_op("min", {end, read_end}) : end;
    return coincident_loop(lane_t, first, ast_op("lt", {ast_iter(lane_t), stop}), lanes, {body});
  };
  // The row tiles of the block, each of n rows (the last with the rows left).
  auto make_row_tiles = [&](int64_t n) {
    auto row_tiles = std::make_shared<LoopNode>(row);
    row_tiles->iter = row_t;
    row_tiles->cond = ast_op("lt", {ast_iter(row_t), upper(row)});
    if (!row_c.empty()) {  // a row block's tiles
      row_tiles->init = ast_iter(row_c);
      row_tiles->cond =
          ast_op("lt", {ast_iter(row_t),
                        ast_op("min", {add(ast_iter(row_c), ast_int(block_rows)), upper(row)})});
    }
    row_tiles->step = n;
    LoopNodePtr tiles = tile_lanes(
        tile_alloc(row, t, loops, lanes, partial, n, row_t,
                   n > 1 ? ast_op("min", {ast_int(n), sub(upper(row), ast_iter(row_t))}) : nullptr),
        n);
    row_tiles->body = {packs_rows(t, row, loops) ? row_pack(row, t, loops, row_t, n, tiles)
                                                 : tiles};
    row_tiles->mapping = Mapping::serial;
    return row_tiles;
  };
  auto row_tiles = make_row_tiles(rows);
  auto pack = std::make_shared<LoopNode>();
  pack->kind = LoopNode::Kind::alloc;
  pack->space = MemorySpace::local;
  pack->statement = t.stmt->statement;
  pack->name = "pack" + std::to_string(packs_++);
  pack->tile_row = row.iter;
  pack->tile_lane = lane.iter;
  pack->tile_lanes = lanes;
  pack->tile_lane_origin = ast_iter(lane_t);
  if (partial) pack->tile_lane_count = remaining(lane, lane_t, lanes);
  pack->pack_depth = shape_.depth;
  pack->pack_iter = loops.front()->iter;
  pack->pack_origin = loops.front()->init;
  pack->pack_lane_base = first;
  // The lane tiles it holds: a block's worth, or for the lanes left fewer than a full tile's.
  pack->pack_lanes = partial ? shape_.vectors * lanes : block;
  // The fill: per lane tile, the k loop of the block around the statement, its lane loop out.
  // Operands that lie along k in memory (w[j, k] of x · wᵀ) fill whole vectors of k rows,
  // transposed in registers, and the k left one row at a time: lane by lane each k row would
  // gather a vector from as many rows of w (1.7 ns an element on a Zen 5 core, 12 times the
  // contiguous fill).
  LoopNodePtr fill = rebuild_nest(loops, *t.stmt, 1, nullptr);
  if (const int64_t k_rows = partial ? 0 : transposed_fill(t, row, loops); k_rows > 0) {
    const LoopNode& k = *loops.front();
    const AstExprPtr k_end = k.cond->args.at(1);
    auto whole = std::make_shared<LoopNode>(*fill);
    whole->cond = ast_op("lt", {ast_iter(k.iter), sub(k_end, ast_int(k_rows - 1))});
    whole->step = k_rows;
    auto stmt = std::make_shared<LoopNode>(*t.stmt);
    stmt->fill_k = k_rows;
    whole->body = {stmt};
    auto rest = std::make_shared<LoopNode>(*fill);
    rest->init = add(k.init, ast_op("mul", {ast_op("pdiv_q", {sub(k_end, k.init), ast_int(k_rows)}),
                                            ast_int(k_rows)}));
    auto both = std::make_shared<LoopNode>();
    both->body = {whole, rest};
    fill = both;
  }
  pack->body = {lane_loop(fill), row_tiles};
  // Most blocks have no lanes left past their full tiles: skip the pack there, and with it
  // the start of its parallel loops.
  if (partial) return make_guard(ast_op("lt", {first, end}), pack);
  // A row block of few row tiles (a decode step's rows) reads each element of the panel a
  // few times only: its tiles read operands that lie along the lanes where they are, and the
  // pack's write and read again cost more than they save (RegisterTileShape::direct_row_tiles).
  // Operands that are not contiguous along the lanes keep the pack (each tile's vector would
  // be gathered otherwise).
  if (const int64_t few = rows * shape_.direct_row_tiles;
      few > 0 && !row_c.empty() && lanes_contiguous(t, row)) {
    AstExprPtr left = sub(upper(row), ast_iter(row_c));
    auto both = std::make_shared<LoopNode>();
    // Read in place, the lane operand's k rows lie a row of b apart (a new page every k
    // at N ≥ 1024 f32): the tiles fetch them ahead (RegisterTileShape::prefetch_k).
    prefetch_lanes_ = shape_.prefetch_k > 0;
    LoopNodePtr direct = make_row_tiles(rows);
    // A block of one row (a decode step) runs tiles of one row: a full tile would multiply
    // rows - 1 copies of it for nothing (f32 M = 1, N = K = 4096: 3.8-4.2 ms against 3.0-3.3
    // with MICRO's rows at 1).
    LoopNodePtr single = rows > 1 ? make_row_tiles(1) : nullptr;
    prefetch_lanes_ = false;
    if (single) {
      both->body = {make_guard(ast_op("eq", {left, ast_int(1)}), single),
                    make_guard(ast_op("and", {ast_op("gt", {left, ast_int(1)}),
                                              ast_op("le", {left, ast_int(few)})}),
                               direct)};
    } else {
      both->body = {make_guard(ast_op("le", {left, ast_int(few)}), direct)};
    }
    both->body.push_back(make_guard(ast_op("gt", {left, ast_int(few)}), pack));
    return both;
  }
  return pack;
}

LoopNodePtr Tiler::tile_alloc(const LoopNode& row, const TileNest& t,
                              const std::vector<const LoopNode*>& loops, int64_t lanes,
                              bool partial, int64_t n, const std::string& origin,
                              const AstExprPtr& count) {
  const LoopNode& lane = *t.loops.back();
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  const std::string lane_t = lane.iter + "t";
  auto alloc = std::make_shared<LoopNode>();
  alloc->kind = LoopNode::Kind::alloc;
  alloc->space = MemorySpace::local;
  alloc->statement = t.stmt->statement;
  alloc->name = "tile" + std::to_string(count_++);
  alloc->tile_rows = n;
  alloc->tile_lanes = lanes;
  alloc->tile_row = row.iter;
  alloc->tile_lane = lane.iter;
  alloc->tile_row_origin = ast_iter(origin);
  alloc->tile_row_count = count;
  alloc->tile_lane_origin = ast_iter(lane_t);
  if (partial) alloc->tile_lane_count = remaining(lane, lane_t, lanes);
  alloc->matrix = matrix_;
  alloc->dot_bytes = dot_bytes_;
  alloc->dot_signs = dot_signs_;
  if (init_) {
    alloc->tile_fresh = first_block_;
    alloc->tile_init = init_->statement;
    for (const AstExprPtr& a : init_->args)
      alloc->tile_init_args.push_back(a ? substitute(a, init_lane_, ast_iter(lane.iter)) : a);
  }
  // The element's index uses only the row and lane iterators.
  std::set<std::string> used;
  for (const IntExpr& e : s.index)
    e.collect_vars(used);
  alloc->args.resize(t.stmt->args.size());
  for (size_t a = 0; a < alloc->args.size(); ++a)
    if (used.count(iterator_name(static_cast<int>(a)))) alloc->args[a] = t.stmt->args[a];
  alloc->body = {rebuild_nest(loops, *t.stmt, static_cast<int>(loops.size()) - 1, nullptr)};
  if (LoopNodePtr narrow =
          narrowed_to_rows(s, *t.stmt, *alloc->body[0], row.iter, origin, n, plan_.size_vars))
    alloc->body[0] = narrow;
  if (prefetch_lanes_) prefetch_lane_rows(*alloc, row, t, loops, origin, lanes);
  return epilogue_ ? with_epilogue(alloc, row, lane) : LoopNodePtr(alloc);
}

void Tiler::prefetch_lane_rows(LoopNode& tile, const LoopNode& row, const TileNest& t,
                               const std::vector<const LoopNode*>& loops, const std::string& origin,
                               int64_t lanes) {
  const LoopNode& k = *loops.front();
  const LoopNode& lane = *t.loops.back();
  if (tile.body.empty()) return;
  const Statement& s = kernel_.statements.at(t.stmt->statement);
  std::set<std::string> ls = driven_iterators(*t.stmt, lane.iter),
                        rs = driven_iterators(*t.stmt, row.iter);
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  int64_t bytes = 0;
  std::vector<int> buffers;
  for (const ScalarExpr* l : loads)
    if (uses_vars(*l, ls) && !uses_vars(*l, rs)) {
      bytes = std::max<int64_t>(bytes, dtype_bits(plan_.buffers.at(l->buffer).dtype) / 8);
      if (std::find(buffers.begin(), buffers.end(), l->buffer) == buffers.end())
        buffers.push_back(l->buffer);
    }
  if (bytes == 0) return;
  // One prefetch per cache line of the tile's lanes, prefetch_k k rows ahead (the last k row
  // past the end: no address outside the operand).
  const int64_t per_line = std::max<int64_t>(1, 64 / bytes);
  AstExprPtr ahead = ast_op("min", {add(ast_iter(k.iter), ast_int(shape_.prefetch_k)),
                                    sub(upper(*t.loops.front()), ast_int(1))});
  std::vector<LoopNodePtr> fetches;
  for (int64_t at = 0; at < lanes; at += per_line) {
    auto f = std::make_shared<LoopNode>();
    f->kind = LoopNode::Kind::prefetch;
    f->statement = t.stmt->statement;
    f->prefetch_buffers = buffers;
    AstExprPtr l = add(ast_iter(lane.iter + "t"), ast_int(at));
    for (const AstExprPtr& a : t.stmt->args)
      f->args.push_back(
          a ? substitute(substitute(substitute(a, row.iter, ast_iter(origin)), lane.iter, l),
                         k.iter, ahead)
            : a);
    fetches.push_back(f);
  }
  // A copy of the tile's loops down to its k loop (the reduction over one block), the
  // prefetches at the front of that loop's body.
  std::function<LoopNodePtr(const LoopNodePtr&)> with = [&](const LoopNodePtr& n) -> LoopNodePtr {
    if (n->kind != LoopNode::Kind::loop) return nullptr;
    auto copy = std::make_shared<LoopNode>(*n);
    if (n->iter == k.iter) {
      copy->body.insert(copy->body.begin(), fetches.begin(), fetches.end());
      return copy;
    }
    if (n->body.size() != 1) return nullptr;
    LoopNodePtr inner = with(n->body[0]);
    if (!inner) return nullptr;
    copy->body = {inner};
    return copy;
  };
  if (LoopNodePtr b = with(tile.body[0])) tile.body[0] = b;
}

LoopNodePtr Tiler::lane_tiles(const LoopNode& row, const TileNest& t,
                              const std::vector<const LoopNode*>& loops, const AstExprPtr& start,
                              int64_t lanes, bool partial) {
  const LoopNode& lane = *t.loops.back();
  const int64_t rows = shape_.rows;
  const std::string row_t = row.iter + "t", lane_t = lane.iter + "t";

  // Tiles of `rows` rows, the last one holding the rows left (min(rows, end - it) of them):
  // one copy of the reduction for every row count, where a tile of one row for each row
  // past the last full tile would be a second (issue 28's cold compile). A missing row costs
  // its FMAs on the last row's operands in that one tile.
  auto row_tiles = std::make_shared<LoopNode>(row);
  row_tiles->iter = row_t;
  row_tiles->cond = ast_op("lt", {ast_iter(row_t), upper(row)});
  row_tiles->step = rows;
  row_tiles->body = {tile_alloc(
      row, t, loops, lanes, partial, rows, row_t,
      rows > 1 ? ast_op("min", {ast_int(rows), sub(upper(row), ast_iter(row_t))}) : nullptr)};
  row_tiles->mapping = Mapping::serial;
  AstExprPtr last = partial ? upper(lane) : sub(upper(lane), ast_int(lanes - 1));
  return coincident_loop(lane_t, start, ast_op("lt", {ast_iter(lane_t), last}), lanes, {row_tiles});
}

}  // namespace kiln::register_tiling

namespace kiln {

int register_tile(const KernelPlan& plan, const Kernel& k, LoopNest& nest,
                  const RegisterTileShape& shape) {
  if (!nest.root || shape.rows <= 0 || shape.vectors <= 0) return 0;
  register_tiling::Tiler t(plan, k, shape);
  nest.root = t.visit(nest.root);
  return t.count();
}

}  // namespace kiln
