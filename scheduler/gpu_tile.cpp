#include "scheduler/gpu_tile.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "ir/mma.h"
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
  std::vector<const LoopNode*> loops;   ///< the reduction's loops, outermost first
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
    e.loops = loops;
  }
  if (!e.reduction) return std::nullopt;
  return e;
}

/** Whether memory holds load `ld` (staged as `o`) contiguously along the fill's walk (the
 *  reduction for k_first, else its rows or lanes): the walk's loop drives one statement
 *  iterator by +1, which only the load's last index dimension uses, with coefficient 1. */
bool contiguous_fill(const ElementBody& e, const LoopNode& tile, const ScalarExpr& ld,
                     const StagedOperand& o) {
  const LoopNode& update = *e.update;
  if (ld.kind != ScalarExpr::Kind::load || !ld.mask.empty() || ld.index.empty() ||
      (o.k_first && e.loops.size() != 1))
    return false;
  const std::string it = o.k_first   ? e.loops.back()->iter
                         : o.by_lane ? tile.tile_lane
                                     : tile.tile_row;
  std::set<std::string> driven = driven_iterators(update, it);
  if (driven.size() != 1) return false;
  const std::string v = *driven.begin();
  const AstExprPtr& arg = update.args.at(std::stoul(v.substr(1)));
  if (!arg || !plus_iterator(*arg, it)) return false;
  for (size_t d = 0; d + 1 < ld.index.size(); ++d)
    if (affine_coefficient(ld.index[d], v) != std::optional<int64_t>(0)) return false;
  return affine_coefficient(ld.index.back(), v) == std::optional<int64_t>(1);
}

/** Whether every operand's address moves by a constant stride along the one reduction loop. */
bool strided_along_k(const ElementBody& e, const std::vector<const ScalarExpr*>& ops) {
  bool strided = e.loops.size() == 1 && e.loops[0]->step == 1;
  const std::set<std::string> k_vars = driven_iterators(*e.update, e.loops.back()->iter);
  for (const ScalarExpr* op : ops) {
    strided = strided && op->kind == ScalarExpr::Kind::load && op->mask.empty();
    for (size_t d = 0; strided && d < op->index.size(); ++d)
      for (const std::string& v : k_vars)
        strided = strided && affine_coefficient(op->index[d], v).has_value();
  }
  return strided;
}

/** Whether every operand's index is affine in the tile's row and lane iterators. */
bool affine_in(const ElementBody& e, const LoopNode& tile,
               const std::vector<const ScalarExpr*>& ops) {
  std::set<std::string> vars = driven_iterators(*e.update, tile.tile_row);
  for (const std::string& v : driven_iterators(*e.update, tile.tile_lane))
    vars.insert(v);
  for (const ScalarExpr* op : ops)
    for (const IntExpr& d : op->index)
      for (const std::string& v : vars)
        if (!affine_coefficient(d, v).has_value()) return false;
  return true;
}

/** Where the TMA may fill staged operand `o` (load `ld`) of a warpgroup tile (StagedOperand::
 *  tma_box): each index dimension of the load moves with k alone, with the operand's rows or
 *  lanes alone (coefficient 1 each, one dimension of each), or with neither; the innermost is
 *  the one its stage holds contiguously. Leaves `o` as it is where that does not hold. */
void plan_tma(const KernelPlan& plan, const ElementBody& e, const LoopNode& tile,
              const ScalarExpr& ld, StagedOperand& o) {
  const LoopNode& update = *e.update;
  const std::set<std::string> kv = driven_iterators(update, e.loops.back()->iter),
                              xv = driven_iterators(update,
                                                    o.by_lane ? tile.tile_lane : tile.tile_row),
                              other = driven_iterators(update,
                                                       o.by_lane ? tile.tile_row : tile.tile_lane);
  const auto n = static_cast<int>(ld.index.size());
  if (kv.size() != 1 || xv.size() != 1 || n < 2 || n > 5 || ld.buffer < 0 ||
      plan.buffers[ld.buffer].shape.size() != ld.index.size())
    return;
  const std::string& k = *kv.begin();
  const std::string& x = *xv.begin();
  int dk = -1, dx = -1;
  for (int d = 0; d < n; ++d) {
    const std::optional<int64_t> ck = affine_coefficient(ld.index[d], k),
                                 cx = affine_coefficient(ld.index[d], x);
    if (!ck || !cx || (*ck != 0 && *cx != 0) || (*ck != 0 && *ck != 1) || (*cx != 0 && *cx != 1))
      return;
    for (const std::string& v : other)
      if (affine_coefficient(ld.index[d], v) != std::optional<int64_t>(0)) return;
    if (*ck == 1) {
      if (dk >= 0) return;
      dk = d;
    }
    if (*cx == 1) {
      if (dx >= 0) return;
      dx = d;
    }
  }
  const int64_t extent = o.by_lane ? tile.tile_lanes : tile.tile_rows;
  if (dk < 0 || dx < 0 || (o.k_first ? dk : dx) != n - 1 || extent > 256 || extent % 64) return;
  // Leading dimensions at index 0 fold into the next: the coalesce pass reads a[B, M, K]'s rows
  // as a[0, r, k] with r over B·M, which a map of M rows would cut at M.
  int fold = 0;
  while (fold < std::min(dk, dx) && ld.index[fold].as_constant() == std::optional<int64_t>(0))
    ++fold;
  o.tma_box.assign(n - fold, 1);
  o.tma_box[n - 1 - dk] = tile.pack_depth;
  o.tma_box[n - 1 - dx] = o.k_first ? extent : 64;
  o.tma_buffer = ld.buffer;
  o.tma_k_dim = dk;
  o.tma_x_dim = dx;
  o.tma_fold = fold;
}

/** Plans `tile` (R × L) on warpgroup instructions (GpuTileShape::wgmma) for a product of the
 *  two loads `ops`: two warpgroups of R / 2 rows × L lanes, m64nLk16 instructions, reduction
 *  blocks of 64 16-bit values (one 128-byte swizzled shared row), each operand copied in
 *  16-byte chunks along the dimension memory holds contiguously (k: [rows or lanes][k], the
 *  instruction's K-major form; rows or lanes: [k][rows or lanes] in blocks of 64, its
 *  MN-major form, transposed by the instruction). False where that does not apply. */
bool plan_warpgroup_tile(const KernelPlan& plan, const ElementBody& e, const GpuTileShape& shape,
                         const std::vector<const ScalarExpr*>& ops,
                         std::vector<StagedOperand> staged, LoopNode& tile) {
  const int64_t R = tile.tile_rows, L = tile.tile_lanes, D = 64;
  if (!shape.wgmma || shape.wgmma_stages < 3 || R % 128 || e.loops.size() != 1 ||
      e.loops[0]->step != 1)
    return false;
  const size_t a = staged[0].by_lane ? 1 : 0;
  const MmaInstruction* mma =
      find_warpgroup_mma(plan.buffers[ops[a]->buffer].dtype, plan.buffers[ops[1 - a]->buffer].dtype,
                         DType::f32, static_cast<int>(L));
  if (!mma) return false;
  for (size_t q = 0; q < staged.size(); ++q) {
    StagedOperand& o = staged[q];
    if (!contiguous_fill(e, tile, *ops[q], o)) {
      // The other walk: along its rows or lanes where the reduction is not contiguous.
      o.k_first = !o.k_first;
      if (!contiguous_fill(e, tile, *ops[q], o)) return false;
    }
    if (!o.k_first && (o.by_lane ? L : R) % 64) return false;
    o.k_major = !o.k_first;
    o.as_stored = true;
    o.element_bytes = 2;
    o.vector = 8;
    o.pad = 0;
    o.swizzle = 128;
  }
  tile.mma = mma;
  tile.warp_rows = R / 2;
  tile.warp_lanes = L;
  tile.thread_rows = R / 2 / mma->m * mma->acc_rows;
  tile.thread_lanes = mma->acc_cols;
  tile.pack_depth = D;
  tile.stages = shape.wgmma_stages;
  tile.mma_in_flight = 1;
  // The accumulators take half a thread's registers: the copies keep one address per operand
  // (LoopNode::k_strided; for a warpgroup tile the address is affine in the rows or lanes too).
  tile.k_strided = strided_along_k(e, ops) && affine_in(e, tile, ops);
  if (!tile.k_strided) return false;
  if (shape.tma) {  // every operand through the TMA, or none
    for (size_t q = 0; q < staged.size(); ++q)
      plan_tma(plan, e, tile, *ops[q], staged[q]);
    if (std::any_of(staged.begin(), staged.end(),
                    [](const StagedOperand& o) { return o.tma_box.empty(); }))
      for (StagedOperand& o : staged) {
        o.tma_box.clear();
        o.tma_buffer = o.tma_k_dim = o.tma_x_dim = -1;
        o.tma_fold = 0;
      }
  }
  // The epilogue through the stages' shared memory: 128 accumulators a thread, unrolled, would
  // be 128 copies of its code (a tanh GELU: 200 KiB of instructions).
  int64_t stage_bytes = 0;
  for (const StagedOperand& o : staged)
    stage_bytes += (o.by_lane ? L : R) * D * o.element_bytes;
  tile.epilogue_staged = R * (L + 8) * 4 <= tile.stages * stage_bytes;
  tile.staged = std::move(staged);
  return true;
}

/** How block tile `tile` (rows `ri`, lanes `li`, its tile_rows × tile_lanes set) runs update
 *  `s` at stmt node `e.update`: its staged operands, and tensor cores where they apply. Sets
 *  staged, mma, warp_rows/warp_lanes, thread_rows/thread_lanes and pack_depth; false where the
 *  shape does not split over the block's threads. With `warpgroup`, only a tile on warpgroup
 *  instructions (GpuTileShape::wgmma) is planned, else false. */
bool plan_tile(const KernelPlan& plan, const Statement& s, const ElementBody& e,
               const GpuTileShape& shape, bool warpgroup, LoopNode& tile) {
  const LoopNode& update = *e.update;
  const int64_t R = tile.tile_rows, L = tile.tile_lanes;
  const std::set<std::string> lanes = driven_iterators(update, tile.tile_lane),
                              rows = driven_iterators(update, tile.tile_row),
                              inner_k = driven_iterators(update, e.loops.back()->iter);
  // The operands: the largest subexpressions that read memory or positions and move along the
  // rows only (or along neither), or along the lanes only.
  std::vector<const ScalarExpr*> ops;
  std::vector<StagedOperand> staged;
  std::vector<int> path;
  std::function<void(const ScalarExpr&)> split = [&](const ScalarExpr& x) {
    if (!varies(x)) return;  // constants stay in the update
    if (!uses_vars(x, lanes) || !uses_vars(x, rows)) {
      if (std::find(ops.begin(), ops.end(), &x) != ops.end()) return;
      ops.push_back(&x);
      StagedOperand o;
      o.path = path;
      o.by_lane = uses_vars(x, lanes);
      // Read along its (first) load's last dimension in memory: the fill walks the reduction
      // first where that dimension moves with the innermost reduction loop.
      std::vector<const ScalarExpr*> in;
      collect_loads(x, in);
      std::set<std::string> used;
      if (!in.empty() && !in[0]->index.empty()) in[0]->index.back().collect_vars(used);
      for (const std::string& it : inner_k)
        o.k_first = o.k_first || used.count(it) > 0;
      staged.push_back(o);
      return;
    }
    for (size_t a = 0; a < x.args.size(); ++a) {
      path.push_back(static_cast<int>(a));
      split(*x.args[a]);
      path.pop_back();
    }
  };
  split(*s.value);
  auto dtype_of = [&](size_t q) {
    return ops[q]->kind == ScalarExpr::Kind::load ? plan.buffers[ops[q]->buffer].dtype
                                                  : ops[q]->dtype;
  };
  auto contiguous = [&](size_t q) { return contiguous_fill(e, tile, *ops[q], staged[q]); };
  // Tensor cores: the update is a × b, one unmasked load per side, of the types an instruction
  // takes (copied as stored), on a tile the instruction's warps cover.
  const ScalarExpr& v = *s.value;
  const MmaInstruction* mma = nullptr;
  const bool product = shape.mma && ops.size() == 2 && staged[0].by_lane != staged[1].by_lane &&
                       v.kind == ScalarExpr::Kind::op && v.op == Op::mul && v.mask.empty() &&
                       v.args.size() == 2 && v.args[0].get() == ops[0] &&
                       v.args[1].get() == ops[1] && ops[0]->kind == ScalarExpr::Kind::load &&
                       ops[1]->kind == ScalarExpr::Kind::load && ops[0]->mask.empty() &&
                       ops[1]->mask.empty();
  if (warpgroup) return product && plan_warpgroup_tile(plan, e, shape, ops, staged, tile);
  if (product) {
    const size_t a = staged[0].by_lane ? 1 : 0;
    mma = find_mma(dtype_of(a), dtype_of(1 - a), DType::f32);
    const int64_t wr = shape.mma_warp_rows, wl = shape.mma_warp_lanes;
    if (mma &&
        (wr <= 0 || wl <= 0 || R % wr || L % wl || wr % mma->m || wl % (2 * mma->n) ||
         (R / wr) * (L / wl) * 32 != kGpuTileThreads || shape.mma_depth % mma->k || !mma->ldmatrix))
      mma = nullptr;
  }
  const int64_t D = mma ? shape.mma_depth : shape.depth;
  if (mma) {
    tile.mma = mma;
    tile.warp_rows = shape.mma_warp_rows;
    tile.warp_lanes = shape.mma_warp_lanes;
    tile.thread_rows = shape.mma_warp_rows / mma->m * mma->acc_rows;
    tile.thread_lanes = shape.mma_warp_lanes / mma->n * mma->acc_cols;
  } else {
    const int64_t r = shape.thread_rows, l = shape.thread_lanes;
    if (r <= 0 || l <= 0 || R % r || L % l || r % 4 || l % 4 ||
        (R / r) * (L / l) != kGpuTileThreads || D <= 0)
      return false;
    tile.thread_rows = r;
    tile.thread_lanes = l;
  }
  tile.pack_depth = D;
  // Chunks of the fill (16 bytes where memory holds them contiguously) and the shared layout:
  // SIMT [k][rows or lanes] in the compute type, rows padded by 4 (16 bytes of f32: groups of 4
  // read at once stay aligned); tensor cores as stored, [rows or lanes][k], or [k][lanes] for a
  // b read along its lanes (its fragments then come through ldmatrix.trans), rows padded by 8
  // (16 bytes: ldmatrix's rows fall in different banks). An a read along its rows is copied
  // element by element.
  for (size_t q = 0; q < staged.size(); ++q) {
    StagedOperand& o = staged[q];
    o.k_major = !mma;
    o.as_stored = mma != nullptr;
    o.pad = mma ? 8 : 4;
    // As stored, or in the compute type: f32 for 16-bit floats, else the type itself.
    const DType t = dtype_of(q);
    o.element_bytes =
        mma || (t != DType::f16 && t != DType::bf16) ? std::max(dtype_bits(t), 8) / 8 : 4;
    const int64_t V = 128 / std::max(dtype_bits(dtype_of(q)), 8), extent = o.by_lane ? L : R;
    if (!contiguous(q) || (o.k_first ? D : extent) % V) continue;
    if (mma && !o.k_first && !o.by_lane) continue;
    o.vector = V;
    if (mma && !o.k_first) o.k_major = true;
  }
  // A pipeline of cp.async copies: 16-byte chunks of every operand, contiguous in shared
  // memory too (the fill walks the operand's shared rows).
  bool async = mma != nullptr && shape.mma_stages > 1;
  for (const StagedOperand& o : staged)
    async = async && o.vector > 1 && o.k_major != o.k_first;
  tile.stages = async ? shape.mma_stages : 1;
  tile.k_strided = strided_along_k(e, ops);
  tile.staged = std::move(staged);
  return true;
}

/** Whether the element statement `s` of kernel `k` reduces lives in registers only
 *  (LoopNode::result_in_registers): its buffer is a temporary no other kernel of `plan`
 *  accesses, and the statements of `k` other than those of the element body (`e.nodes`) do not
 *  access it; those after the reduction only read it, at the element's index. */
bool reads_buffer(const Statement& t, int buffer) {
  std::vector<const ScalarExpr*> loads;
  if (t.value) collect_loads(*t.value, loads);
  for (const ScalarExpr* l : loads)
    if (l->buffer == buffer) return true;
  return false;
}

bool result_in_registers(const KernelPlan& plan, const Kernel& k, const Statement& s,
                         const ElementBody& e) {
  auto reads = [&](const Statement& t, bool at_element) {
    std::vector<const ScalarExpr*> loads;
    if (t.value) collect_loads(*t.value, loads);
    for (const ScalarExpr* l : loads)
      if (l->buffer == s.buffer && (!at_element || l->index != s.index)) return true;
    return false;
  };
  std::set<int> body = {e.update->statement};
  bool after = false;
  for (const LoopNodePtr& n : e.nodes) {
    if (n.get() == e.reduction) after = true;
    if (n->kind != LoopNode::Kind::stmt) continue;
    body.insert(n->statement);
    const Statement& t = k.statements.at(n->statement);
    if (n->statement == e.update->statement) continue;
    if (t.buffer == s.buffer && !(t.kind == Statement::Kind::reduce_init && !after)) return false;
    if (reads(t, after)) return false;  // before: any read; after: one elsewhere
    // A read after the reduction names the element only if the statement's iterators are the
    // element's.
    if (after && reads_buffer(t, s.buffer)) {
      if (n->args.size() > e.reduction->args.size()) return false;
      for (size_t a = 0; a < n->args.size(); ++a)
        if (!n->args[a] || !e.reduction->args[a] || !same_expr(*n->args[a], *e.reduction->args[a]))
          return false;
    }
  }
  for (size_t i = 0; i < k.statements.size(); ++i)
    if (!body.count(static_cast<int>(i)) &&
        (k.statements[i].buffer == s.buffer || reads_buffer(k.statements[i], s.buffer)))
      return false;
  return private_temporary(plan, s.buffer);
}

/** The most operations (distinct nodes) the statement after a reduction may compute for the
 *  staged epilogue to run in runs of lanes: a run is its code V times over. A tanh GELU (about
 *  60 nodes) is within it: one element at a time, its chain of dependent operations left a
 *  block of 256 threads latency-bound (the GPT-2 MLP's first product took 0.2 ms more than the
 *  plain product on an H200), where a run gives each thread eight independent chains. The bound
 *  keeps a pathological statement from being unrolled eight times. */
constexpr size_t kEpilogueRunNodes = 160;

size_t distinct_nodes(const ScalarExpr& root) {
  std::set<const ScalarExpr*> seen;
  std::function<void(const ScalarExpr&)> visit = [&](const ScalarExpr& e) {
    if (!seen.insert(&e).second) return;
    for (const ScalarExprPtr& a : e.args)
      visit(*a);
  };
  visit(root);
  return seen.size();
}

/** The lanes of a run of a staged epilogue's 16-byte stores (LoopNode::epilogue_vector) for
 *  block tile `tile` of element body `e`: the elements of 16 bytes of the element's one store —
 *  the reduction's, with no statement after it, or, the result in registers, that of the one
 *  statement after it (an assignment) — where that store's index moves by 1 along the tile's
 *  lanes in its last dimension only (the lane loop drives one iterator, by +1); 0 otherwise. */
int64_t epilogue_vector(const KernelPlan& plan, const Kernel& k, const ElementBody& e,
                        const LoopNode& tile) {
  std::vector<const LoopNode*> after;
  bool past = false;
  for (const LoopNodePtr& n : e.nodes)
    if (n.get() == e.reduction)
      past = true;
    else if (past)
      after.push_back(n.get());
  const LoopNode* store = nullptr;
  if (after.empty() && !tile.result_in_registers)
    store = e.update;  // its statement's index is the element's; its args name the lanes
  else if (after.size() == 1 && tile.result_in_registers &&
           after[0]->kind == LoopNode::Kind::stmt &&
           k.statements.at(after[0]->statement).kind == Statement::Kind::assign &&
           k.statements.at(after[0]->statement).value &&
           distinct_nodes(*k.statements.at(after[0]->statement).value) <= kEpilogueRunNodes)
    store = after[0];
  if (!store) return 0;
  const Statement& s = k.statements.at(store->statement);
  const int64_t bytes = std::max(dtype_bits(plan.buffers.at(s.buffer).dtype), 8) / 8;
  const int64_t V = 16 / bytes;
  if (s.index.empty() || 16 % bytes || V > tile.tile_lanes || tile.tile_lanes % V) return 0;
  std::set<std::string> driven = driven_iterators(*store, tile.tile_lane);
  if (driven.size() != 1) return 0;
  const std::string v = *driven.begin();
  const AstExprPtr& arg = store->args.at(std::stoul(v.substr(1)));
  if (!arg || !plus_iterator(*arg, tile.tile_lane)) return 0;
  for (size_t d = 0; d + 1 < s.index.size(); ++d)
    if (affine_coefficient(s.index[d], v) != std::optional<int64_t>(0)) return 0;
  return affine_coefficient(s.index.back(), v) == std::optional<int64_t>(1) ? V : 0;
}

/** Row tiles per group of the walk over a matrix's tiles. */
constexpr int64_t kGroupRows = 8;

class Tiler {
 public:
  Tiler(const KernelPlan& plan, const Kernel& k, const GpuTileShape& shape)
      : plan_(plan), kernel_(k), shape_(shape) {}
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
    // Warpgroup instructions where the target has them and they apply, else the block tile.
    if (shape_.wgmma && shape_.wgmma_rows > 0)
      if (LoopNodePtr t =
              build(chain, *row, *lane, *e, shape_.wgmma_rows, shape_.wgmma_lanes, true))
        return t;
    return build(chain, *row, *lane, *e, shape_.rows, shape_.lanes, false);
  }

  LoopNodePtr build(const std::vector<const LoopNode*>& chain, const LoopNode& row,
                    const LoopNode& lane, const ElementBody& e, int64_t R, int64_t L,
                    bool warpgroup) {
    std::string t = "t_" + row.iter + "_" + lane.iter;
    AstExprPtr rows_of = ceil_div(extent(row), R);
    AstExprPtr lanes_of = ceil_div(extent(lane), L);
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
    tile->tile_rows = R;
    tile->tile_lanes = L;
    tile->tile_row = row.iter;
    tile->tile_lane = lane.iter;
    tile->tile_row_origin = add(row.init, ast_op("mul", {ast_int(R), row_tile}));
    tile->tile_lane_origin = add(lane.init, ast_op("mul", {ast_int(L), lane_tile}));
    tile->tile_row_cond = row.cond;
    tile->tile_lane_cond = lane.cond;
    if (!plan_tile(plan_, kernel_.statements.at(e.update->statement), e, shape_, warpgroup, *tile))
      return nullptr;
    tile->result_in_registers =
        result_in_registers(plan_, kernel_, kernel_.statements.at(e.update->statement), e);
    if (tile->epilogue_staged) tile->epilogue_vector = epilogue_vector(plan_, kernel_, e, *tile);
    tile->body = std::move(nodes);
    ++count;
    return block_tile_loop(t, total, tile);
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  GpuTileShape shape_;
};

}  // namespace

bool private_temporary(const KernelPlan& plan, int buffer) {
  if (plan.buffers.at(buffer).kind != BufferKind::temp) return false;
  // Counted, not compared with the kernel that writes it: kernels share names, and the one
  // being scheduled may be a copy of the plan's.
  int accessing = 0;
  for (const Kernel& other : plan.kernels) {
    bool touches = false;
    for (const Statement& t : other.statements)
      touches = touches || t.buffer == buffer || reads_buffer(t, buffer);
    accessing += touches;
  }
  return accessing <= 1;
}

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

int gpu_tile(const KernelPlan& plan, const Kernel& k, LoopNest& nest, const GpuTileShape& shape) {
  if (!nest.root || shape.rows <= 0) return 0;
  Tiler t(plan, k, shape);
  nest.root = t.visit(nest.root);
  return t.count;
}

std::string wgmma_text(const WgmmaShape& v) {
  return std::to_string(v.rows) + "x" + std::to_string(v.lanes) + "x" + std::to_string(v.stages);
}

std::string variant_symbol(const std::string& symbol, const WgmmaShape& v) {
  return symbol + "_w" + wgmma_text(v);
}

std::optional<GpuTileDims> gpu_tile_dims(const KernelPlan&, const Kernel& k) {
  for (size_t i = 0; i < k.statements.size(); ++i) {
    const Statement& s = k.statements[i];
    if (s.kind != Statement::Kind::reduce_update || s.extents.size() < 3 ||
        !gpu_contraction_statement(s))
      continue;
    std::set<std::string> written;
    for (const IntExpr& d : s.index)
      d.collect_vars(written);
    std::vector<const ScalarExpr*> loads;
    collect_loads(*s.value, loads);
    auto uses = [](const ScalarExpr& l, int d) { return uses_vars(l, {iterator_name(d)}); };
    GpuTileDims dims;
    dims.statement = static_cast<int>(i);
    for (int d = static_cast<int>(s.extents.size()); d-- > 0;) {
      if (!written.count(iterator_name(d))) continue;
      if (dims.lanes < 0) {
        dims.lanes = d;
        continue;
      }
      bool rows_only = false, lanes_only = false;
      for (const ScalarExpr* l : loads) {
        rows_only |= uses(*l, d) && !uses(*l, dims.lanes);
        lanes_only |= uses(*l, dims.lanes) && !uses(*l, d);
      }
      if (dims.rows < 0 && rows_only && lanes_only)
        dims.rows = d;
      else
        dims.outer.push_back(d);
    }
    for (int d = 0; d < static_cast<int>(s.extents.size()); ++d)
      if (!written.count(iterator_name(d))) dims.depth.push_back(d);
    for (const Statement& t : k.statements)
      if (t.kind == Statement::Kind::assign && t.value && reads_buffer(t, s.buffer))
        dims.epilogue_ops += static_cast<int64_t>(distinct_nodes(*t.value));
    if (dims.rows >= 0 && !dims.depth.empty()) return dims;
  }
  return std::nullopt;
}

const LoopNode* warpgroup_tile(const LoopNest& nest) {
  if (!nest.root) return nullptr;
  for (const LoopNode* a : nodes_of(*nest.root, LoopNode::Kind::alloc))
    if (a->space == MemorySpace::shared && a->mma && a->mma->warpgroup && a->key_block == 0)
      return a;
  return nullptr;
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
