#include "backends/packed_weights.h"

#include <algorithm>

namespace kiln {

std::vector<const ScalarExpr*> row_shared_loads(const Statement& st,
                                                const std::set<std::string>& along,
                                                const std::set<std::string>& across) {
  std::vector<const ScalarExpr*> loads, out;
  collect_loads(*st.value, loads);
  for (const ScalarExpr* l : loads)
    if (std::find(out.begin(), out.end(), l) == out.end() && uses_vars(*l, along) &&
        !uses_vars(*l, across))
      out.push_back(l);
  return out;
}

std::vector<const ScalarExpr*> row_operand_loads(const Statement& st,
                                                 const std::set<std::string>& rows,
                                                 const std::set<std::string>& ks,
                                                 const std::set<std::string>& lanes) {
  std::vector<const ScalarExpr*> out;
  for (const ScalarExpr* l : row_shared_loads(st, rows, lanes))
    if (uses_vars(*l, ks)) out.push_back(l);
  return out;
}

namespace {

/** The statement iterator whose argument in `fill` is loop iterator `iter` itself, or -1. */
int iterator_bound_to(const LoopNode& fill, const std::string& iter) {
  AstExprPtr want = ast_iter(iter);
  for (size_t a = 0; a < fill.args.size(); ++a)
    if (fill.args[a] && same_expr(*fill.args[a], *want)) return static_cast<int>(a);
  return -1;
}

/** `p` as a PersistentPack, or one with a null pack when it must be filled at every call. */
PersistentPack check(const KernelPlan& plan, const Kernel& k, const LoopNode& p,
                     const std::vector<const LoopNode*>& around) {
  PersistentPack out;
  std::vector<const LoopNode*> fills = nodes_of(*p.body.at(0), LoopNode::Kind::stmt);
  if (fills.empty()) return out;
  const LoopNode& fill = *fills[0];
  const Statement& st = k.statements.at(p.statement);
  // A matrix pack is kept when it is the lane operand's of a tile on vectors (its words hold
  // the values as the tile reads them); the row operand's and AMX's are not (the header).
  if (p.matrix && (p.tile_rows > 0 || p.dot_bytes <= 0 || !p.pack_lane_base)) return out;
  // A vector tile's row pack holds the rows' operands (an activation), filled per row tile.
  if (!p.matrix && p.tile_rows > 0) return out;
  // A panel of vector registers holds f32 or f64; f16 and bf16 values are widened to f32 by
  // its fill (render_pack_fill), so their panels are f32 too and are kept alike.
  const DType v = st.value ? st.value->dtype : DType::f32;
  if (!st.value ||
      (!p.matrix && v != DType::f32 && v != DType::f64 && v != DType::f16 && v != DType::bf16))
    return out;
  int lane = iterator_bound_to(fill, p.tile_lane), depth = iterator_bound_to(fill, p.pack_iter);
  if (lane < 0 || depth < 0 || static_cast<size_t>(std::max(lane, depth)) >= st.extents.size())
    return out;
  std::vector<const ScalarExpr*> loads =
      row_shared_loads(st, driven_iterators(fill, p.tile_lane), driven_iterators(fill, p.tile_row));
  std::set<std::string> others;
  for (size_t a = 0; a < st.extents.size(); ++a)
    if (static_cast<int>(a) != lane && static_cast<int>(a) != depth)
      others.insert(iterator_name(static_cast<int>(a)));
  for (const ScalarExpr* l : loads) {
    const Buffer& b = plan.buffers.at(l->buffer);
    if (b.kind != BufferKind::input || !b.constant || uses_vars(*l, others)) return out;
  }
  for (const LoopNode* loop : around)
    if (loop->mapping != Mapping::serial && !uses_iterator(*p.pack_origin, loop->iter) &&
        !uses_iterator(*p.tile_lane_origin, loop->iter) &&
        !(p.pack_lane_base && uses_iterator(*p.pack_lane_base, loop->iter)))
      return out;
  if (loads.empty() || (p.matrix && loads.size() != 1)) return out;
  if (p.matrix) {
    const DType v = plan.buffers.at(loads[0]->buffer).dtype;
    out.group = v == DType::bf16 ? 2 : 4;
    out.sums = p.dot_signs == DotSigns::signed_signed;
    // The kept words of a k block start at its origin's group, its sums at its origin / D:
    // the k blocks are a loop from 0 by D, a whole number of groups.
    auto blocks = std::find_if(around.begin(), around.end(), [&](const LoopNode* l) {
      return p.pack_origin->kind == AstExpr::Kind::iterator && l->iter == p.pack_origin->name;
    });
    if (blocks == around.end() || !(*blocks)->init ||
        (*blocks)->init->kind != AstExpr::Kind::integer || (*blocks)->init->value != 0 ||
        (*blocks)->step != p.pack_depth || p.pack_depth % out.group != 0)
      return PersistentPack{};
  }
  out.pack = &p;
  out.lane_iterator = lane;
  out.k_iterator = depth;
  out.arrays = loads.size();
  return out;
}

void walk(const KernelPlan& plan, const Kernel& k, const LoopNode& n,
          std::vector<const LoopNode*>& around, std::vector<PersistentPack>& out) {
  if (n.kind == LoopNode::Kind::alloc && n.pack_depth > 0)
    if (PersistentPack p = check(plan, k, n, around); p.pack) out.push_back(p);
  if (n.kind == LoopNode::Kind::loop) around.push_back(&n);
  for (const LoopNodePtr& child : n.body)
    walk(plan, k, *child, around, out);
  if (n.kind == LoopNode::Kind::loop) around.pop_back();
}

}  // namespace

std::vector<PersistentPack> persistent_packs(const KernelPlan& plan, const Kernel& k,
                                             const LoopNode& root) {
  std::vector<PersistentPack> out;
  std::vector<const LoopNode*> around;
  walk(plan, k, root, around, out);
  return out;
}

std::string workspace_symbol(const std::string& symbol) {
  return symbol + "_workspace";
}

}  // namespace kiln
