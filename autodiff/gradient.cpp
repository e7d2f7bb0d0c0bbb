#include "autodiff/gradient.h"

#include <algorithm>

#include "autodiff/grad_rules.h"

namespace kiln {

namespace {

NodeId find_input(const Graph& g, const std::string& name) {
  for (NodeId id : g.inputs)
    if (g[id].name == name) return id;
  return -1;
}

std::string input_list(const Graph& g) {
  std::string out;
  for (NodeId id : g.inputs)
    out += (out.empty() ? "" : ", ") + g[id].name;
  return out.empty() ? "none" : out;
}

/** The chosen inputs' nodes; std::invalid_argument for an unknown, repeated or non-float one. */
std::vector<NodeId> resolve_wrt(const Graph& g, const std::vector<std::string>& wrt) {
  if (wrt.empty())
    throw std::invalid_argument("no input to differentiate '" + g.name +
                                "' with respect to; its inputs are " + input_list(g));
  std::vector<NodeId> out;
  for (const std::string& name : wrt) {
    NodeId id = find_input(g, name);
    if (id < 0)
      throw std::invalid_argument("'" + g.name + "' has no input '" + name + "'; its inputs are " +
                                  input_list(g));
    if (!is_float(g[id].dtype))
      throw std::invalid_argument("input '" + name + "' of '" + g.name + "' is " +
                                  std::string(dtype_name(g[id].dtype)) +
                                  "; gradients are taken with respect to float inputs only");
    if (std::find(out.begin(), out.end(), id) != out.end())
      throw std::invalid_argument("input '" + name +
                                  "' is named twice in the inputs to "
                                  "differentiate with respect to");
    out.push_back(id);
  }
  return out;
}

/** Which nodes depend on one of `wrt`. */
std::vector<bool> depends_on(const Graph& g, const std::vector<NodeId>& wrt) {
  std::vector<bool> active(g.size(), false);
  for (NodeId id : wrt)
    active[id] = true;
  for (size_t i = 0; i < g.size(); ++i)
    for (NodeId o : g[i].operands)
      if (active[o]) active[i] = true;
  return active;
}

/** `g` without the nodes no output needs (inputs stay, in order). */
Graph prune(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (const GraphOutput& o : g.outputs)
    live[o.node] = true;
  for (NodeId id : g.inputs)
    live[id] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (NodeId o : g[i].operands)
        live[o] = true;
  Graph out = g;
  out.nodes.clear();
  std::vector<NodeId> remap(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!live[i]) continue;
    Node n = g[i];
    for (NodeId& o : n.operands)
      o = remap[o];
    remap[i] = out.add(std::move(n));
  }
  for (NodeId& id : out.inputs)
    id = remap[id];
  for (GraphOutput& o : out.outputs)
    o.node = remap[o.node];
  return out;
}

}  // namespace

std::string grad_name(const std::string& name, const std::vector<std::string>& taken) {
  std::string out = "d" + name;
  while (std::find(taken.begin(), taken.end(), out) != taken.end())
    out += "_";
  return out;
}

Graph gradient(const Graph& forward, const std::vector<std::string>& wrt) {
  std::vector<NodeId> chosen = resolve_wrt(forward, wrt);
  Graph g = forward;
  g.name = forward.name + "_grad";
  g.outputs.clear();
  autodiff::GradContext ctx(g, depends_on(forward, chosen));
  std::vector<std::string> taken = forward.size_vars;
  for (NodeId id : forward.inputs)
    taken.push_back(forward[id].name);
  for (const GraphOutput& out : forward.outputs) {
    const Node& y = forward[out.node];
    if (!is_float(y.dtype)) continue;
    std::string name = grad_name(out.name, taken);
    taken.push_back(name);
    ctx.accumulate(out.node, g.input(name, y.dtype, y.shape, false));
  }
  for (NodeId n = NodeId(forward.size()) - 1; n >= 0; --n)
    if (ctx.adjoint(n) >= 0 && forward[n].op != Op::input)
      autodiff::apply_rule(ctx, n, ctx.adjoint(n));
  for (NodeId id : chosen) {
    NodeId d = ctx.adjoint(id);
    if (d < 0) d = g.constant(forward[id].dtype, forward[id].shape, 0);
    std::string name = grad_name(forward[id].name, taken);
    taken.push_back(name);
    g.outputs.push_back({name, d});
  }
  return prune(g);
}

}  // namespace kiln
