#include "scheduler/gpu_tile.h"

#include <optional>

#include "scheduler/loop_algebra.h"
#include "scheduler/map_loops.h"

namespace kiln {

namespace {

/** Whether the value of `s` is loads under operations and constants: no leaf but a load reads
 *  an iterator, and no mask sits on anything but a load. */
bool loads_and_constants(const ScalarExpr& e) {
  switch (e.kind) {
    case ScalarExpr::Kind::load:
      return true;
    case ScalarExpr::Kind::iterator:  // a causal mask's comparison of positions
    case ScalarExpr::Kind::constant:
      return e.mask.empty();
    case ScalarExpr::Kind::op:
      if (!e.mask.empty()) return false;
      for (const ScalarExprPtr& a : e.args)
        if (!loads_and_constants(*a)) return false;
      return true;
  }
  return false;
}

}  // namespace

bool gpu_contraction_statement(const Statement& s) {
  if (s.kind != Statement::Kind::reduce_update || s.reduce != ReduceKind::sum || !s.value ||
      !s.domain.empty())
    return false;
  if (!loads_and_constants(*s.value) || has_gather(*s.value)) return false;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    if (l->buffer == s.buffer) return false;
  return !loads.empty();
}

namespace {

/** Whether every load and iterator value under `e` reads along at most one of `rows` and
 *  `lanes`. */
bool leaves_split(const ScalarExpr& e, const std::set<std::string>& rows,
                  const std::set<std::string>& lanes) {
  if (e.kind == ScalarExpr::Kind::load || e.kind == ScalarExpr::Kind::iterator)
    return !(uses_vars(e, rows) && uses_vars(e, lanes));
  for (const ScalarExprPtr& a : e.args)
    if (!leaves_split(*a, rows, lanes)) return false;
  return true;
}

/** The body of an element: statements, and one reduction whose loops are rectangular. */
struct ElementBody {
  std::vector<LoopNodePtr> nodes;
  const LoopNode* reduction = nullptr;  ///< the alloc
  const LoopNode* update = nullptr;     ///< its statement node
};

std::optional<ElementBody> element_body(const Kernel& k, const std::vector<LoopNodePtr>& body) {
  ElementBody e;
  flatten_blocks(body, e.nodes);
  for (const LoopNodePtr& n : e.nodes) {
    if (n->kind == LoopNode::Kind::stmt) continue;
    if (n->kind != LoopNode::Kind::alloc || e.reduction || n->space != MemorySpace::local ||
        n->tile_rows > 0 || n->pack_depth > 0 || n->body.size() != 1)
      return std::nullopt;
    std::vector<const LoopNode*> loops;
    const LoopNode* stmt = perfect_nest(*n->body[0], loops);
    if (!stmt || stmt->statement != n->statement || loops.empty()) return std::nullopt;
    for (const LoopNode* l : loops)
      if (!rectangular(*l)) return std::nullopt;
    if (!gpu_contraction_statement(k.statements.at(n->statement))) return std::nullopt;
    e.reduction = n.get();
    e.update = stmt;
  }
  if (!e.reduction) return std::nullopt;
  return e;
}

/** Row tiles per group of the walk over a matrix's tiles. */
constexpr int64_t kGroupRows = 8;

class Tiler {
 public:
  Tiler(const Kernel& k, const GpuTileShape& shape) : kernel_(k), shape_(shape) {}
  int count = 0;

  LoopNodePtr visit(const LoopNodePtr& n) {
    if (LoopNodePtr tiled = tile(n)) return tiled;
    if (n->kind == LoopNode::Kind::stmt || n->body.empty()) return n;
    auto copy = std::make_shared<LoopNode>(*n);
    bool changed = false;
    for (LoopNodePtr& c : copy->body) {
      LoopNodePtr m = visit(c);
      changed |= m != c;
      c = m;
    }
    return changed ? copy : n;
  }

 private:
  /** `n` as a block-tiled contraction, or null where it is not one. */
  LoopNodePtr tile(const LoopNodePtr& n) {
    std::vector<const LoopNode*> chain;
    const LoopNode* cur = n.get();
    const std::vector<LoopNodePtr>* body = nullptr;
    while (cur->kind == LoopNode::Kind::loop && cur->coincident && !cur->reduction &&
           rectangular(*cur) && cur->mapping == Mapping::serial) {
      chain.push_back(cur);
      body = &cur->body;
      while (body->size() == 1 && (*body)[0]->kind == LoopNode::Kind::block)
        body = &(*body)[0]->body;
      if (body->size() != 1 || (*body)[0]->kind != LoopNode::Kind::loop) break;
      cur = (*body)[0].get();
    }
    if (chain.size() < 2) return nullptr;
    std::optional<ElementBody> e = element_body(kernel_, *body);
    if (!e) return nullptr;
    const Statement& s = kernel_.statements.at(e->update->statement);
    const LoopNode* lane = chain.back();
    std::set<std::string> lanes = driven_iterators(*e->update, lane->iter);
    const LoopNode* row = nullptr;
    for (size_t r = chain.size() - 1; r-- > 0 && !row;) {
      std::set<std::string> rows = driven_iterators(*e->update, chain[r]->iter);
      if (!rows.empty() && !lanes.empty() && leaves_split(*s.value, rows, lanes)) row = chain[r];
    }
    if (!row) return nullptr;
    return build(chain, *row, *lane, *e);
  }

  LoopNodePtr build(const std::vector<const LoopNode*>& chain, const LoopNode& row,
                    const LoopNode& lane, const ElementBody& e) {
    std::string t = "t_" + row.iter + "_" + lane.iter;
    AstExprPtr rows_of = ceil_div(extent(row), shape_.rows);
    AstExprPtr lanes_of = ceil_div(extent(lane), shape_.lanes);
    // t = ((outer loops...) · rows_of + row tile) · lanes_of + lane tile
    // t = (outer loops...) · tiles + u, the tiles of one matrix in groups of kGroupRows row
    // tiles walked column by column: consecutive blocks share the lanes' operands of a column
    // and the rows' operands of the group, which stay in L2 (the last group may be shorter).
    AstExprPtr tiles = ast_op("mul", {rows_of, lanes_of});
    AstExprPtr q = ast_iter(t);
    AstExprPtr u = ast_op("pdiv_r", {q, tiles});
    AstExprPtr group_size = ast_op("mul", {ast_int(kGroupRows), lanes_of});
    AstExprPtr first = ast_op("mul", {ast_op("pdiv_q", {u, group_size}), ast_int(kGroupRows)});
    AstExprPtr in_group = ast_op("min", {ast_op("sub", {rows_of, first}), ast_int(kGroupRows)});
    AstExprPtr v = ast_op("pdiv_r", {u, group_size});
    AstExprPtr row_tile = add(first, ast_op("pdiv_r", {v, in_group}));
    AstExprPtr lane_tile = ast_op("pdiv_q", {v, in_group});
    q = ast_op("pdiv_q", {q, tiles});
    AstExprPtr total = tiles;
    std::vector<LoopNodePtr> nodes = e.nodes;
    std::vector<const LoopNode*> outer;
    for (const LoopNode* l : chain)
      if (l != &row && l != &lane) outer.push_back(l);
    for (size_t o = outer.size(); o-- > 0;) {
      AstExprPtr ext = extent(*outer[o]);
      AstExprPtr value = o == 0 ? q : ast_op("pdiv_r", {q, ext});
      if (o > 0) q = ast_op("pdiv_q", {q, ext});
      total = ast_op("mul", {total, ext});
      for (LoopNodePtr& c : nodes)
        c = substitute_node(c, outer[o]->iter, add(outer[o]->init, value));
    }
    auto tile = std::make_shared<LoopNode>();
    tile->kind = LoopNode::Kind::alloc;
    tile->space = MemorySpace::shared;
    tile->statement = e.update->statement;
    tile->name = "tile" + std::to_string(count);
    tile->tile_rows = shape_.rows;
    tile->tile_lanes = shape_.lanes;
    tile->thread_rows = shape_.thread_rows;
    tile->thread_lanes = shape_.thread_lanes;
    tile->pack_depth = shape_.depth;
    tile->tile_row = row.iter;
    tile->tile_lane = lane.iter;
    tile->tile_row_origin = add(row.init, ast_op("mul", {ast_int(shape_.rows), row_tile}));
    tile->tile_lane_origin = add(lane.init, ast_op("mul", {ast_int(shape_.lanes), lane_tile}));
    tile->tile_row_cond = row.cond;
    tile->tile_lane_cond = lane.cond;
    tile->body = std::move(nodes);
    ++count;
    return block_tile_loop(t, total, tile);
  }

  const Kernel& kernel_;
  GpuTileShape shape_;
};

}  // namespace

LoopNodePtr block_tile_loop(const std::string& iter, const AstExprPtr& count,
                            const LoopNodePtr& tile) {
  auto loop = std::make_shared<LoopNode>();
  loop->kind = LoopNode::Kind::loop;
  loop->iter = iter;
  loop->init = ast_int(0);
  loop->cond = ast_op("lt", {ast_iter(iter), count});
  loop->coincident = true;
  loop->only_reductions = true;
  loop->tile = true;
  loop->mapping = Mapping::block_x;
  loop->body = {tile};
  return loop;
}

int gpu_tile(const KernelPlan&, const Kernel& k, LoopNest& nest, const GpuTileShape& shape) {
  if (!nest.root || shape.rows <= 0) return 0;
  Tiler t(k, shape);
  nest.root = t.visit(nest.root);
  return t.count;
}

bool has_gpu_tile_candidate(const KernelPlan&, const Kernel& k) {
  for (const Statement& s : k.statements) {
    if (s.extents.size() < 3 || !gpu_contraction_statement(s)) continue;
    std::set<std::string> all;
    for (size_t d = 0; d < s.extents.size(); ++d)
      all.insert(iterator_name(static_cast<int>(d)));
    std::vector<const ScalarExpr*> loads;
    collect_loads(*s.value, loads);
    bool each_partial = true;
    for (const ScalarExpr* l : loads) {
      size_t used = 0;
      for (const std::string& v : all)
        used += uses_vars(*l, {v});
      each_partial &= used < all.size();
    }
    if (each_partial) return true;
  }
  return false;
}

}  // namespace kiln
