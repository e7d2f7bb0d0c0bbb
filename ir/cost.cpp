#include "ir/cost.h"

#include <limits>
#include <vector>

#include "ir/sizes.h"

namespace kiln {

namespace {

int64_t numel(const Graph& g, NodeId id, const std::map<std::string, int64_t>& sizes) {
  const Node& n = g[id];
  std::string what = "node %" + std::to_string(id) + " of '" + g.name + "'";
  return checked_numel(eval_shape(n.shape, sizes), what, std::numeric_limits<int64_t>::max());
}

int64_t mul(int64_t a, int64_t b, const Graph& g) {
  std::optional<int64_t> r = checked_mul(a, b);
  if (!r) throw SizeError("the cost of '" + g.name + "' overflows int64");
  return *r;
}

int64_t add(int64_t a, int64_t b, const Graph& g) {
  std::optional<int64_t> r = checked_add(a, b);
  if (!r) throw SizeError("the cost of '" + g.name + "' overflows int64");
  return *r;
}

/** The flops of one node (see cost.h). */
int64_t node_flops(const Graph& g, NodeId id, const std::map<std::string, int64_t>& sizes) {
  const Node& n = g[id];
  switch (op_info(n.op).cls) {
    case OpClass::data:  // a scatter combines one value per position
      return n.op == Op::scatter ? numel(g, n.operands[1], sizes) : 0;
    case OpClass::unary:
    case OpClass::binary:
    case OpClass::ternary:
      return mul(numel(g, id, sizes), n.op == Op::mulacc ? 2 : 1, g);
    case OpClass::reduce:
    case OpClass::scan:
      return numel(g, n.operands[0], sizes);
    case OpClass::extern_call:
      if (n.name == "gemm") {  // a[M, K] @ b[K, N]
        std::vector<int64_t> a = eval_shape(g[n.operands[0]].shape, sizes);
        int64_t n_cols = eval_shape(g[n.operands[1]].shape, sizes).at(1);
        return mul(mul(mul(2, a.at(0), g), a.at(1), g), n_cols, g);
      }
      throw std::runtime_error("the cost model has no entry for extern routine '" + n.name + "'");
  }
  return 0;
}

}  // namespace

GraphCost graph_cost(const Graph& g, const std::map<std::string, int64_t>& sizes) {
  std::vector<bool> live(g.size(), false);
  for (const GraphOutput& o : g.outputs)
    live[o.node] = true;
  for (size_t k = g.size(); k-- > 0;)  // operands precede their users
    if (live[k])
      for (NodeId op : g[static_cast<NodeId>(k)].operands)
        live[op] = true;
  GraphCost c;
  for (size_t k = 0; k < g.size(); ++k)
    if (live[k]) c.flops = add(c.flops, node_flops(g, static_cast<NodeId>(k), sizes), g);
  auto traffic = [&](NodeId id) {
    return mul(numel(g, id, sizes), dtype_bits(g[id].dtype) / 8, g);
  };
  for (NodeId in : g.inputs)
    c.bytes = add(c.bytes, traffic(in), g);
  for (const GraphOutput& o : g.outputs)
    c.bytes = add(c.bytes, traffic(o.node), g);
  return c;
}

}  // namespace kiln
