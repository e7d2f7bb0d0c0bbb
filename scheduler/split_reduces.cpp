#include "scheduler/split_reduces.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/view.h"

namespace kiln {

namespace {

bool pointwise(Op op) {
  OpClass c = op_info(op).cls;
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::ternary || op == Op::cast ||
         op == Op::bitcast;
}

/** How reduce R is computed split, and how each of its readers reads the result. */
struct Split {
  SplitAddress address;                       ///< R's shape split (shape, dims_of)
  std::map<NodeId, std::vector<IntExpr>> at;  ///< reader view -> its index into R'
};

/** The split every reader of reduce `r` agrees on, or nullopt. */
std::optional<Split> plan_split(const Graph& g, NodeId r, const std::set<NodeId>& readers,
                                const SizeFacts& facts) {
  const Node& n = g[r];
  if (n.op != Op::reduce || !n.domain.empty() || readers.empty()) return std::nullopt;
  std::optional<Split> out;
  for (NodeId v : readers) {
    const Node& view = g[v];
    if (view.op != Op::view) return std::nullopt;
    std::optional<SplitAddress> a = split_address(view.view.index, view.shape, n.shape, facts);
    if (!a) return std::nullopt;
    if (!out) {
      out = Split{*a, {}};
    } else if (!same_shape(out->address.shape, a->shape) || out->address.dims_of != a->dims_of) {
      return std::nullopt;
    }
    out->at[v] = a->index;
  }
  return out;
}

/** Nodes of `g` rebuilt with the split reduces. */
class Rebuild {
 public:
  explicit Rebuild(Graph& out) : out_(out) {}

  /** Node `id` of the new graph read through `v`, the view pushed down through pointwise
   *  nodes into the views below them (which compose with it). */
  NodeId lift(NodeId id, const View& v) {
    if (auto m = memo_.find(id); m != memo_.end()) return m->second;
    const Node& n = out_[id];
    NodeId at;
    if (pointwise(n.op) || n.op == Op::constant) {
      Node c = n;
      c.shape = v.shape;
      for (NodeId& o : c.operands)
        o = lift(o, v);
      at = out_.add(std::move(c));
    } else {
      at = out_.view(id, v);
    }
    memo_[id] = at;
    return at;
  }

  void reset() { memo_.clear(); }

 private:
  Graph& out_;
  std::map<NodeId, NodeId> memo_;
};

}  // namespace

int split_reduces(Graph& g) {
  SizeFacts facts;
  for (const SizeCheck& c : g.checks)
    if (c.relation.rel == Relation::eq) facts.assume(c.relation);
  std::vector<std::set<NodeId>> readers(g.size());
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    for (NodeId o : g[id].operands)
      readers[o].insert(id);
  std::set<NodeId> pinned;  // outputs, and the sources of gathers (read from their buffers)
  for (const GraphOutput& o : g.outputs)
    pinned.insert(o.node);
  for (const Node& n : g.nodes)
    if (n.op == Op::gather) pinned.insert(n.operands[0]);
  std::map<NodeId, Split> splits;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    if (pinned.count(id)) continue;
    bool gathered = false;
    for (NodeId r : readers[id])
      gathered = gathered || pinned.count(r);
    if (gathered) continue;
    std::optional<Split> s = plan_split(g, id, readers[id], facts);
    if (!s) continue;
    // The operand is read at the split's radix, which must rebuild each split dimension
    // exactly: the readers' checks say so where R has elements; checked outright, so that the
    // split views of the operand's inputs alias them exactly (build_statements).
    const SplitAddress& a = s->address;
    for (size_t d = 0, p = 0; d < a.dims_of.size(); p += a.dims_of[d++]) {
      if (a.dims_of[d] < 2) continue;
      IntExpr whole = 1;
      for (size_t k = 0; k < a.dims_of[d]; ++k)
        whole = whole * a.shape[p + k];
      SizeRelation exact{g[id].shape[d], Relation::eq, whole};
      if (facts.decide(exact) == Truth::proved) continue;
      SizeCheck check;
      check.relation = exact;
      check.claim = "shape equality '" + exact.str() + "' (dimension " + std::to_string(d) +
                    " of a reduce read split into " + std::to_string(a.dims_of[d]) + ")";
      for (const SizeCheck& c : g.checks)  // where the readers' split comes from
        if (c.relation.rel == Relation::eq &&
            c.relation.str().find(whole.str()) != std::string::npos) {
          check.site = c.site;
          check.trace = c.trace;
          break;
        }
      facts.assume(exact);
      g.checks.push_back(check);
    }
    splits.emplace(id, *s);
  }
  if (splits.empty()) return 0;
  Graph out;
  out.name = g.name;
  out.size_vars = g.size_vars;
  out.checks = g.checks;
  std::vector<NodeId> remap(g.size(), -1);
  std::map<NodeId, NodeId> split_of;  // reader view -> the split reduce it reads
  Rebuild rebuild(out);
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    Node n = g[id];
    for (NodeId& o : n.operands)
      o = remap[o];
    if (auto r = split_of.find(id); r != split_of.end()) {
      // A reader: the split reduce at the reader's split index.
      View v;
      v.shape = n.shape;
      v.index = splits.at(r->second).at.at(id);
      v.mask = n.view.mask;
      remap[id] = out.view(remap[r->second], v);
      continue;
    }
    auto s = splits.find(id);
    if (s == splits.end()) {
      remap[id] = out.add(std::move(n));
      continue;
    }
    // The operand read through the split: each dimension of R, split or not, at the positions
    // of the split operand it became (the reduced ones at their full extent).
    const SplitAddress& a = s->second.address;
    const Shape& operand = g[g[id].operands[0]].shape;
    View lifted;
    std::vector<int> axes;
    size_t p = 0;
    for (size_t d = 0; d < operand.size(); ++d) {
      bool reduced = std::find(n.axes.begin(), n.axes.end(), static_cast<int>(d)) != n.axes.end();
      if (reduced) axes.push_back(static_cast<int>(p));
      for (size_t k = 0; k < a.dims_of[d]; ++k)
        lifted.shape.push_back(reduced ? operand[d] : a.shape[p + k]);
      IntExpr index = 0, stride = 1;
      for (size_t k = a.dims_of[d]; k-- > 0;) {
        index = index + stride * IntExpr::index(static_cast<int>(p + k));
        stride = stride * a.shape[p + k];
      }
      lifted.index.push_back(index);
      p += a.dims_of[d];
    }
    rebuild.reset();
    NodeId operand_split = rebuild.lift(n.operands[0], lifted);
    remap[id] = out.reduce(n.reduce_kind, operand_split, axes);
    for (NodeId v : readers[id])
      split_of[v] = id;
  }
  for (NodeId i : g.inputs)
    out.inputs.push_back(remap[i]);
  for (const GraphOutput& o : g.outputs)
    out.outputs.push_back({o.name, remap[o.node]});
  g = std::move(out);
  return static_cast<int>(splits.size());
}

}  // namespace kiln
