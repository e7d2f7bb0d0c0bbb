#include "scheduler/softmax_tile.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/mma.h"
#include "scheduler/gpu_tile.h"
#include "scheduler/isl_text.h"
#include "scheduler/online_softmax.h"

namespace kiln {

namespace {

AstExprPtr ceil_div(const AstExprPtr& e, int64_t d) {
  return ast_op("pdiv_q", {ast_op("add", {e, ast_int(d - 1)}), ast_int(d)});
}

LoopNodePtr stmt_node(int statement, std::vector<AstExprPtr> args) {
  auto s = std::make_shared<LoopNode>();
  s->kind = LoopNode::Kind::stmt;
  s->statement = statement;
  s->args = std::move(args);
  return s;
}

}  // namespace

int softmax_tile_lanes(int64_t head) {
  return head > 64 && head <= 128 ? 128 : 64;
}

SoftmaxTileShape softmax_tile_shape(const KernelPlan& plan, const Kernel& k) {
  SoftmaxTileShape shape;
  std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, 0);
  if (!f) return shape;
  std::optional<int64_t> lanes = k.statements[f->statement(7)].extents[f->n - 1].as_constant();
  if (lanes) shape.lanes = softmax_tile_lanes(*lanes);
  return shape;
}

std::optional<IntExpr> softmax_launch_head(const KernelPlan& plan, const Kernel& k) {
  std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, 0);
  if (!f || f->end != static_cast<int>(k.statements.size())) return std::nullopt;
  const IntExpr& head = k.statements[f->statement(7)].extents[f->n - 1];
  if (head.as_constant()) return std::nullopt;
  return head;
}

const std::vector<SoftmaxLaneVariant>& softmax_lane_variants() {
  static const std::vector<SoftmaxLaneVariant> variants = {{64, 0, 64}, {128, 65, 128}};
  return variants;
}

bool softmax_head_is_lanes(const KernelPlan& plan, const Kernel& k) {
  std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, 0);
  return f && k.statements[f->statement(1)].extents[f->n] ==
                  k.statements[f->statement(7)].extents[f->n - 1];
}

SoftmaxTileShape softmax_variant_shape(const KernelPlan& plan, const Kernel& k,
                                       SoftmaxTileShape shape, const SoftmaxLaneVariant& v) {
  shape.lanes = v.lanes;
  if (softmax_head_is_lanes(plan, k)) {
    shape.head_min = v.min_lanes;
    shape.head_max = v.max_lanes;
  }
  return shape;
}

const LoopNode* find_softmax_tile(const LoopNest& nest) {
  if (!nest.root) return nullptr;
  for (const LoopNode* a : nodes_of(*nest.root, LoopNode::Kind::alloc))
    if (a->space == MemorySpace::shared && a->key_block > 0) return a;
  return nullptr;
}

std::string softmax_lanes_symbol(const std::string& symbol, int lanes) {
  return symbol + "_l" + std::to_string(lanes);
}

bool plan_softmax_tma(const KernelPlan& plan, const ScalarExpr& ld, const LoopNode& node,
                      const std::string& inner, DType half, StagedOperand& o) {
  if (ld.kind != ScalarExpr::Kind::load || ld.buffer < 0) return false;
  const Buffer& buffer = plan.buffers.at(ld.buffer);
  const auto n = static_cast<int>(ld.index.size());
  if (buffer.dtype != half || buffer.shape.size() != ld.index.size() || n < 2 || n > 5)
    return false;
  const std::set<std::string> jv = driven_iterators(node, "c3"), xv = driven_iterators(node, inner),
                              rv = driven_iterators(node, "c1");
  if (jv.size() != 1 || xv.size() != 1) return false;
  const std::string &j = *jv.begin(), &x = *xv.begin();
  int dj = -1, dx = -1;
  for (int d = 0; d < n; ++d) {
    std::set<std::string> used;
    ld.index[d].collect_vars(used);
    for (const std::string& r : rv)
      if (used.count(r)) return false;
    const bool uj = used.count(j) > 0, ux = used.count(x) > 0;
    if (!uj && !ux) continue;
    const std::string& it = uj ? j : x;
    int& dim = uj ? dj : dx;
    if ((uj && ux) || used.size() != 1 || dim >= 0 ||
        affine_coefficient(ld.index[d], it) != std::optional<int64_t>(1) ||
        ld.index[d].eval({{it, 0}}) != 0)
      return false;
    dim = d;
  }
  if (dj < 0 || dx != n - 1) return false;
  // Leading dimensions at index 0 fold into the next (a[0, b, j, d] with b over B·H: the
  // coalesced batch of heads), as a warpgroup tile's (gpu_tile.cpp, plan_tma).
  int fold = 0;
  while (fold < dj && ld.index[fold].as_constant() == std::optional<int64_t>(0))
    ++fold;
  o.tma_box.assign(n - fold, 1);  // innermost first
  o.tma_box[0] = 64;
  o.tma_box[n - 1 - dj] = 64;
  o.tma_buffer = ld.buffer;
  o.tma_k_dim = dj;
  o.tma_x_dim = dx;
  o.tma_fold = fold;
  o.as_stored = true;
  o.element_bytes = 2;
  o.vector = 8;
  o.swizzle = 128;
  return true;
}

LoopNest softmax_contraction_nest(const KernelPlan& plan, const Kernel& k,
                                  const SoftmaxTileShape& shape) {
  std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, 0);
  if (!f) throw std::logic_error("softmax_contraction_nest: not a softmax-weighted contraction");
  const int n = f->n;
  const Statement& out = k.statements[f->statement(7)];
  const std::vector<IntExpr>& E = k.statements[f->statement(0)].extents;
  auto ext = [](const IntExpr& e) { return ast_op("max", {int_expr_to_ast(e), ast_int(0)}); };
  const std::string t = "c0";
  AstExprPtr lane_tiles = ceil_div(ext(out.extents[n - 1]), shape.lanes);
  AstExprPtr row_tiles = ceil_div(ext(E[n - 2]), shape.rows);
  AstExprPtr q = ast_iter(t), lane_tile = ast_op("pdiv_r", {q, lane_tiles});
  q = ast_op("pdiv_q", {q, lane_tiles});
  // Row tiles in reverse: a block per tile runs (<kernel>_whole_grid), and under a causal
  // triangle the last rows' tiles hold the most key blocks; started first, they do not trail
  // the grid (FlashAttention's order). Tiles of one head stay together (its keys in L2).
  AstExprPtr row_tile =
      ast_op("sub", {ast_op("sub", {row_tiles, ast_int(1)}), ast_op("pdiv_r", {q, row_tiles})});
  q = ast_op("pdiv_q", {q, row_tiles});
  AstExprPtr total = ast_op("mul", {lane_tiles, row_tiles});
  // The batch iterators, the last varying fastest.
  std::vector<AstExprPtr> batch(n - 2);
  for (int b = n - 2; b-- > 0;) {
    AstExprPtr e = ext(E[b]);
    batch[b] = b == 0 ? q : ast_op("pdiv_r", {q, e});
    if (b > 0) q = ast_op("pdiv_q", {q, e});
    total = ast_op("mul", {total, e});
  }
  const AstExprPtr r = ast_iter("c1"), c = ast_iter("c2"), j = ast_iter("c3"), d = ast_iter("c4");
  auto args = [&](std::vector<AstExprPtr> tail) {
    std::vector<AstExprPtr> a = batch;
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  };
  // The output's statements walk (batch..., r, c, j) in their own order (out_axes).
  auto out_args = [&](bool with_keys) {
    std::vector<AstExprPtr> canon = batch, a;
    canon.insert(canon.end(), {r, c, j});
    for (size_t p = 0; p + (with_keys ? 0 : 1) < f->out_axes.size(); ++p)
      a.push_back(canon.at(f->out_axes[p]));
    return a;
  };
  auto tile = std::make_shared<LoopNode>();
  tile->kind = LoopNode::Kind::alloc;
  tile->space = MemorySpace::shared;
  tile->statement = f->statement(7);
  tile->name = "fa0";
  tile->tile_rows = shape.rows;
  tile->tile_lanes = shape.lanes;
  tile->key_block = shape.keys;
  tile->head_min = shape.head_min;
  tile->head_max = shape.head_max;
  tile->pack_depth = shape.depth;
  // Warpgroup products where the target has them and the operands are 16-bit of one type (the
  // entry of the scores' product; P·V's has the tile's lanes for n).
  const DType a = plan.buffers[f->a->buffer].dtype, b = plan.buffers[f->b->buffer].dtype;
  if (shape.warpgroup) tile->mma = find_warpgroup_mma(a, b, DType::f32, shape.keys);
  tile->tile_row = "c1";
  tile->tile_lane = "c2";
  tile->tile_row_origin = ast_op("mul", {ast_int(shape.rows), row_tile});
  tile->tile_lane_origin = ast_op("mul", {ast_int(shape.lanes), lane_tile});
  tile->tile_row_cond = ast_op("lt", {r, int_expr_to_ast(E[n - 2])});
  tile->tile_lane_cond = ast_op("lt", {c, int_expr_to_ast(out.extents[n - 1])});
  tile->body = {
      stmt_node(f->statement(0), args({r, j})),    stmt_node(f->statement(1), args({r, j, d})),
      stmt_node(f->statement(2), args({r})),       stmt_node(f->statement(3), args({r, j})),
      stmt_node(f->statement(4), args({r})),       stmt_node(f->statement(5), args({r, j})),
      stmt_node(f->statement(6), out_args(false)), stmt_node(f->statement(7), out_args(true))};
  for (int s = f->statement(8); s < f->end; ++s)
    tile->body.push_back(stmt_node(s, out_args(false)));
  // Each key block of k and v copied by the TMA where both loads allow it (else neither: the
  // tile's cp.async copies); q, once per tile, stays with them.
  if (shape.warpgroup && shape.tma && a == b) {
    StagedOperand keys, values;
    keys.by_lane = true;    // the scores' lanes
    keys.k_first = true;    // its head, the scores' reduction, contiguous
    values.k_major = true;  // [keys][lanes]: P·V's reduction is the keys
    if (plan_softmax_tma(plan, *f->b, *tile->body[1], "c4", a, keys) &&
        plan_softmax_tma(plan, *f->v, *tile->body[7], "c2", a, values))
      tile->staged = {keys, values};
  }
  // Two stages of k and v, the next key block's copies landing during this one's products;
  // three where the TMA copies a 64-lane tile's: a stage is then refilled two blocks after its
  // use, so its release is seldom waited for, and 104 KiB still lets two blocks share a
  // multiprocessor (128 lanes would take 128 KiB, one block: they keep two).
  tile->stages = !tile->staged.empty() && shape.lanes == 64 ? 3 : 2;
  LoopNest nest;
  nest.root = block_tile_loop(t, total, tile);
  return nest;
}

}  // namespace kiln
