#include "scheduler/split_reduce_runs.h"

#include <algorithm>
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

}  // namespace

int split_reduce_runs(Graph& g) {
  std::vector<bool> split(g.size(), false);
  int count = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Node& n = g[id];
    split[id] = n.op == Op::reduce && n.domain.empty() && runs_of(g, id).size() > 1;
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
