#include "ir/graph_dot.h"

#include "ir/dot.h"

namespace kiln {

namespace {

/** The label of node `id`: "%3 add" or "%5 view transpose [M, N] -> [N, M]", then its type. */
std::string node_label(const Graph& g, size_t id) {
  const Node& n = g.nodes[id];
  std::string head = "%" + std::to_string(id) + " " + std::string(op_name(n.op));
  std::string attrs = n.op == Op::view && !n.operands.empty()
                          ? describe_view(g[n.operands[0]].shape, n.view)
                          : node_attributes(n);
  if (!attrs.empty()) head += " " + attrs;
  return dot_wrap(head) + "\n" + node_type(n);
}

/** How a node of `op` is drawn. */
std::string node_style(const Node& n) {
  switch (n.op) {
    case Op::input:
      return n.constant_input ? ", style=filled, fillcolor=lightsteelblue"
                              : ", style=filled, fillcolor=lightblue";
    case Op::constant:
    case Op::index:
      return ", shape=ellipse, color=gray40";
    case Op::view:
      return ", style=\"rounded,dashed\"";
    case Op::reduce:
    case Op::scan:
      return ", style=filled, fillcolor=lightyellow";
    case Op::gather:
    case Op::scatter:
      return ", style=filled, fillcolor=palegreen";
    case Op::extern_call:
      return ", style=filled, fillcolor=lightsalmon";
    default:
      return "";
  }
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::string title = g.name + "(";
  for (size_t i = 0; i < g.size_vars.size(); ++i)
    title += (i ? ", " : "") + g.size_vars[i];
  title += ")";
  std::string s = "digraph " + dot_string(g.name) + " {\n  label=" + dot_string(title) +
                  ";\n  labelloc=t;\n  node [shape=box, fontname=monospace];\n";
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    s += "  n" + std::to_string(id) + " [label=" + dot_string(node_label(g, id)) + node_style(n) +
         "];\n";
    // An operand's position matters where the op is not symmetric: the edges are numbered.
    for (size_t k = 0; k < n.operands.size(); ++k)
      s += "  n" + std::to_string(n.operands[k]) + " -> n" + std::to_string(id) +
           (n.operands.size() > 1 ? " [headlabel=" + std::to_string(k) + ", fontsize=9]" : "") +
           ";\n";
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const GraphOutput& o = g.outputs[k];
    std::string id = "out" + std::to_string(k);
    s += "  " + id + " [label=" + dot_string(o.name) +
         ", shape=oval, style=filled, fillcolor=palegreen];\n";
    s += "  n" + std::to_string(o.node) + " -> " + id + ";\n";
  }
  return s + "}\n";
}

}  // namespace kiln
