#include "scheduler/build_statements.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

#include "ir/limits.h"
#include "ir/view.h"

namespace kiln {

namespace {

using Index = std::vector<IntExpr>;

std::map<std::string, IntExpr> view_substitution(const Index& index) {
  std::map<std::string, IntExpr> sub;
  for (size_t k = 0; k < index.size(); ++k)
    sub["%" + std::to_string(k)] = index[k];
  return sub;
}

bool narrow_float(DType t) {
  return t == DType::f16 || t == DType::bf16;
}

Index iterators(size_t rank) {
  Index out;
  for (size_t k = 0; k < rank; ++k)
    out.push_back(IntExpr::var(iterator_name(static_cast<int>(k))));
  return out;
}

class Builder {
 public:
  Builder(const Graph& g, const ValuePlan& values, const BuildOptions& opt)
      : g_(g), values_(values), opt_(opt) {}

  KernelPlan build() {
    plan_.size_vars = g_.size_vars;
    for (const SizeCheck& c : g_.checks)
      if (c.relation.rel == Relation::eq) facts_.assume(c.relation);
    for (NodeId in : g_.inputs)
      buffer_of_[in] = add_buffer(g_[in].name, g_[in], BufferKind::input);
    std::vector<int> out_buffers;
    for (const GraphOutput& o : g_.outputs)
      out_buffers.push_back(add_buffer(o.name, g_[o.node], BufferKind::output));
    for (size_t b = 0; b < plan_.buffers.size(); ++b)
      plan_.buffers[b].arg = static_cast<int>(b);
    Kernel k;
    k.name = g_.name;
    kernel_ = &k;
    // A reduce or extern call that is an output writes straight into the output's buffer.
    std::map<NodeId, int> direct_target;
    for (size_t o = 0; o < g_.outputs.size(); ++o)
      if (const Node& n = g_[g_.outputs[o].node];
          (n.op == Op::reduce || n.op == Op::scan || n.op == Op::scatter ||
           n.op == Op::extern_call) &&
          !narrow_float(n.dtype))
        direct_target.emplace(g_.outputs[o].node, out_buffers[o]);
    find_written_through(out_buffers);
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) {
      auto t = direct_target.find(id);
      int target = t == direct_target.end() ? -1 : t->second;
      if (auto w = through_.find(id); w != through_.end())
        materialize_reduce_through(id, w->second.first, w->second.second);
      else if (g_[id].op == Op::reduce)
        materialize_reduce(id, target);
      if (g_[id].op == Op::reduce && target < 0 && !through_.count(id)) narrow_for_products(id);
      if (g_[id].op == Op::scan) materialize_scan(id, target);
      if (g_[id].op == Op::scatter) materialize_scatter(id, target);
      if (g_[id].op == Op::extern_call) materialize_extern(id, target);
      if (values_.stored(id) && op_info(g_[id].op).cls != OpClass::reduce &&
          g_[id].op != Op::scan && g_[id].op != Op::scatter && g_[id].op != Op::extern_call &&
          !buffer_of_.count(id))
        materialize_value(id, stored_target(id, out_buffers));
    }
    for (size_t o = 0; o < g_.outputs.size(); ++o) {
      NodeId id = g_.outputs[o].node;
      if (auto b = buffer_of_.find(id);
          b != buffer_of_.end() &&
          (b->second == out_buffers[o] || plan_.buffers[b->second].window_of == out_buffers[o]))
        continue;
      if (write_through_view(id, out_buffers[o])) continue;
      const Shape& shape = g_[id].shape;
      Index idx = iterators(shape.size());
      add_statement(Statement::Kind::assign, shape, out_buffers[o], idx, expr(id, idx));
    }
    for (size_t b = 0; b < plan_.buffers.size(); ++b)
      k.buffers.push_back(static_cast<int>(b));
    plan_.kernels.push_back(std::move(k));
    return plan_;
  }

 private:
  int add_buffer(const std::string& name, const Node& n, BufferKind kind) {
    if (n.shape.size() > static_cast<size_t>(kMaxRank))
      throw std::runtime_error("schedule: '" + name + "' of '" + g_.name + "' has " +
                               std::to_string(n.shape.size()) + " dimensions, above the limit of " +
                               std::to_string(kMaxRank));
    Buffer b;
    b.name = name;
    b.dtype = n.dtype;
    b.shape = n.shape;
    b.kind = kind;
    b.constant = kind == BufferKind::input && n.constant_input;
    plan_.buffers.push_back(b);
    return static_cast<int>(plan_.buffers.size() - 1);
  }

  void add_statement(Statement::Kind kind, const Shape& extents, int buffer, const Index& index,
                     ScalarExprPtr value, ReduceKind rk = ReduceKind::sum) {
    if (extents.size() > static_cast<size_t>(kMaxRank))
      throw std::runtime_error("schedule: a loop nest of '" + g_.name + "' has " +
                               std::to_string(extents.size()) + " dimensions, above the limit of " +
                               std::to_string(kMaxRank));
    Statement st;
    st.name = "S" + std::to_string(kernel_->statements.size());
    st.kind = kind;
    st.reduce = rk;
    st.extents = extents;
    st.buffer = buffer;
    st.index = index;
    st.value = std::move(value);
    kernel_->statements.push_back(std::move(st));
  }

  /** Reduces that only a reordering view reads (heads merged back after attention, a
   *  transposed product): each is computed straight into the view's buffer (an output's, or a
   *  temp that the view's readers load), its statements writing at the view's inverse index,
   *  instead of into a buffer of its own that a copy with divisions then reorders. */
  void find_written_through(const std::vector<int>& out_buffers) {
    const SizeFacts& facts = facts_;
    std::map<NodeId, std::set<NodeId>> readers;
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id)
      for (NodeId o : g_[id].operands)
        readers[o].insert(id);
    std::set<NodeId> outputs;
    for (const GraphOutput& o : g_.outputs)
      outputs.insert(o.node);
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) {
      const Node& n = g_[id];
      if (n.op != Op::reduce || narrow_float(n.dtype) || outputs.count(id) ||
          readers[id].size() != 1)
        continue;
      NodeId v = *readers[id].begin();
      const Node& view = g_[v];
      if (view.op != Op::view || view.dtype != n.dtype || view.view.is_identity(n.shape)) continue;
      // A gather reads the view's source buffer (gather_expr), which would not exist.
      bool gathered = false;
      for (NodeId r : readers[v])
        gathered = gathered || (g_[r].op == Op::gather && g_[r].operands[0] == v);
      if (gathered) continue;
      // The view's dimensions that read the source; the others broadcast it (a contraction's
      // operand), and the buffer holds the view without them.
      std::vector<size_t> kept;
      std::map<std::string, IntExpr> renumber;
      std::set<std::string> vars;
      for (const IntExpr& x : view.view.index)
        x.collect_vars(vars);
      for (size_t d = 0; d < view.shape.size(); ++d) {
        if (!vars.count("%" + std::to_string(d)) && view.shape[d] != IntExpr(1)) continue;
        renumber["%" + std::to_string(d)] = IntExpr::index(static_cast<int>(kept.size()));
        kept.push_back(d);
      }
      bool output = std::any_of(g_.outputs.begin(), g_.outputs.end(),
                                [&](const GraphOutput& o) { return o.node == v; });
      if (output && kept.size() != view.shape.size()) continue;
      View restricted;
      for (size_t d : kept)
        restricted.shape.push_back(view.shape[d]);
      for (const IntExpr& x : view.view.index)
        restricted.index.push_back(x.substitute(renumber));
      restricted.mask = view.view.mask;
      std::optional<Index> inverse = invert(restricted, n.shape, facts);
      if (!inverse) continue;
      int target = -1;
      for (size_t o = 0; o < g_.outputs.size() && target < 0; ++o)
        if (g_.outputs[o].node == v) target = out_buffers[o];
      // Heads merged into an output's feature axis by a size: written through its split alias.
      if (target >= 0)
        if (std::optional<SplitAddress> split =
                split_address(*inverse, n.shape, plan_.buffers[target].shape, facts)) {
          target = split_alias(target, split->shape);
          inverse = split->index;
        }
      if (target < 0) {
        Node held = view;
        held.shape = restricted.shape;
        target = add_buffer("t" + std::to_string(v), held, BufferKind::temp);
      }
      through_[id] = {v, target};
      inverse_[id] = *inverse;
      if (kept.size() != view.shape.size()) broadcast_[v] = {target, kept};
    }
  }

  /** Reduce `id` computed into `target`, the buffer of view `v` that alone reads it. */
  void materialize_reduce_through(NodeId id, NodeId v, int target) {
    size_t first = kernel_->statements.size();
    materialize_reduce(id, target);
    buffer_of_.erase(id);
    if (!broadcast_.count(v)) buffer_of_[v] = target;
    // The statements address the reduce's own coordinates; the view's inverse maps them into
    // the view's buffer.
    const Index& inverse = inverse_.at(id);
    for (size_t k = first; k < kernel_->statements.size(); ++k) {
      Statement& st = kernel_->statements[k];
      // The layout copies that the operand's views asked for come between them.
      if (st.buffer != target ||
          (st.kind != Statement::Kind::reduce_init && st.kind != Statement::Kind::reduce_update))
        continue;
      Index coords = st.index;
      st.index.clear();
      for (const IntExpr& e : inverse)
        st.index.push_back(e.substitute(view_substitution(coords)));
    }
  }

  /** Output `id`, a view that merges dimensions of its source (heads back into the rows'
   *  width: `y = reshape(o, [B, L, E])` reads `o[b, i, c / D, c % D]`), written by walking the
   *  source's element instead, at the view's inverse (`y[b, i, D·h + d] = o[b, i, h, d]`: the
   *  same points one for one, no division), into the output's split alias where the inverse
   *  multiplies a position by a size (split_address). The value then lies in the source's
   *  order, an epilogue of the statements that compute it. False, with nothing added, for a
   *  view that is affine already (a permute: its readers walk it) or has no such inverse. */
  bool write_through_view(NodeId id, int out) {
    const Node& n = g_[id];
    if (n.op != Op::view || affine_in_positions(n.view.index)) return false;
    const Shape& src = g_[n.operands[0]].shape;
    std::optional<Index> inverse = invert(n.view, src, facts_);
    if (!inverse) return false;
    int buffer = out;
    if (!affine_in_positions(*inverse)) {
      std::optional<SplitAddress> split = split_address(*inverse, src, n.shape, facts_);
      if (!split) return false;
      buffer = split_alias(out, split->shape);
      inverse = split->index;
    }
    // The walk leaves out the source's dimensions of extent 1 (a reduce's kept axis).
    std::set<std::string> used;
    for (const IntExpr& x : *inverse)
      x.collect_vars(used);
    Shape extents;
    Index element;
    for (size_t d = 0; d < src.size(); ++d) {
      if (src[d] == IntExpr(1) && !used.count("%" + std::to_string(d))) {
        element.push_back(0);
        continue;
      }
      element.push_back(IntExpr::var(iterator_name(static_cast<int>(extents.size()))));
      extents.push_back(src[d]);
    }
    Index at;
    for (const IntExpr& x : *inverse)
      at.push_back(x.substitute(view_substitution(element)));
    add_statement(Statement::Kind::assign, extents, buffer, at, expr(n.operands[0], element));
    return true;
  }

  /** Reduce `id` in f16 or bf16, accumulated in an f32 buffer, also stored in its own dtype
   *  where a contraction multiplies it inline (BuildOptions::narrow_contraction_operands): an
   *  assignment after its statements (their epilogue) to a buffer its readers load instead. */
  void narrow_for_products(NodeId id) {
    const Node& n = g_[id];
    if (!opt_.narrow_contraction_operands || !narrow_float(n.dtype) || !multiplied_in_sum(id))
      return;
    for (NodeId r : readers_[id])  // they take the reduce's own buffer
      if (g_[r].op == Op::gather || g_[r].op == Op::extern_call || g_[r].op == Op::scan ||
          g_[r].op == Op::scatter)
        return;
    // Over the kept axes, as the reduce's init walks them.
    Shape kept;
    Index at;
    for (size_t d = 0; d < n.shape.size(); ++d) {
      bool reduced = std::find(n.axes.begin(), n.axes.end(), static_cast<int>(d)) != n.axes.end();
      at.push_back(reduced ? IntExpr(0)
                           : IntExpr::var(iterator_name(static_cast<int>(kept.size()))));
      if (!reduced) kept.push_back(n.shape[d]);
    }
    ScalarExprPtr value = expr(id, at);
    Node held = n;
    held.shape = kept;  // without the reduced axes: a tile's rows and lanes end the shape
    int narrow = add_buffer("n" + std::to_string(id), held, BufferKind::temp);
    Index its = iterators(kept.size());
    add_statement(Statement::Kind::assign, kept, narrow, its, value);
    forget(id);
    buffer_of_.erase(id);
    narrow_[id] = narrow;
  }

  /** Whether node `id` reaches one factor of a product that a sum reduces (the other factor
   *  not reading it) through views, casts and arithmetic that keeps it linear (a rotary
   *  embedding's products and sums, a where): a projection attention multiplies, not scores
   *  that an exponential reads or a mean whose deviations a variance squares. */
  bool multiplied_in_sum(NodeId id) {
    if (readers_.empty()) {
      readers_.resize(g_.size());
      for (NodeId r = 0; r < static_cast<NodeId>(g_.size()); ++r)
        for (NodeId o : g_[r].operands)
          readers_[o].push_back(r);
    }
    std::vector<NodeId> work = {id};
    std::set<NodeId> seen;
    while (!work.empty()) {
      NodeId at = work.back();
      work.pop_back();
      for (NodeId r : readers_[at]) {
        const Node& x = g_[r];
        if (x.op == Op::reduce && x.reduce_kind == ReduceKind::sum && g_[at].op == Op::mul &&
            depends_on(g_[at].operands[0], id) != depends_on(g_[at].operands[1], id))
          return true;
        bool linear = x.op == Op::view || x.op == Op::cast || x.op == Op::mul || x.op == Op::add ||
                      x.op == Op::neg || x.op == Op::where;
        if (linear && !values_.stored(r) && seen.insert(r).second) work.push_back(r);
      }
    }
    return false;
  }

  /** Whether node `id` reads node `of`, directly or through others. */
  bool depends_on(NodeId id, NodeId of) const {
    std::vector<NodeId> work = {id};
    std::set<NodeId> seen;
    while (!work.empty()) {
      NodeId at = work.back();
      work.pop_back();
      if (at == of) return true;
      if (at < of || !seen.insert(at).second) continue;  // operands precede their readers
      for (NodeId o : g_[at].operands)
        work.push_back(o);
    }
    return false;
  }

  /** init over the kept axes, then update over all axes of the operand. */
  void materialize_reduce(NodeId id, int target_buffer) {
    const Node& n = g_[id];
    const Shape& src = g_[n.operands[0]].shape;
    int b = target_buffer;
    if (b < 0) {  // f16 and bf16 accumulate in f32
      b = add_buffer("t" + std::to_string(id), n, BufferKind::temp);
      if (narrow_float(n.dtype)) plan_.buffers[b].dtype = DType::f32;
    }
    buffer_of_[id] = b;
    Shape kept;
    Index init_index, update_index = iterators(src.size());
    for (size_t k = 0, it = 0; k < src.size(); ++k) {
      bool reduced = std::find(n.axes.begin(), n.axes.end(), static_cast<int>(k)) != n.axes.end();
      if (reduced) {
        init_index.push_back(0);
      } else {
        kept.push_back(src[k]);
        init_index.push_back(IntExpr::var(iterator_name(static_cast<int>(it++))));
      }
    }
    Index target = update_index;
    for (int ax : n.axes)
      target[ax] = 0;
    in_reduction_ = true;
    reduction_iters_.clear();
    element_iters_.clear();
    lane_iter_.clear();
    for (size_t k = 0; k < src.size(); ++k) {
      std::string it = iterator_name(static_cast<int>(k));
      if (std::find(n.axes.begin(), n.axes.end(), static_cast<int>(k)) != n.axes.end()) {
        reduction_iters_.insert(it);
      } else {
        lane_iter_ = it;
        if (src[k] != IntExpr(1)) element_iters_.insert(it);
      }
    }
    ScalarExprPtr value = expr(n.operands[0], update_index);
    in_reduction_ = false;
    add_statement(Statement::Kind::reduce_init, kept, b, init_index, nullptr, n.reduce_kind);
    add_statement(Statement::Kind::reduce_update, src, b, target, value, n.reduce_kind);
    auto sub = view_substitution(update_index);
    for (const IntExpr& e : n.domain)
      kernel_->statements.back().domain.push_back(e.substitute(sub));
  }

  /** The output buffer a stored value that is an output and read by other nodes is computed
   *  into (then read back), else -1: a new temp. */
  int stored_target(NodeId id, const std::vector<int>& out_buffers) const {
    bool read = false;
    for (const Node& n : g_.nodes)
      read = read || std::find(n.operands.begin(), n.operands.end(), id) != n.operands.end();
    if (!read) return -2;  // an output no node reads: its statement comes last, as before
    for (size_t o = 0; o < g_.outputs.size(); ++o)
      if (g_.outputs[o].node == id) return out_buffers[o];
    return -1;
  }

  /** One assign statement storing node `id` over its shape into `target` (-1: a new temp;
   *  -2: none, the output statement at the end computes it). Later statements load it. */
  void materialize_value(NodeId id, int target) {
    if (target == -2) return;
    const Shape& shape = g_[id].shape;
    Index idx = iterators(shape.size());
    int b = target >= 0 ? target : add_buffer("t" + std::to_string(id), g_[id], BufferKind::temp);
    add_statement(Statement::Kind::assign, shape, b, idx, expr(id, idx));
    buffer_of_[id] = b;
    forget(id);
  }

  /** Drops memoised expressions of node `id`: computed inline before it was stored (by another
   *  output), later uses load it. */
  void forget(NodeId id) {
    const std::string key = std::to_string(id);
    for (auto it = memo_.lower_bound(key); it != memo_.end() && it->first.rfind(key, 0) == 0;)
      it = it->first == key || it->first[key.size()] == '|' ? memo_.erase(it) : std::next(it);
  }

  /** The buffer a scan or scatter of node `id` accumulates in: the target, or a new temp,
   *  f32 for f16 and bf16 as reductions accumulate. */
  int accumulating_buffer(NodeId id, int target_buffer) {
    if (target_buffer >= 0) return target_buffer;
    int b = add_buffer("t" + std::to_string(id), g_[id], BufferKind::temp);
    if (narrow_float(g_[id].dtype)) plan_.buffers[b].dtype = DType::f32;
    return b;
  }

  /** One statement that reads the element it wrote one step before along the axis:
   *  y[.., k, ..] = k > 0 ? y[.., k - 1, ..] combine x[.., k, ..] : x[.., k, ..]. isl sees the
   *  dependence and keeps the axis a serial loop; the other axes stay parallel. f16 and bf16
   *  accumulate in f32, as reductions do. */
  void materialize_scan(NodeId id, int target_buffer) {
    const Node& n = g_[id];
    const int b = accumulating_buffer(id, target_buffer);
    const DType acc = plan_.buffers[b].dtype;
    const int axis = n.axes.at(0);
    Index idx = iterators(n.shape.size());
    ScalarExprPtr x = expr(n.operands[0], idx);
    if (x->dtype != acc) x = scalar_op(Op::cast, acc, {x});
    Index before = idx;
    before[axis] = idx[axis] - 1;
    auto prev = std::make_shared<ScalarExpr>();
    prev->kind = ScalarExpr::Kind::load;
    prev->dtype = acc;
    prev->buffer = b;
    prev->index = before;
    prev->mask.push_back({before[axis], n.shape[axis]});
    auto zero = std::make_shared<ScalarExpr>();
    zero->dtype = DType::i64;
    auto k = std::make_shared<ScalarExpr>();
    k->kind = ScalarExpr::Kind::iterator;
    k->dtype = DType::i64;
    k->index = {idx[axis]};
    ScalarExprPtr later = scalar_op(Op::cmplt, DType::boolean, {zero, k});
    ScalarExprPtr value =
        scalar_op(Op::where, acc, {later, scalar_op(n.combine, acc, {prev, x}), x});
    add_statement(Statement::Kind::assign, n.shape, b, idx, value);
    buffer_of_[id] = b;
  }

  /** A copy of base into the buffer over base's domain, then one scatter statement over the
   *  index's domain (ir/kernel_ir.h) that combines src into the element at the position index
   *  holds along the axis: target[.., $g, ..] = combine(target[.., $g, ..], src[p]). f16 and
   *  bf16 accumulate in f32, as reductions do. */
  void materialize_scatter(NodeId id, int target_buffer) {
    const Node& n = g_[id];
    const int b = accumulating_buffer(id, target_buffer);
    const DType acc = plan_.buffers[b].dtype;
    auto widen = [&](ScalarExprPtr x) {
      return x->dtype == acc ? x : scalar_op(Op::cast, acc, {x});
    };
    Index idx = iterators(n.shape.size());
    add_statement(Statement::Kind::assign, n.shape, b, idx, widen(expr(n.operands[0], idx)));
    const Shape& domain = g_[n.operands[1]].shape;
    Index at = iterators(domain.size());
    Index target = at;
    const IntExpr g = IntExpr::var(kGatherVar);
    target[n.axis] = g;
    auto self = std::make_shared<ScalarExpr>();
    self->kind = ScalarExpr::Kind::load;
    self->dtype = acc;
    self->buffer = b;
    self->index = target;
    self->args = {expr(n.operands[1], at)};
    self->mask.push_back({g, n.shape[n.axis]});
    ScalarExprPtr value = scalar_op(n.combine, acc, {self, widen(expr(n.operands[2], at))});
    add_statement(Statement::Kind::scatter, domain, b, target, value);
    buffer_of_[id] = b;
  }

  static ScalarExprPtr scalar_op(Op op, DType t, std::vector<ScalarExprPtr> args) {
    auto e = std::make_shared<ScalarExpr>();
    e->kind = ScalarExpr::Kind::op;
    e->op = op;
    e->dtype = t;
    e->args = std::move(args);
    return e;
  }

  /** One call statement with a 0-dimensional domain, on whole row-major operand buffers. */
  void materialize_extern(NodeId id, int target_buffer) {
    const Node& n = g_[id];
    Statement st;
    st.kind = Statement::Kind::call;
    st.routine = n.name;
    for (NodeId o : n.operands)
      st.args.push_back(contiguous_buffer(o));
    st.buffer = target_buffer >= 0 ? target_buffer
                                   : add_buffer("t" + std::to_string(id), n, BufferKind::temp);
    st.name = "S" + std::to_string(kernel_->statements.size());
    buffer_of_[id] = st.buffer;
    kernel_->statements.push_back(std::move(st));
  }

  /** A buffer holding the whole of node `id` in row-major order: its own when it has one
   *  (inputs, materialised reduces and calls), else a temp filled by an assign statement, which
   *  later users then load from. */
  int contiguous_buffer(NodeId id) {
    if (auto it = buffer_of_.find(id); it != buffer_of_.end()) return it->second;
    const Shape& shape = g_[id].shape;
    Index idx = iterators(shape.size());
    int b = add_buffer("t" + std::to_string(id), g_[id], BufferKind::temp);
    add_statement(Statement::Kind::assign, shape, b, idx, expr(id, idx));
    buffer_of_[id] = b;
    return b;
  }

  /** The value of node `id` at `index`. Memoised, so a node used twice at the same index is
   *  one shared subexpression: the result is a DAG, never an exponentially large tree. */
  ScalarExprPtr expr(NodeId id, const Index& index) {
    std::string key = std::to_string(id);
    for (const IntExpr& i : index)
      key += "|" + i.key();
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    ScalarExprPtr e = make_expr(id, index);
    memo_.emplace(std::move(key), e);
    return e;
  }

  ScalarExprPtr make_expr(NodeId id, const Index& index) {
    const Node& n = g_[id];
    auto e = std::make_shared<ScalarExpr>();
    e->dtype = n.dtype;
    if (auto it = buffer_of_.find(id); it != buffer_of_.end()) {
      e->kind = ScalarExpr::Kind::load;
      e->buffer = it->second;
      e->index = index;
      return e;
    }
    if (auto it = narrow_.find(id); it != narrow_.end()) {  // narrow_for_products
      e->kind = ScalarExpr::Kind::load;
      e->buffer = it->second;
      for (size_t d = 0; d < n.shape.size(); ++d)
        if (std::find(n.axes.begin(), n.axes.end(), static_cast<int>(d)) == n.axes.end())
          e->index.push_back(index[d]);
      return e;
    }
    switch (n.op) {
      case Op::constant:
        e->kind = ScalarExpr::Kind::constant;
        e->value = n.value;
        e->int_value = n.int_value;
        e->symbolic = n.symbolic;
        e->size_value = n.size_value;
        return e;
      case Op::index:
        e->kind = ScalarExpr::Kind::iterator;
        e->index = {index[n.axis]};
        return e;
      case Op::view: {
        if (auto b = broadcast_.find(id); b != broadcast_.end()) {
          // A reduce was computed into this view's buffer, less the dimensions it broadcasts.
          e->kind = ScalarExpr::Kind::load;
          e->buffer = b->second.first;
          for (size_t d : b->second.second)
            e->index.push_back(index[d]);
          return e;
        }
        auto sub = view_substitution(index);
        Index inner;
        for (const IntExpr& x : n.view.index)
          inner.push_back(x.substitute(sub));
        bool input = g_[n.operands[0]].op == Op::input;
        if (input && !affine_in_iterators(inner))
          if (ScalarExprPtr split = split_load(id, index)) return split;
        // (A copy serves a tile of the reduction's loads, which keeps an operand the element's
        // iterators reuse: one read at every element iterator, a group norm's input or a
        // flattened tensor's, has nothing to keep and reads its source where it lies.)
        if (in_reduction_ && reused_in_reduction(inner) && affine_in_iterators(index) &&
            !affine_in_iterators(inner) && !batch_quotients(inner) && !windowed(n.view.index) &&
            (opt_.copy_input_views || !input))
          return layout_load(id, index);
        ScalarExprPtr src = expr(n.operands[0], inner);
        if (n.view.mask.empty()) return src;
        auto masked = std::make_shared<ScalarExpr>(*src);
        for (const MaskBound& m : n.view.mask)
          masked->mask.push_back({m.expr.substitute(sub), m.bound});
        return masked;
      }
      case Op::gather:
        return gather_expr(n, index);
      case Op::input:
      case Op::reduce:
      case Op::scan:
      case Op::scatter:
      case Op::extern_call:
        throw std::runtime_error("the CPU code path does not support '" +
                                 std::string(op_name(n.op)) + "' here yet");
      default:
        e->kind = ScalarExpr::Kind::op;
        e->op = n.op == Op::copy ? Op::copy : n.op;
        for (NodeId o : n.operands)
          e->args.push_back(expr(o, index));
        return e;
    }
  }

  /** A view of an input that splits dimensions of its source by symbolic sizes (heads from a
   *  feature axis, `q[b, i, (E / H)·h + d]` for a reshape of q to [B, L, H, E / H]) loaded at
   *  `index` from the input's split alias ([B, L, H, E / H] at [b, i, h, d]; split_address),
   *  read affinely, as isl sees an access exactly and a tile keeps its strides. nullptr where
   *  the view does not split so. (An input is never written, so the alias and the buffer
   *  need no dependence between them.) */
  ScalarExprPtr split_load(NodeId id, const Index& index) {
    const Node& n = g_[id];
    auto buffer = buffer_of_.find(n.operands[0]);
    if (buffer == buffer_of_.end()) return nullptr;
    std::optional<SplitAddress> split =
        split_address(n.view.index, n.shape, g_[n.operands[0]].shape, facts_);
    if (!split) return nullptr;
    auto sub = view_substitution(index);
    auto e = std::make_shared<ScalarExpr>();
    e->kind = ScalarExpr::Kind::load;
    e->dtype = n.dtype;
    e->buffer = split_alias(buffer->second, split->shape);
    for (const IntExpr& x : split->index)
      e->index.push_back(x.substitute(sub));
    for (const MaskBound& m : n.view.mask)
      e->mask.push_back({m.expr.substitute(sub), m.bound});
    return e;
  }

  /** The alias of argument buffer `b` with shape `shape` (split_address): a window of it from
   *  its first element (Buffer::window_of), one per buffer and shape. */
  int split_alias(int b, const Shape& shape) {
    std::string key = std::to_string(b) + shape_str(shape);
    if (auto it = alias_.find(key); it != alias_.end()) return it->second;
    Buffer w = plan_.buffers[b];
    w.name += "_split" + std::to_string(alias_.size());
    w.shape = shape;
    w.window_of = b;
    w.window_offset = 0;
    plan_.buffers.push_back(w);
    int at = static_cast<int>(plan_.buffers.size() - 1);
    alias_.emplace(key, at);
    return at;
  }

  /** Whether every position of `index` is affine in the statement iterators with constant
   *  coefficients, as isl needs to see an access exactly. */
  static bool affine_in_iterators(const Index& index) {
    for (const IntExpr& e : index) {
      std::set<std::string> vars;
      e.collect_vars(vars);
      for (const std::string& v : vars)
        if (is_iterator_name(v) && !affine_coefficient(e, v)) return false;
      for (const IntExpr::Term& t : e.terms())
        for (const auto& f : t.factors)
          if (f->kind != IntAtom::Kind::var) {
            std::set<std::string> inside;
            f->a.collect_vars(inside);
            f->b.collect_vars(inside);
            for (const std::string& v : inside)
              if (is_iterator_name(v)) return false;
          }
    }
    return true;
  }

  /** Whether every position of `index` is affine in the iterators but for floor divisions by
   *  positive constants of affine expressions in iterators the reduction neither reduces nor
   *  runs along its lanes: grouped-query heads `k[b, h / 2, j, d]`. isl sees such an access
   *  exactly, and a tile's rows, lanes and k steps keep their strides, so the view is read in
   *  place (a layout copy would move the heads' data and split the kernel). */
  bool batch_quotients(const Index& index) const {
    for (const IntExpr& e : index)
      for (const IntExpr::Term& t : e.terms()) {
        int iterators = 0;
        for (const auto& f : t.factors) {
          if (f->kind == IntAtom::Kind::var) {
            iterators += is_iterator_name(f->name);
            continue;
          }
          std::optional<int64_t> d = f->b.as_constant();
          if (f->kind != IntAtom::Kind::floordiv || !d || *d <= 0 || t.factors.size() != 1)
            return false;
          std::set<std::string> inside;
          f->a.collect_vars(inside);
          for (const std::string& v : inside)
            if (is_iterator_name(v) &&
                (reduction_iters_.count(v) || v == lane_iter_ || !affine_coefficient(f->a, v)))
              return false;
        }
        // coeff · iterator or a product of sizes: affine with a constant coefficient
        if (iterators > 1 || (iterators == 1 && t.factors.size() != 1)) return false;
      }
    return true;
  }

  /** Whether a view's index map reads a source position at a sum of two or more of its
   *  dimensions with constant coefficients (a convolution's `h + r - 1`): neighbouring view
   *  elements then read the same source element, and a copy of the view would be larger than
   *  its source by the window (9 times for a 3x3 convolution's input), so layout_load leaves
   *  such a view inline. */
  static bool windowed(const Index& view_index) {
    for (const IntExpr& x : view_index) {
      std::set<std::string> vars;
      x.collect_vars(vars);
      int constant = 0;
      for (const std::string& v : vars)
        if (v.size() > 1 && v[0] == '%' && affine_coefficient(x, v)) ++constant;
      if (constant >= 2) return true;
    }
    return false;
  }

  /** Whether a load of a view's source at `index` inside the reduction being built is reused
   *  along an iterator of the element it updates (does not use it). */
  bool reused_in_reduction(const Index& index) const {
    std::set<std::string> vars;
    for (const IntExpr& x : index)
      x.collect_vars(vars);
    for (const std::string& it : element_iters_)
      if (!vars.count(it)) return true;
    return false;
  }

  static bool is_iterator_name(const std::string& v) {
    return v.size() > 1 && v[0] == 'i' && std::isdigit(static_cast<unsigned char>(v[1]));
  }

  /** View `id` read by a reduction at `index` (affine) through an index map that is not
   *  affine in the iterators (heads split from a feature axis with symbolic sizes,
   *  `(C / H) * h + d`): the view, less the dimensions it broadcasts, is copied once into a
   *  contiguous temp, and the reduction loads the copy, affinely. The copy's layout suits the
   *  reduction: its dimensions keep the view's order, except that those the reduction reads
   *  along its innermost element iterator (the vector lanes of a register tile) come last,
   *  and before them those it reads along reduced iterators: P·V's v as [h, j, d], its lanes
   *  d unit-stride, and q·kᵀ's k as [h, d, j], a matmul's b (docs/layout.md). */
  ScalarExprPtr layout_load(NodeId id, const Index& index) {
    const Node& n = g_[id];
    // The dimensions the view maps to source positions; the others broadcast, and the copy
    // drops them.
    std::vector<size_t> kept;
    for (size_t d = 0; d < n.shape.size(); ++d) {
      std::set<std::string> vars;
      for (const IntExpr& x : n.view.index)
        x.collect_vars(vars);
      for (const MaskBound& m : n.view.mask)
        m.expr.collect_vars(vars);
      if (vars.count("%" + std::to_string(d))) kept.push_back(d);
    }
    auto rank = [&](size_t d) {
      std::set<std::string> vars;
      index[d].collect_vars(vars);
      if (vars.count(lane_iter_)) return 2;
      for (const std::string& v : vars)
        if (reduction_iters_.count(v)) return 1;
      return 0;
    };
    std::stable_sort(kept.begin(), kept.end(),
                     [&](size_t a, size_t b) { return rank(a) < rank(b); });
    std::string key = std::to_string(id);
    for (size_t d : kept)
      key += "," + std::to_string(d);
    int b;
    if (auto it = layout_.find(key); it != layout_.end()) {
      b = it->second;
    } else {
      Shape shape;
      for (size_t d : kept)
        shape.push_back(n.shape[d]);
      Node copy = n;
      copy.shape = shape;
      b = add_buffer("l" + std::to_string(id), copy, BufferKind::temp);
      Index at(n.shape.size(), IntExpr(0));
      Index its = iterators(kept.size());
      for (size_t k = 0; k < kept.size(); ++k)
        at[kept[k]] = its[k];
      bool saved = in_reduction_;
      in_reduction_ = false;
      ScalarExprPtr value = expr(id, at);
      in_reduction_ = saved;
      add_statement(Statement::Kind::assign, shape, b, its, value);
      layout_.emplace(key, b);
    }
    auto e = std::make_shared<ScalarExpr>();
    e->kind = ScalarExpr::Kind::load;
    e->dtype = n.dtype;
    e->buffer = b;
    for (size_t d : kept)
      e->index.push_back(index[d]);
    return e;
  }

  /** A gather: one load of the source's buffer (a view of a stored value; the source is stored
   *  first unless it has a buffer), at `index` but along the axis, where it reads at kGatherVar,
   *  bound to the index tensor's value at `index`. The other dimensions stay affine, so a row
   *  of an embedding table is read contiguously. */
  ScalarExprPtr gather_expr(const Node& n, const Index& index) {
    NodeId src = n.operands[0];
    NodeId stored = g_[src].op == Op::view ? g_[src].operands[0] : src;
    contiguous_buffer(stored);
    // A value computed inline before it was stored (another output reads it) is loaded now.
    for (NodeId id : {stored, src})
      forget(id);
    Index at = index;
    IntExpr g = IntExpr::var(kGatherVar);
    at[n.axis] = g;
    ScalarExprPtr base = expr(src, at);
    if (base->kind != ScalarExpr::Kind::load || is_gather(*base))
      throw std::runtime_error("schedule: the source of a gather in '" + g_.name +
                               "' is not one load");
    auto e = std::make_shared<ScalarExpr>(*base);
    e->args = {expr(n.operands[1], index)};
    e->mask.push_back({g, g_[src].shape[n.axis]});
    return e;
  }

  const Graph& g_;
  const ValuePlan& values_;
  const BuildOptions opt_;
  KernelPlan plan_;
  Kernel* kernel_ = nullptr;
  std::map<NodeId, int> buffer_of_;  // inputs, materialised reduces, calls and call operands
  std::map<std::string, ScalarExprPtr> memo_;
  std::map<std::string, int> layout_;  ///< layout copies of views, by view and kept dimensions
  std::map<std::string, int> alias_;   ///< split aliases of inputs, by buffer and shape
  SizeFacts facts_;                    ///< the graph's equalities (its checks)
  std::vector<std::vector<NodeId>> readers_;  ///< per node, the nodes reading it (lazily)
  /** Reduces stored in their own dtype too (narrow_for_products): reduce -> that buffer, which
   *  holds the kept axes only. */
  std::map<NodeId, int> narrow_;
  std::map<NodeId, std::pair<NodeId, int>> through_;  ///< reduce -> (its view, the view's buffer)
  std::map<NodeId, Index> inverse_;                   ///< reduce -> its view's inverse
  /** Views whose buffer holds only the dimensions they read (a reduce written through them):
   *  view -> (buffer, those dimensions). */
  std::map<NodeId, std::pair<int, std::vector<size_t>>> broadcast_;
  bool in_reduction_ = false;              ///< building a reduction's operand
  std::set<std::string> reduction_iters_;  ///< that reduction's reduced iterators
  /** that reduction's iterators of the element it updates (of extent other than 1) */
  std::set<std::string> element_iters_;
  std::string lane_iter_;  ///< and its innermost other one ("" if none)
};

}  // namespace

KernelPlan build_statements(const Graph& g, const ValuePlan& values, const BuildOptions& opt) {
  return Builder(g, values, opt).build();
}

KernelPlan build_statements(const Graph& g) {
  return build_statements(g, plan_values(g, {}));
}

}  // namespace kiln
