#include "scheduler/split_reduce_runs.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace kiln {

namespace {

/** Per position of `id`'s shape, the dimension of the memory it reads that the position walks
 *  alone: through pointwise nodes, the first view whose every position of extent above one
 *  indexes one source dimension by itself (`x[b, c, p]` read as [C, B, P]: 1, 0, 2), or the
 *  identity where a node is read as it is. Empty where none does. */
std::vector<int> source_dims(const Graph& g, NodeId id) {
  const Node& n = g[id];
  if (is_pointwise(n.op)) {
    for (NodeId o : n.operands)
      if (g[o].shape.size() == n.shape.size()) {
        std::vector<int> dims = source_dims(g, o);
        if (!dims.empty()) return dims;
      }
    return {};
  }
  std::vector<int> dims(n.shape.size());
  if (n.op != Op::view) {
    for (size_t p = 0; p < dims.size(); ++p)
      dims[p] = static_cast<int>(p);
    return dims;
  }
  for (size_t p = 0; p < dims.size(); ++p) {
    dims[p] = -1;
    if (n.shape[p] == IntExpr(1)) continue;
    for (size_t d = 0; d < n.view.index.size(); ++d)
      if (n.view.index[d] == IntExpr::index(static_cast<int>(p))) dims[p] = static_cast<int>(d);
    if (dims[p] < 0) return {};
  }
  return dims;
}

/** The reduced axes of reduce `r` in runs that are contiguous in the memory its operand
 *  reads, innermost run first: axes whose source dimensions follow one another with no kept
 *  dimension of more than one point between them. One run where that memory is unknown. */
std::vector<std::vector<int>> runs_of(const Graph& g, NodeId r) {
  const Node& n = g[r];
  const Shape& shape = g[n.operands[0]].shape;
  std::vector<int> dims = source_dims(g, n.operands[0]);
  if (dims.empty() || n.axes.size() < 2) return {n.axes};
  // The operand's positions in the order of their source dimensions, the unit ones left out.
  std::vector<int> order;
  for (size_t p = 0; p < shape.size(); ++p)
    if (dims[p] >= 0) order.push_back(static_cast<int>(p));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return dims[a] < dims[b]; });
  std::vector<std::vector<int>> runs;
  bool open = false;
  for (int p : order) {
    bool reduced = std::find(n.axes.begin(), n.axes.end(), p) != n.axes.end();
    if (reduced && !open) runs.emplace_back();
    if (reduced) runs.back().push_back(p);
    open = reduced;
  }
  // A whole tensor reduced to one value over two or more dimensions (a loss's mean): its
  // innermost dimension first, a row sum per row, then the rest over the rows' sums.
  bool scalar = runs.size() == 1 && runs[0].size() >= 2;
  for (size_t p = 0; p < shape.size() && scalar; ++p)
    scalar = std::find(n.axes.begin(), n.axes.end(), static_cast<int>(p)) != n.axes.end() ||
             shape[p] == IntExpr(1);
  if (scalar) {
    int inner = runs[0].back();
    runs[0].pop_back();
    runs.push_back({inner});
  }
  for (std::vector<int>& run : runs)
    std::sort(run.begin(), run.end());
  if (runs.size() < 2) return {n.axes};
  return {runs.rbegin(), runs.rend()};
}

/** Whether a node that reads `r`'s value, directly or through others, has more than one
 *  element: the one value is read back over a tensor (a vector's mean subtracted from each of
 *  its elements), so the sum is a statistic of work that reads the row again, which its kernel
 *  keeps (a block that sums the row and then normalises it). */
bool read_back(const Graph& g, NodeId r) {
  std::vector<bool> reached(g.size(), false);
  reached[r] = true;
  for (NodeId id = r + 1; id < static_cast<NodeId>(g.size()); ++id) {
    for (NodeId o : g[id].operands)
      reached[id] = reached[id] || reached[o];
    if (!reached[id]) continue;
    for (const IntExpr& d : g[id].shape)
      if (d != IntExpr(1)) return true;
  }
  return false;
}

/** The one axis of more than one point that sum `r` reduces when its result is one value (every
 *  other dimension of its operand is 1) that nothing reads back over a tensor, and that axis may
 *  be long: -1 otherwise, and where its extent is a constant under two slices
 *  (split_scalar_sum). */
int scalar_sum_axis(const Graph& g, NodeId r) {
  const Node& n = g[r];
  if (n.reduce_kind != ReduceKind::sum || n.axes.size() != 1 || !n.domain.empty()) return -1;
  const Shape& shape = g[n.operands[0]].shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int>(d) != n.axes[0] && shape[d] != IntExpr(1)) return -1;
  std::optional<int64_t> extent = shape[n.axes[0]].as_constant();
  if ((extent && *extent < 2 * kScalarSlice) || read_back(g, r)) return -1;
  return n.axes[0];
}

/** Sum `r` (one value over axis `a` of its operand, already in `out` as `at`) in slices of
 *  kScalarSlice terms: the operand read as [..., S, kScalarSlice, ...] (S = ⌈R / slice⌉, the
 *  points past R masked to zero), summed over the slice, then over the slices, and read back
 *  at the reduce's shape. */
NodeId split_scalar_sum(Graph& out, const Node& r, NodeId at, int a) {
  const Shape& shape = out[at].shape;
  const IntExpr R = shape[a], L(kScalarSlice);
  View v;
  for (int d = 0; d <= static_cast<int>(shape.size()); ++d)
    v.shape.push_back(d < a        ? shape[d]
                      : d == a     ? floordiv(R + L - IntExpr(1), L)
                      : d == a + 1 ? L
                                   : shape[d - 1]);
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    v.index.push_back(d < a    ? IntExpr::index(d)
                      : d == a ? IntExpr::index(a) * L + IntExpr::index(a + 1)
                               : IntExpr::index(d + 1));
  v.mask.push_back({v.index[a], R});
  NodeId slices = out.reduce(r.reduce_kind, out.view(at, v), {a + 1});
  NodeId total = out.reduce(r.reduce_kind, slices, {a});
  View back;
  back.shape = r.shape;
  for (size_t d = 0; d < v.shape.size(); ++d)
    back.index.push_back(IntExpr(0));
  return out.view(total, back);
}

}  // namespace

int split_reduce_runs(Graph& g) {
  std::vector<bool> split(g.size(), false);
  int count = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Node& n = g[id];
    split[id] = n.op == Op::reduce &&
                ((n.domain.empty() && runs_of(g, id).size() > 1) || scalar_sum_axis(g, id) >= 0);
    count += split[id];
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
    if (!split[id]) {
      remap[id] = out.add(std::move(n));
      continue;
    }
    if (int a = scalar_sum_axis(g, id); a >= 0) {
      remap[id] = split_scalar_sum(out, n, n.operands[0], a);
      continue;
    }
    // Each run reduced in turn, the kept dimensions of one point in place: the shapes (and so
    // the axes' numbers) stay the operand's rank throughout.
    NodeId at = n.operands[0];
    for (const std::vector<int>& run : runs_of(g, id))
      at = out.reduce(n.reduce_kind, at, run);
    remap[id] = at;
  }
  for (NodeId i : g.inputs)
    out.inputs.push_back(remap[i]);
  for (const GraphOutput& o : g.outputs)
    out.outputs.push_back({o.name, remap[o.node]});
  g = std::move(out);
  return count;
}

}  // namespace kiln
