#include "scheduler/register_tile.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "scheduler/isl_text.h"
#include "scheduler/loop_algebra.h"
#include "scheduler/map_loops.h"
#include "scheduler/tile_bounds.h"

namespace kiln {

namespace {

/** A reduction nest register_tile can tile inside row loop `row`: its loops outermost first
 *  (the reduction loops, then the lane loop) and its statement node. */
struct TileNest {
  std::vector<const LoopNode*> loops;
  const LoopNode* stmt = nullptr;
};

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

/** The lanes a partial tile of `lanes` at `lane_t` holds: min(lanes, end - lane_t). */
AstExprPtr remaining(const LoopNode& lane, const std::string& lane_t, int64_t lanes) {
  return ast_op("min", {ast_int(lanes), sub(upper(lane), ast_iter(lane_t))});
}

class Tiler {
 public:
  Tiler(const KernelPlan& plan, const Kernel& k, const RegisterTileShape& shape)
      : plan_(plan), kernel_(k), shape_(shape) {}

  LoopNodePtr visit(const LoopNodePtr& n) {
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

  int count() const { return count_; }

 private:
  /** The band from `top` down: `top` and the loops perfectly nested in it that are coincident,
   *  canonical, of step 1 and rectangular (bounds free of the band's iterators), outermost
   *  first, with the reduction nests inside it register-tiled along the row loop that shares
   *  most operands; null when there is none. */
  LoopNodePtr tile(const LoopNodePtr& top) {
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

  /** The statement node of `next`, the nest after reduction nest `t` in the row loop, when the
   *  tiles of `t` can run it as their epilogue: one loop with the bounds of t's lane loop around
   *  an assignment that reads t's buffer only at the element t writes (unmasked), does not read
   *  the buffer it writes, writes one element per instance, and writes nothing t reads. Each
   *  element's instance then runs once, after its tile's last block, reading the final sum; it
   *  moves past no other write of what it reads. Null otherwise. */
  const LoopNode* epilogue(const TileNest& t, const LoopNodePtr& next) {
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

  /** The statement node of `prev`, the nest before reduction nest `t` in the row loop, when it
   *  is t's init: one loop with the bounds of t's lane loop around the reduce_init of t's buffer
   *  (a sum: 0) at the element t updates. The tiles then run it on their elements in their
   *  first block instead of loading what it stored: every element it sets is one of theirs, and
   *  nothing runs in between. Null otherwise. */
  const LoopNode* init_of(const TileNest& t, const LoopNode& prev) {
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

  /** Tile `alloc` followed by the epilogue over its elements, in the last block only. */
  LoopNodePtr with_epilogue(const LoopNodePtr& alloc, const LoopNode& row, const LoopNode& lane) {
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
    auto block = std::make_shared<LoopNode>();
    block->kind = LoopNode::Kind::block;
    block->body = {alloc, last_block_ ? make_guard(last_block_, nest) : nest};
    return block;
  }

  /** Whether 8-bit products run on a matrix tile: on the matrix unit (AMX-INT8) or on VNNI
   *  vectors. */
  bool int8() const { return shape_.amx_int8 || shape_.dot_bytes > 0; }
  /** Whether bf16 products run on a matrix tile: on the matrix unit (AMX-BF16) or on vectors
   *  with bf16 pair dot products. */
  bool bf16() const { return shape_.amx_bf16 || shape_.bf16_dot_bytes > 0; }

  /** The bytes of the vectors statement `s`'s matrix tiles run on, 0 for the matrix unit: 8-bit
   *  products summing in i32 on a target with VNNI (or vpmaddwd) and no AMX-INT8, bf16
   *  products summing in f32 on one with AVX512-BF16 and no AMX-BF16. */
  int dot(const Statement& s) const {
    return plan_.buffers.at(s.buffer).dtype == DType::i32
               ? (shape_.amx_int8 ? 0 : shape_.dot_bytes)
               : (shape_.amx_bf16 ? 0 : shape_.bf16_dot_bytes);
  }

  static bool candidate(const LoopNode& n) {
    return n.kind == LoopNode::Kind::loop && n.coincident && n.step == 1 && canonical_loop(n);
  }

  /** Copies of `loops` nested in order around `inner`. */
  static LoopNodePtr wrap(const std::vector<LoopNodePtr>& loops, LoopNodePtr inner) {
    for (size_t a = loops.size(); a-- > 0;) {
      auto copy = std::make_shared<LoopNode>(*loops[a]);
      copy->body = {inner};
      inner = copy;
    }
    return inner;
  }

  /** Whether every load of `t`'s statement that moves along the lanes but not along row loop
   *  `row` (what its pack holds) reads a const input: the renderer keeps such packs. */
  bool row_shared_constants(const TileNest& t, const LoopNode& row) const {
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

  /** The vector lanes of the pack of `t`'s one-loop reduction (`loops`: its k loop, then its
   *  lane loop) when every operand the pack holds (a load that moves along the lanes, not along
   *  row loop `row`) lies contiguous along k and not along the lanes, unmasked and of a float
   *  type the pack holds: its fill then reads vectors along k and transposes them; else 0. */
  int64_t transposed_fill(const TileNest& t, const LoopNode& row,
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
      if (f64 ? d != DType::f64 : (d != DType::f32 && d != DType::f16 && d != DType::bf16))
        return 0;
      for (size_t i = 0; i + 1 < l->index.size(); ++i)
        if (affine_coefficient(l->index[i], k) != std::optional<int64_t>(0)) return 0;
      if (affine_coefficient(l->index.back(), k) != std::optional<int64_t>(1)) return 0;
      for (const std::string& v : lanes)
        if (affine_coefficient(l->index.back(), v) != std::optional<int64_t>(0)) return 0;
      ++packed;
    }
    return packed > 0 ? shape_.vector_bytes / (f64 ? 8 : 4) : 0;
  }

  /** Whether every load of `t`'s statement that moves along the lanes but not along row loop
   *  `row` reads its lanes as neighbours in memory (its last index the lane iterator plus what
   *  does not move with it): a register tile's vector loads take them as they are. */
  bool lanes_contiguous(const TileNest& t, const LoopNode& row) const {
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

  /** The vector lanes of the dot-product form of `t`'s one-loop reduction inside row loop
   *  `row` (file comment), 0 where it does not apply. It applies where a lane operand (a load
   *  that moves along the lanes, not along the rows) lies along k and not along the lanes, so
   *  that a pack would transpose it; every load that moves along k lies contiguous along it,
   *  unmasked; the value computes across vector lanes along k (tileable_statement with k as
   *  the lanes, the sum f32 or f64); and no bound narrows the tile's rows or lanes. Decided
   *  from the access relations alone: any contraction whose operands lie along k takes it. */
  int64_t along_k(const TileNest& t, const LoopNode& row) const {
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
    if (needed_lane_end(s, *t.stmt, t.loops, row.iter, row_t, shape_.along_k_rows,
                        plan_.size_vars) ||
        narrowed_to_rows(s, *t.stmt, k, row.iter, row_t, shape_.along_k_rows, plan_.size_vars))
      return 0;
    return shape_.vector_bytes / (sum == DType::f64 ? 8 : 4);
  }

  /** Row block `row_c` (of `block_rows` rows) of lane block `lane_c` (of `block_lanes` lanes):
   *  `packed`, its k blocks, where it has more than along_k_rows rows; else, where k is not
   *  empty, the dot-product form of `t` over the whole of k with vectors of `kv` k (file
   *  comment). */
  LoopNodePtr or_along_k(const LoopNode& row, const TileNest& t, int64_t kv,
                         const std::string& lane_c, int64_t block_lanes, const std::string& row_c,
                         LoopNodePtr packed) {
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
    rest->init =
        add(k.init,
            ast_op("mul", {ast_op("pdiv_q", {sub(upper(k), k.init), ast_int(kv)}), ast_int(kv)}));
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

  /** How many loads of `t`'s statement move along the lanes but not along row loop `row`. */
  int shared_operands(const TileNest& t, const LoopNode& row) const {
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

  /** Reduction nest `t` inside row loop `row`, in blocks of `depth` iterations of its outer
   *  reduction loop. In each block: the lane tiles of the full width, then masked tiles of one
   *  vector for the lanes left, each holding the row tiles (register tiles, the last of them
   *  with the rows left). */
  LoopNodePtr blocked(const LoopNode& row, const TileNest& t) {
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
    body.push_back(lane_tiles(row, t, loops, lane.init, shape_.vectors * vector, false));
    // The lanes past the last full-width tile, a vector at a time, masked: min(vector, end - jt)
    // lanes each. One tile shape for every remainder: a tile of whole vectors beside a partial
    // one would be a third and fourth copy of the reduction for C to compile (issue 28's cold
    // compile), and the mask costs only the tile's loads and stores outside the reduction.
    body.push_back(lane_tiles(
        row, t, loops, after_tiles(lane.init, upper(lane), shape_.vectors * vector), vector, true));
    block->body = std::move(body);
    return block;
  }

  /** The loads a and b of `t`'s update `acc += a * b` (either order) when the matrix unit can
   *  run it: the sum is f32, a and b load bf16 buffers (no gather), a moves along row loop
   *  `row` and not the lanes, b along the lanes and not the rows. */
  std::optional<std::pair<const ScalarExpr*, const ScalarExpr*>> matrix_operands(
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

  /** Copies of `loops` (outermost first) nested around a copy of stmt node `stmt`. */
  static LoopNodePtr nest(const std::vector<LoopNodePtr>& loops, const LoopNode& stmt) {
    return wrap(loops, std::make_shared<LoopNode>(stmt));
  }

  /** `loop` restricted to [from, min(from + n, its end)) with step 1. */
  static LoopNodePtr restricted(const LoopNode& loop, const AstExprPtr& from, int64_t n) {
    auto copy = std::make_shared<LoopNode>(loop);
    copy->init = from;
    copy->cond =
        ast_op("lt", {ast_iter(loop.iter), ast_op("min", {add(from, ast_int(n)), upper(loop)})});
    copy->step = 1;
    copy->tile = false;
    copy->mapping = Mapping::serial;
    return copy;
  }

  /** Nest `t` on the matrix unit (file comment): lane blocks by row blocks around `block`, the
   *  k blocks, each packing b's block in bf16 k pairs, then per row tile a's rows, then the
   *  32 × 32 matrix tiles of the row tile. On VNNI vectors (dot) the same nest with tiles of
   *  dot_rows rows by dot_vectors vectors, b's block in quads of k. */
  LoopNodePtr matrix_blocked(const LoopNode& row, const TileNest& t,
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
    LoopNodePtr tiles = coincident_loop(
        lane_t, ast_iter(lane_c), ast_op("lt", {ast_iter(lane_t), lane_end}), nl,
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

  /** The tiles of `lanes` lanes (masked, a vector at a time, when `partial`: the lanes past the
   *  last full tile) in the lane block of `block` lanes from iterator `lane_c`, for one k block:
   *  a pack of b's panel for all of them, filled lane tile by lane tile, then the row tiles,
   *  each sweeping the lane tiles. */
  LoopNodePtr lane_block(const LoopNode& row, const TileNest& t,
                         const std::vector<const LoopNode*>& loops, const std::string& lane_c,
                         int64_t block, const std::string& row_c, int64_t block_rows, int64_t lanes,
                         bool partial) {
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
    AstExprPtr read_end =
        needed_lane_end(st, *t.stmt, t.loops, row.iter, row_t, rows, plan_.size_vars);
    auto tile_lanes = [&](LoopNodePtr body) {
      AstExprPtr stop = read_end ? ast_op("min", {end, read_end}) : end;
      return coincident_loop(lane_t, first, ast_op("lt", {ast_iter(lane_t), stop}), lanes, {body});
    };
    auto make_row_tiles = [&] {
      auto row_tiles = std::make_shared<LoopNode>(row);
      row_tiles->iter = row_t;
      row_tiles->cond = ast_op("lt", {ast_iter(row_t), upper(row)});
      if (!row_c.empty()) {  // a row block's tiles
        row_tiles->init = ast_iter(row_c);
        row_tiles->cond =
            ast_op("lt", {ast_iter(row_t),
                          ast_op("min", {add(ast_iter(row_c), ast_int(block_rows)), upper(row)})});
      }
      row_tiles->step = rows;
      row_tiles->body = {tile_lanes(tile_alloc(
          row, t, loops, lanes, partial, rows, row_t,
          rows > 1 ? ast_op("min", {ast_int(rows), sub(upper(row), ast_iter(row_t))}) : nullptr))};
      row_tiles->mapping = Mapping::serial;
      return row_tiles;
    };
    auto row_tiles = make_row_tiles();
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
      rest->init =
          add(k.init, ast_op("mul", {ast_op("pdiv_q", {sub(k_end, k.init), ast_int(k_rows)}),
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
      both->body = {make_guard(ast_op("le", {left, ast_int(few)}), make_row_tiles()),
                    make_guard(ast_op("gt", {left, ast_int(few)}), pack)};
      return both;
    }
    return pack;
  }

  /** A register tile of `n` rows from row `origin` (`count` of them existing, all when null) by
   *  `lanes` lanes from the lane tile loop's iterator (min(lanes, end - jt) of them when
   *  `partial`), for nest `t` whose loops are `loops` (the outer reduction loop over one block). */
  LoopNodePtr tile_alloc(const LoopNode& row, const TileNest& t,
                         const std::vector<const LoopNode*>& loops, int64_t lanes, bool partial,
                         int64_t n, const std::string& origin, const AstExprPtr& count) {
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
    return epilogue_ ? with_epilogue(alloc, row, lane) : LoopNodePtr(alloc);
  }

  /** `for (jt = start; jt < end - (lanes - 1); jt += lanes)` over the register tiles of
   *  `rows` x `lanes` along row loop `row` (the last with the rows left), for nest `t` whose
   *  loops are `loops` (the outer reduction loop over one block). A `partial` tile is masked:
   *  `for (jt = start; jt < end; jt += lanes)`, its tiles hold min(lanes, end - jt) lanes.
   *  For nests whose rows share no packed operand (lane_block packs the others). */
  LoopNodePtr lane_tiles(const LoopNode& row, const TileNest& t,
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
    return coincident_loop(lane_t, start, ast_op("lt", {ast_iter(lane_t), last}), lanes,
                           {row_tiles});
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  RegisterTileShape shape_;
  int count_ = 0, packs_ = 0;
  bool matrix_ = false;  ///< tile_alloc makes matrix-unit tiles
  int dot_bytes_ = 0;    ///< ... on vectors of this many bytes when > 0 (LoopNode::dot_bytes)
  DotSigns dot_signs_ = DotSigns::unsigned_signed;  ///< ... with these operand signs
  const LoopNode* epilogue_ = nullptr;  ///< the epilogue of the nest being blocked, or null
  std::string epilogue_lane_;           ///< its lane loop's iterator
  AstExprPtr last_block_;               ///< true in the last block of the nest being blocked
  AstExprPtr first_block_;              ///< true in its first block
  const LoopNode* init_ = nullptr;      ///< the init folded into its tiles, or null
  std::string init_lane_;               ///< the init's lane loop iterator
};

}  // namespace

int register_tile(const KernelPlan& plan, const Kernel& k, LoopNest& nest,
                  const RegisterTileShape& shape) {
  if (!nest.root || shape.rows <= 0 || shape.vectors <= 0) return 0;
  Tiler t(plan, k, shape);
  nest.root = t.visit(nest.root);
  return t.count();
}

}  // namespace kiln
