#include "scheduler/split_reduces.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/view.h"

namespace kiln {

namespace {

/** How reduce R is computed split, and how each of its readers reads the result. */
struct Split {
  SplitAddress address;  ///< R's shape split (shape, dims_of; 0 for a unit dimension left out)
  std::map<NodeId, std::vector<IntExpr>> at;  ///< reader view -> its index into R'
};

/** The split every reader of reduce `r` agrees on, or nullopt. */
std::optional<Split> plan_split(const Graph& g, NodeId r, const std::set<NodeId>& readers,
                                const SizeFacts& facts) {
  const Node& n = g[r];
  if ((n.op != Op::reduce && !is_pointwise(n.op)) || !n.domain.empty() || readers.empty())
    return std::nullopt;
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
  // A kept dimension of one point that every reader reads at 0 (a reduce's, `[B, L, E, 1]`)
  // is left out of the split: its values are stored without it, their innermost dimension the
  // split's last (a head's elements, contiguous for the attention kernel's TMA copies).
  SplitAddress& a = out->address;
  for (size_t d = a.dims_of.size(), p = a.shape.size(); d-- > 0;) {
    p -= a.dims_of[d];
    bool unit = a.dims_of[d] == 1 && n.shape[d] == IntExpr(1);
    for (const auto& [v, index] : out->at)
      unit = unit && index[p].as_constant() == std::optional<int64_t>(0);
    if (!unit) continue;
    a.shape.erase(a.shape.begin() + static_cast<std::ptrdiff_t>(p));
    a.index.erase(a.index.begin() + static_cast<std::ptrdiff_t>(p));
    a.dims_of[d] = 0;
    for (auto& [v, index] : out->at)
      index.erase(index.begin() + static_cast<std::ptrdiff_t>(p));
  }
  return out;
}

/** The lifted nodes of the new graph: old nodes of a split's region read through a view. */
class Rebuild {
 public:
  Rebuild(const Graph& g, Graph& out, const std::vector<NodeId>& remap,
          const std::set<NodeId>& region)
      : g_(g), out_(out), remap_(remap), region_(region) {}

  /** Old node `id` read through `v` (over v.shape, indexing id's dimensions), in the new
   *  graph: a view pushed down through the region's views (composed), pointwise nodes
   *  (cloned at v's shape) and reduces (computed at v's positions, their reduced axes after
   *  them); a node outside the region is read through the view. */
  NodeId lift(NodeId id, const View& v) {
    std::string key = std::to_string(id) + v.str();
    if (auto m = memo_.find(key); m != memo_.end()) return m->second;
    const Node& n = g_[id];
    NodeId at;
    if (!region_.count(id)) {
      at = out_.view(remap_[id], v);
    } else if (n.op == Op::view) {
      at = lift(n.operands[0], View::compose(v, n.view));
    } else if (is_pointwise(n.op)) {
      Node c = n;
      c.shape = v.shape;
      for (NodeId& o : c.operands)
        o = lift(o, v);
      if (!v.mask.empty()) {  // the clone is read unmasked; its view keeps the mask
        View plain = View::identity(v.shape);
        plain.mask = v.mask;
        c.shape = v.shape;
        at = out_.view(out_.add(std::move(c)), plain);
      } else {
        at = out_.add(std::move(c));
      }
    } else {  // a reduce: its reduced axes appended to v's positions
      const Shape& operand = g_[n.operands[0]].shape;
      View inner;
      inner.shape = v.shape;
      std::vector<int> axes;
      for (size_t d = 0; d < operand.size(); ++d) {
        if (std::find(n.axes.begin(), n.axes.end(), static_cast<int>(d)) == n.axes.end()) {
          inner.index.push_back(v.index[d]);
          continue;
        }
        // A position of extent 1 that reads the reduced axis (the split of R itself) becomes
        // the reduction's; else one is appended.
        std::optional<std::string> p = v.index[d].as_var();
        size_t at = inner.shape.size();
        if (p && (*p)[0] == '%' && v.shape[std::stoul(p->substr(1))] == IntExpr(1))
          at = std::stoul(p->substr(1));
        else
          inner.shape.push_back(1);
        axes.push_back(static_cast<int>(at));
        inner.index.push_back(IntExpr::index(static_cast<int>(at)));
        inner.shape[at] = operand[d];
      }
      std::sort(axes.begin(), axes.end());
      NodeId r = out_.reduce(n.reduce_kind, lift(n.operands[0], inner), axes);
      View drop;  // back to v's positions, the reduced axes at 0
      drop.shape = v.shape;
      drop.index.assign(out_[r].shape.size(), 0);
      for (size_t p = 0; p < v.shape.size(); ++p)
        drop.index[p] = IntExpr::index(static_cast<int>(p));
      drop.mask = v.mask;
      at = out_.view(r, drop);
    }
    memo_[key] = at;
    return at;
  }

 private:
  const Graph& g_;
  Graph& out_;
  const std::vector<NodeId>& remap_;
  const std::set<NodeId>& region_;
  std::map<std::string, NodeId> memo_;
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
  std::set<NodeId> region;  // nodes computed inside a split (not emitted on their own)
  for (NodeId id = static_cast<NodeId>(g.size()) - 1; id >= 0; --id) {
    if (pinned.count(id) || region.count(id)) continue;
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
                    " of a value read split into " + std::to_string(a.dims_of[d]) + ")";
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
    // The region: the value and what it alone reads through views, pointwise nodes and
    // reduces (a bias added to a projection), each read only from inside the region.
    region.insert(id);
    for (NodeId q = id - 1; q >= 0; --q) {
      const Node& n = g[q];
      if (pinned.count(q) || readers[q].empty() || !n.domain.empty() ||
          (n.op != Op::view && n.op != Op::reduce && !is_pointwise(n.op)))
        continue;
      bool inside = true;
      for (NodeId r : readers[q])
        inside = inside && region.count(r);
      if (inside) region.insert(q);
    }
    splits.emplace(id, *s);
  }
  if (splits.empty()) return 0;
  Graph out;
  out.name = g.name;
  out.size_vars = g.size_vars;
  out.checks = g.checks;
  std::vector<NodeId> remap(g.size(), -1);
  std::map<NodeId, NodeId> split_of;  // reader view -> the split value it reads
  for (const auto& [id, s] : splits)
    for (NodeId v : readers[id])
      split_of[v] = id;
  Rebuild rebuild(g, out, remap, region);
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    Node n = g[id];
    for (NodeId& o : n.operands)
      o = remap[o];
    if (auto r = split_of.find(id); r != split_of.end()) {
      // A reader: the split value at the reader's split index.
      View v;
      v.shape = n.shape;
      v.index = splits.at(r->second).at.at(id);
      v.mask = n.view.mask;
      remap[id] = out.view(remap[r->second], v);
      continue;
    }
    auto s = splits.find(id);
    if (s == splits.end()) {
      if (!region.count(id)) remap[id] = out.add(std::move(n));
      continue;
    }
    // The value read through its split: each of its dimensions at the split positions it
    // became.
    const SplitAddress& a = s->second.address;
    View lifted;
    lifted.shape = a.shape;
    for (size_t d = 0, p = 0; d < a.dims_of.size(); p += a.dims_of[d++]) {
      IntExpr index = 0, stride = 1;
      for (size_t k = a.dims_of[d]; k-- > 0;) {
        index = index + stride * IntExpr::index(static_cast<int>(p + k));
        stride = stride * a.shape[p + k];
      }
      lifted.index.push_back(index);
    }
    remap[id] = rebuild.lift(id, lifted);
  }
  for (NodeId i : g.inputs)
    out.inputs.push_back(remap[i]);
  for (const GraphOutput& o : g.outputs)
    out.outputs.push_back({o.name, remap[o.node]});
  g = std::move(out);
  return static_cast<int>(splits.size());
}

}  // namespace kiln
