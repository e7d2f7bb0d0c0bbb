#include "autodiff/gradient.h"

#include <algorithm>
#include <map>

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

/** A shape's size as a product: its dimensions that are not constants (by their canonical text)
 *  and the product of those that are. */
struct Extent {
  std::map<std::string, int> symbolic;  // each dimension's text and how often it occurs
  double constant = 1;
};

Extent extent_of(const Shape& shape) {
  Extent e;
  for (const IntExpr& d : shape) {
    if (auto c = d.as_constant())
      e.constant *= double(*c);
    else
      ++e.symbolic[d.key()];
  }
  return e;
}

/** Whether `a` has no more elements than `b` for every binding of the sizes to values >= 1:
 *  a's symbolic dimensions are among b's (with multiplicity), its constant part no larger. */
bool no_larger(const Extent& a, const Extent& b) {
  if (a.constant > b.constant) return false;
  for (const auto& [dim, count] : a.symbolic) {
    auto it = b.symbolic.find(dim);
    if (it == b.symbolic.end() || it->second < count) return false;
  }
  return true;
}

/** A float value the forward pass computes: not an input, a constant, an index or a view (a
 *  view of a computed value is recomputed from it for free). */
bool computed_float(const Node& n) {
  return is_float(n.dtype) && n.op != Op::input && n.op != Op::constant && n.op != Op::index &&
         n.op != Op::view;
}

/** The forward nodes (ids below forward.size()) that the backward graph `g` takes as inputs
 *  under `save`, ascending: walking back from g's outputs, the first node on each path that the
 *  policy would save. The nodes behind a saved one are not needed for it; the other forward
 *  nodes reached are recomputed. */
std::vector<NodeId> choose_saved(const Graph& g, const Graph& forward, GradSave save) {
  if (save == GradSave::recompute) return {};
  std::vector<Extent> references;  // the forward inputs and outputs: what "small" is measured by
  for (NodeId id : forward.inputs)
    references.push_back(extent_of(forward[id].shape));
  for (const GraphOutput& o : forward.outputs)
    references.push_back(extent_of(forward[o.node].shape));
  auto saves = [&](NodeId id) {
    const Node& n = forward[id];
    if (!computed_float(n)) return false;
    if (save == GradSave::all) return true;
    if (n.op != Op::reduce) return false;
    Extent e = extent_of(n.shape);
    return std::any_of(references.begin(), references.end(),
                       [&](const Extent& r) { return no_larger(e, r); });
  };
  std::vector<bool> needed(g.size(), false);
  for (const GraphOutput& o : g.outputs)
    needed[o.node] = true;
  std::vector<NodeId> saved;
  for (NodeId id = NodeId(g.size()) - 1; id >= 0; --id) {
    if (!needed[id]) continue;
    if (id < NodeId(forward.size()) && saves(id)) {
      saved.push_back(id);
      continue;
    }
    for (NodeId o : g[id].operands)
      needed[o] = true;
  }
  std::reverse(saved.begin(), saved.end());
  return saved;
}

}  // namespace

const char* grad_save_name(GradSave s) {
  switch (s) {
    case GradSave::recompute:
      return "recompute";
    case GradSave::stats:
      return "stats";
    case GradSave::all:
      return "all";
  }
  return "?";
}

GradSave parse_grad_save(const std::string& name) {
  for (GradSave s : {GradSave::recompute, GradSave::stats, GradSave::all})
    if (name == grad_save_name(s)) return s;
  throw std::invalid_argument("unknown save policy '" + name +
                              "' for the backward composite; the policies are recompute, stats "
                              "and all");
}

std::string grad_name(const std::string& name, const std::vector<std::string>& taken) {
  std::string out = "d" + name;
  while (std::find(taken.begin(), taken.end(), out) != taken.end())
    out += "_";
  return out;
}

Backward gradient(const Graph& forward, const std::vector<std::string>& wrt, GradSave save) {
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
  Backward out;
  out.forward = forward;
  out.forward.name = forward.name + "_save";
  // a saved node becomes an input where it stands (its operands, if nothing else needs them,
  // go with the pruning), placed after the forward inputs and before the cotangents
  for (const GraphOutput& o : forward.outputs)
    taken.push_back(o.name);
  std::vector<NodeId> saved_inputs;
  for (NodeId id : choose_saved(g, forward, save)) {
    std::string name = "saved_" + std::to_string(id);
    while (std::find(taken.begin(), taken.end(), name) != taken.end())
      name += "_";
    taken.push_back(name);
    Node input;
    input.op = Op::input;
    input.dtype = g[id].dtype;
    input.shape = g[id].shape;
    input.name = name;
    g.nodes[id] = std::move(input);
    saved_inputs.push_back(id);
    out.saved.push_back(name);
    out.forward.outputs.push_back({name, id});
  }
  g.inputs.insert(g.inputs.begin() + NodeId(forward.inputs.size()), saved_inputs.begin(),
                  saved_inputs.end());
  out.graph = prune(g);
  return out;
}

Graph gradient(const Graph& forward, const std::vector<std::string>& wrt) {
  return gradient(forward, wrt, GradSave::recompute).graph;
}

}  // namespace kiln
