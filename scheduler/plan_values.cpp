#include "scheduler/plan_values.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/kernel_ir.h"

namespace kiln {

int64_t op_cost(Op op) {
  switch (op) {
    case Op::input:
    case Op::constant:
    case Op::index:
    case Op::view:
    case Op::copy:
    case Op::bitcast:
      return 0;
    case Op::recip:
    case Op::idiv:
    case Op::mod:
    case Op::sqrt:
      return 4;
    case Op::exp2:
    case Op::log2:
    case Op::sin:
      return 8;
    case Op::mulacc:
      return 2;
    default:
      return 1;
  }
}

namespace {

using Index = std::vector<IntExpr>;

/** A statement that evaluates nodes inline: its domain and the node's index in its iterators.
 *  Two uses by one statement at one index are one evaluation (build_statements memoises). */
struct Use {
  NodeId root;
  Shape domain;
  Index index;
  std::string key() const {
    std::string k = std::to_string(root);
    for (const IntExpr& i : index)
      k += "|" + i.key();
    return k;
  }
};

Index iterators(size_t rank) {
  Index out;
  for (size_t k = 0; k < rank; ++k)
    out.push_back(IntExpr::var(iterator_name(static_cast<int>(k))));
  return out;
}

/** The evaluations per element of a node at `index` in a statement over `domain`: the product
 *  of the extents of the iterators the index does not use, but those after the last one it
 *  uses: their loops run inside, and compilers hoist the value out of them. */
IntExpr factor_of(const Use& u) {
  std::set<std::string> used;
  for (const IntExpr& e : u.index)
    e.collect_vars(used);
  size_t last = 0;
  for (size_t d = 0; d < u.domain.size(); ++d)
    if (used.count(iterator_name(static_cast<int>(d)))) last = d + 1;
  IntExpr f = 1;
  for (size_t d = 0; d < last; ++d)
    if (!used.count(iterator_name(static_cast<int>(d)))) f = f * u.domain[d];
  return f;
}

/** `f` with every size variable at kNominalSize. */
int64_t nominal(const IntExpr& f) {
  return eval_at(f, kNominalSize).value_or(kNominalSize);
}

class Planner {
 public:
  Planner(const Graph& g, const ValueOptions& opt) : g_(g), opt_(opt) {
    uses_.resize(g.size());
    plan_.nodes.resize(g.size());
    readers_.assign(g.size(), 0);
    for (const Node& n : g.nodes)
      for (NodeId o : n.operands)
        ++readers_[o];
    for (const GraphOutput& o : g.outputs)
      output_.insert(o.node);
  }

  /** Two passes: the first counts each value's inline cost with the buffers nodes have by
   *  nature, the second with the values the first stored too (a value over a stored one costs
   *  only its own ops). */
  ValuePlan run() {
    mark_gather_and_call_sources();
    costs(std::vector<bool>(g_.size(), false));
    pass();
    std::vector<bool> stored(g_.size());
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id)
      stored[id] = plan_.stored(id);
    costs(stored);
    pass();
    return std::move(plan_);
  }

 private:
  void pass() {
    for (std::vector<Use>& u : uses_)
      u.clear();
    plan_.nodes.assign(g_.size(), {});
    weight_iterators_ = std::move(next_weight_iterators_);
    next_weight_iterators_.clear();
    for (NodeId id = static_cast<NodeId>(g_.size()); id-- > 0;) {
      decide(id);
      if (opt_.online_softmax) note_weights(id);
    }
  }

  /** Each node's inline cost, integer division and memory reads, with `stored` as buffers. */
  void costs(const std::vector<bool>& stored) {
    inline_cost_.assign(g_.size(), 0);
    traps_.assign(g_.size(), false);
    reads_.assign(g_.size(), false);
    loads_.assign(g_.size(), 0);
    auto buffer = [&](NodeId id) { return has_buffer_by_nature(id) || stored[id]; };
    for (NodeId id = 0; id < static_cast<NodeId>(g_.size()); ++id) {
      const Node& n = g_[id];
      inline_cost_[id] = masked_view(id) ? opt_.masked_view_cost : op_cost(n.op);
      traps_[id] = (n.op == Op::idiv || n.op == Op::mod) && !is_float(n.dtype);
      reads_[id] = has_buffer_by_nature(id);
      if (has_buffer_by_nature(id)) continue;
      for (NodeId o : n.operands) {
        reads_[id] = reads_[id] || reads_[o] || stored[o];
        loads_[id] = std::min(loads_[id] + (buffer(o) ? 1 : loads_[o]), 2);
        if (buffer(o)) continue;
        // Not constants and indices; saturating: a DAG's costs grow with its paths.
        if (reads_[o]) inline_cost_[id] = std::min(inline_cost_[id] + inline_cost_[o], kCostCap);
        traps_[id] = traps_[id] || traps_[o];
      }
    }
  }

  /** The largest inline cost counted: far above any decision's threshold, far below overflow. */
  static constexpr int64_t kCostCap = int64_t(1) << 40;

  /** A view with bounds tests (pad) whose tests the options cost. */
  bool masked_view(NodeId id) const {
    const Node& n = g_[id];
    return opt_.masked_view_cost > 0 && n.op == Op::view && !n.view.mask.empty();
  }

  bool has_buffer_by_nature(NodeId id) const {
    Op op = g_[id].op;
    return op == Op::input || op == Op::reduce || op == Op::scan || op == Op::scatter ||
           op == Op::extern_call || source_.count(id);
  }

  /** Gathers read their source from a buffer and calls take whole buffers (build_statements). */
  void mark_gather_and_call_sources() {
    for (const Node& n : g_.nodes) {
      if (n.op == Op::gather) {
        NodeId src = n.operands[0];
        source_.insert(g_[src].op == Op::view ? g_[src].operands[0] : src);
      }
      if (n.op == Op::extern_call)
        for (NodeId o : n.operands)
          source_.insert(o);
    }
  }

  void decide(NodeId id) {
    const Node& n = g_[id];
    ValueDecision& d = plan_.nodes[id];
    IntExpr total = 0;
    std::set<std::string> seen;
    for (const Use& u : uses_[id])
      if (seen.insert(u.key()).second) total = total + factor_of(u);
    d.inline_factor = total;
    if (n.op == Op::input) {
      d.kind = ValueDecision::Kind::materialized;
      d.reason = "input";
    } else if (has_buffer_by_nature(id)) {
      d.kind = ValueDecision::Kind::materialized;
      d.reason = source_.count(id) && n.op != Op::reduce && n.op != Op::scan &&
                         n.op != Op::scatter && n.op != Op::extern_call
                     ? "a gather's source or a call's operand"
                     : std::string(op_name(n.op));
    } else if ((n.op == Op::view && !(masked_view(id) && nominal(total) > opt_.max_factor)) ||
               inline_cost_[id] == 0 || !reads_[id]) {
      // Views are index arithmetic over their operand, which is stored if anything is; a
      // value that reads no memory is constants and indices, which compilers hoist or fold.
      d.kind = ValueDecision::Kind::free;
      d.reason = n.op == Op::view ? "view" : "constants and indices";
    } else if (output_.count(id) && readers_[id] > 0 && !traps_[id]) {
      d.kind = ValueDecision::Kind::stored;
      d.reason = "output read back";
    } else if (output_.count(id)) {
      d.kind = ValueDecision::Kind::stored;
      d.reason = "output";
    } else {
      choose(id, total, d);
    }
    if (d.kind == ValueDecision::Kind::inlined || d.kind == ValueDecision::Kind::free) {
      d.factor = total;
      forward_inline(id);
    } else {
      d.factor = 1;
      forward_root(id);
    }
  }

  /** Stored or inlined, for a computed node that is neither an output nor a buffer by nature. */
  void choose(NodeId id, const IntExpr& total, ValueDecision& d) {
    int64_t f = nominal(total);
    d.kind = ValueDecision::Kind::inlined;
    d.reason = f <= 1 ? "inline: evaluated once" : "inline: within the bound";
    if (!opt_.enabled) {
      d.reason = "inline: planner off";
      return;
    }
    if (traps_[id]) {
      d.reason = "inline: divides integers";
      return;
    }
    if (opt_.online_softmax && weighs_softmax(id)) {
      d.reason = "inline: online softmax";
      return;
    }
    // Past the bound, a value of one load whose extra evaluations cost less than one memory
    // access per element (attention's scaled score, read by the max and the exponential)
    // stays inline: each reader loads one element either way, and storing it would add a pass
    // over memory (a store, where its readers sit in another kernel).
    if (f > opt_.max_factor &&
        (loads_[id] > 1 || static_cast<double>(f - 1) * static_cast<double>(inline_cost_[id]) >
                               static_cast<double>(kMemoryCost))) {
      d.kind = ValueDecision::Kind::stored;
      d.reason = "stored: multiplied";
      return;
    }
    if (f > opt_.max_factor) d.reason = "inline: one load, cheaper than a store";
    // Read f times inline, or stored once and read back f times.
    if (f > 1 && static_cast<double>(f - 1) * static_cast<double>(inline_cost_[id]) >
                     static_cast<double>(kMemoryCost) * (static_cast<double>(f) + 1)) {
      d.kind = ValueDecision::Kind::stored;
      d.reason = "stored: shared";
    }
  }

  /** A root computes the node over its own shape: its operands are used at its iterators. */
  void forward_root(NodeId id) {
    const Node& n = g_[id];
    switch (n.op) {
      case Op::input:
        return;
      case Op::reduce: {
        const Shape& src = g_[n.operands[0]].shape;
        add_use(n.operands[0], {id, src, iterators(src.size())});
        return;
      }
      case Op::scatter: {
        add_use(n.operands[0], {id, n.shape, iterators(n.shape.size())});
        const Shape& at = g_[n.operands[1]].shape;
        add_use(n.operands[1], {id, at, iterators(at.size())});
        add_use(n.operands[2], {id, at, iterators(at.size())});
        return;
      }
      case Op::extern_call:
        return;  // its operands are buffers of their own (sources)
      default:
        forward_inline_at(id, {id, n.shape, iterators(n.shape.size())});
    }
  }

  /** An inlined node passes each of its uses on to its operands. */
  void forward_inline(NodeId id) {
    std::vector<Use> uses = uses_[id];
    std::set<std::string> seen;
    for (const Use& u : uses)
      if (seen.insert(u.key()).second) forward_inline_at(id, u);
  }

  /** Node `id` evaluated at use `u`: its operands' uses. */
  void forward_inline_at(NodeId id, const Use& u) {
    const Node& n = g_[id];
    if (n.op == Op::view) {
      std::map<std::string, IntExpr> sub;
      for (size_t k = 0; k < u.index.size(); ++k)
        sub["%" + std::to_string(k)] = u.index[k];
      Index inner;
      for (const IntExpr& x : n.view.index)
        inner.push_back(x.substitute(sub));
      add_use(n.operands[0], {u.root, u.domain, inner});
      return;
    }
    if (n.op == Op::gather) {
      add_use(n.operands[1], u);
      return;  // the source is read from its buffer
    }
    if (n.op == Op::scan) {  // its own statement over its shape
      add_use(n.operands[0], {id, n.shape, iterators(n.shape.size())});
      return;
    }
    for (NodeId o : n.operands)
      add_use(o, u);
  }

  void add_use(NodeId id, Use u) { uses_[id].push_back(std::move(u)); }

  /** Whether a softmax-weighted sum reads node `id` inline other than along its lanes: the
   *  weights and what scales them stay inline for the fused kernel, but a value it multiplies
   *  along the lanes (v, computed by another contraction plus a bias, say; q and k when they
   *  are slices of the same node) is planned as any other, since the fused kernel loads it from
   *  memory. */
  bool weighs_softmax(NodeId id) {
    for (const Use& u : uses_[id])
      if (softmax_weighted_sum(u.root) && !along_lanes(u)) return true;
    return false;
  }

  /** Whether use `u` of a softmax-weighted sum reads along the sum's lanes: an iterator of its
   *  domain that the weights (the exponentials of differences from a max) do not read, as the
   *  previous pass found them (the first pass knows none and says no). */
  bool along_lanes(const Use& u) const {
    auto w = weight_iterators_.find(u.root);
    if (w == weight_iterators_.end()) return false;
    std::set<std::string> used;
    for (const IntExpr& i : u.index)
      i.collect_vars(used);
    for (const std::string& v : used)
      if (!w->second.count(v)) return true;
    return false;
  }

  /** Records the iterators by which softmax-weighted sums read exponential `id` (their
   *  weights), for the next pass's along_lanes. */
  void note_weights(NodeId id) {
    if (g_[id].op != Op::exp2) return;
    std::set<NodeId> visited;
    if (!reaches_exp_of_max(id, visited, false)) return;
    for (const Use& u : uses_[id])
      if (softmax_weighted_sum(u.root))
        for (const IntExpr& i : u.index)
          i.collect_vars(next_weight_iterators_[u.root]);
  }

  /** Whether `root` is a sum in f16 or bf16 whose operand exponentiates the difference from a
   *  max over the axes it sums (a softmax-weighted sum that the GPU fuses,
   *  scheduler/online_softmax.h), memoised. */
  bool softmax_weighted_sum(NodeId root) {
    auto it = softmax_.find(root);
    if (it != softmax_.end()) return it->second;
    const Node& r = g_[root];
    bool found = false;
    // The fused kernel runs both products on tensor cores, in f16 or bf16 only
    // (scheduler/online_softmax.h); elsewhere P·V is a plain contraction, which must not
    // recompute the weights per output lane.
    const bool half = r.dtype == DType::f16 || r.dtype == DType::bf16;
    if (r.op == Op::reduce && r.reduce_kind == ReduceKind::sum && half) {
      std::set<NodeId> visited;
      found = reaches_exp_of_max(r.operands[0], visited, false);
    }
    softmax_.emplace(root, found);
    return found;
  }

  /** Whether an inline walk from `id` meets an exp2 whose operand reads a max reduction. */
  bool reaches_exp_of_max(NodeId id, std::set<NodeId>& visited, bool under_exp) {
    if (!visited.insert(id * 2 + (under_exp ? 1 : 0)).second) return false;
    const Node& n = g_[id];
    if (under_exp && n.op == Op::reduce && n.reduce_kind == ReduceKind::max) return true;
    if (n.op == Op::input || n.op == Op::reduce || n.op == Op::scan || n.op == Op::scatter ||
        n.op == Op::extern_call)
      return false;
    bool exp = under_exp || n.op == Op::exp2;
    for (NodeId o : n.operands)
      if (reaches_exp_of_max(o, visited, exp)) return true;
    return false;
  }

  const Graph& g_;
  const ValueOptions& opt_;
  ValuePlan plan_;
  std::vector<std::vector<Use>> uses_;
  std::vector<int> readers_;
  std::set<NodeId> output_;
  std::set<NodeId> source_;
  std::vector<int64_t> inline_cost_;
  std::vector<bool> traps_;
  std::vector<bool> reads_;  ///< the inline expression reads a buffer
  std::vector<int> loads_;   ///< the loads of its inline expression, 2 standing for 2 or more
  std::map<NodeId, bool> softmax_;
  /** Per softmax-weighted sum, the iterators of its domain its weights read (note_weights):
   *  the previous pass's, used by this one, and this pass's, for the next. */
  std::map<NodeId, std::set<std::string>> weight_iterators_, next_weight_iterators_;
};

const char* kind_name(ValueDecision::Kind k) {
  switch (k) {
    case ValueDecision::Kind::inlined:
      return "inline";
    case ValueDecision::Kind::stored:
      return "stored";
    case ValueDecision::Kind::materialized:
      return "buffer";
    case ValueDecision::Kind::free:
      return "free";
  }
  return "?";
}

}  // namespace

ValuePlan plan_values(const Graph& g, const ValueOptions& opt) {
  return Planner(g, opt).run();
}

std::string value_plan_to_text(const Graph& g, const ValuePlan& plan) {
  std::string out;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const ValueDecision& d = plan.nodes.at(id);
    if (d.kind == ValueDecision::Kind::free || g[id].op == Op::input) continue;
    out += "// %" + std::to_string(id) + " " + std::string(op_name(g[id].op)) + " " +
           node_type(g[id]) + ": " + kind_name(d.kind) + " (" + d.reason + "), evaluations x" +
           d.factor.str() + " of its elements";
    if (d.kind != ValueDecision::Kind::inlined && d.inline_factor != IntExpr(0) &&
        d.inline_factor != IntExpr(1))
      out += ", x" + d.inline_factor.str() + " inline";
    out += "\n";
  }
  return out;
}

}  // namespace kiln
