#include "scheduler/split_padding.h"

#include <map>
#include <optional>
#include <set>

namespace kiln {

namespace {

/** The padding P adds along a dimension, `extra`, is a few elements: at most kMaxPadding at
 *  two very different sizes (a pad's amount, whatever the sizes; not a range that grows). */
constexpr int64_t kMaxPadding = 256;
bool small_padding(const IntExpr& extra) {
  for (int64_t size : {64, 4096}) {
    std::optional<int64_t> v = eval_at(extra, size);
    if (!v || *v < 0 || *v > kMaxPadding) return false;
  }
  return true;
}

/** Whether `v` reads an element of its source more than once: a variable of its index space
 *  that no index uses (a broadcast), or an index that adds two variables (a window). */
bool rereads(const View& v) {
  std::set<std::string> used;
  for (const IntExpr& e : v.index) {
    std::set<std::string> vars;
    e.collect_vars(vars);
    int views = 0;
    for (const std::string& name : vars)
      if (name[0] == '%') {
        used.insert(name);
        ++views;
      }
    if (views >= 2) return true;
  }
  for (size_t k = 0; k < v.shape.size(); ++k)
    if (!used.count("%" + std::to_string(k)) && v.shape[k].as_constant() != 1) return true;
  return false;
}

/** P and V' for view node `v` of source shape `src`, or nullopt when it does not qualify. */
struct Split {
  View padded;  ///< P: a view of the source
  View window;  ///< V': a view of P
};

std::optional<Split> plan_split(const Node& v, const Shape& src) {
  const View& view = v.view;
  if (view.mask.empty() || view.index.size() != src.size()) return std::nullopt;
  // Each constraint tests one source dimension's bounds, as pad makes them.
  std::map<size_t, bool> tested;
  for (const MaskBound& m : view.mask) {
    bool found = false;
    for (size_t d = 0; d < src.size() && !found; ++d)
      if (m.expr == view.index[d] && m.bound == src[d] && !tested.count(d)) {
        tested[d] = true;
        found = true;
      }
    if (!found) return std::nullopt;
  }
  Split s;
  s.padded.shape = src;
  s.window.shape = view.shape;
  s.window.index = view.index;
  for (size_t d = 0; d < src.size(); ++d) {
    IntExpr at = IntExpr::index(static_cast<int>(d));
    s.padded.index.push_back(at);
    if (!tested.count(d)) continue;
    // The range of index[d] over the view's points: its constant part plus each variable's
    // coefficient times that variable's smallest or largest value.
    const IntExpr& e = view.index[d];
    std::map<std::string, IntExpr> zero;
    IntExpr lo = 0, hi = 0;
    for (size_t k = 0; k < view.shape.size(); ++k) {
      std::string name = "%" + std::to_string(k);
      std::optional<int64_t> a = affine_coefficient(e, name);
      if (!a) return std::nullopt;
      zero[name] = 0;
      if (*a > 0) hi = hi + IntExpr(*a) * (view.shape[k] - 1);
      if (*a < 0) lo = lo + IntExpr(*a) * (view.shape[k] - 1);
    }
    IntExpr base = e.substitute(zero);
    std::set<std::string> left;
    base.collect_vars(left);
    for (const std::string& name : left)
      if (!name.empty() && name[0] == '%') return std::nullopt;
    lo = base + lo;
    hi = base + hi;
    s.padded.shape[d] = hi - lo + 1;
    s.padded.index[d] = at + lo;  // P[p] reads S[p + lo]: P's element 0 is the range's first
    s.padded.mask.push_back({at + lo, src[d]});
    s.window.index[d] = e - lo;
  }
  // Worth it: P is S with a few elements of padding, and V reads P's elements again and again.
  for (size_t d = 0; d < src.size(); ++d)
    if (tested.count(d) && !small_padding(s.padded.shape[d] - src[d])) return std::nullopt;
  if (!rereads(view)) return std::nullopt;
  return s;
}

}  // namespace

int split_padding(Graph& g) {
  std::vector<std::optional<Split>> splits(g.size());
  int count = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Node& n = g[id];
    if (n.op != Op::view) continue;
    splits[id] = plan_split(n, g[n.operands[0]].shape);
    count += splits[id].has_value();
  }
  if (count == 0) return 0;
  Graph out;
  out.name = g.name;
  out.size_vars = g.size_vars;
  out.checks = g.checks;
  std::vector<NodeId> remap(g.size(), -1);
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    Node n = g[id];
    for (NodeId& o : n.operands)
      o = remap[o];
    if (splits[id]) {
      Node padded = n;  // the view of the source, with the tests
      padded.shape = splits[id]->padded.shape;
      padded.view = splits[id]->padded;
      NodeId p = out.add(std::move(padded));
      n.operands = {p};  // the window over it, without
      n.view = splits[id]->window;
    }
    remap[id] = out.add(std::move(n));
  }
  for (NodeId i : g.inputs)
    out.inputs.push_back(remap[i]);
  for (const GraphOutput& o : g.outputs)
    out.outputs.push_back({o.name, remap[o.node]});
  g = std::move(out);
  return count;
}

}  // namespace kiln
