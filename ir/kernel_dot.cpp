#include "ir/kernel_dot.h"

#include <set>

#include "ir/dot.h"

namespace kiln {

namespace {

std::string buffer_node(const KernelPlan& plan, int b) {
  const Buffer& buf = plan.buffers[b];
  std::string where = buf.kind == BufferKind::temp ? "temp, slot " + std::to_string(buf.slot)
                                                   : std::string(buffer_kind_name(buf.kind)) +
                                                         " arg " + std::to_string(buf.arg);
  if (buf.constant) where += ", const";
  std::string label =
      buf.name + "\n" + std::string(dtype_name(buf.dtype)) + shape_str(buf.shape) + "\n" + where;
  std::string style;
  switch (buf.kind) {
    case BufferKind::input:
      style = "shape=invhouse, style=filled, fillcolor=" +
              std::string(buf.constant ? "lightsteelblue" : "lightblue");
      break;
    case BufferKind::output:
      style = "shape=house, style=filled, fillcolor=palegreen";
      break;
    case BufferKind::temp:
      style = "shape=box, style=\"rounded,dashed\"";
      break;
  }
  return "  b" + std::to_string(b) + " [label=" + dot_string(label) + ", " + style + "];\n";
}

/** The buffers statement `st` reads: its loads, or a call's arguments. */
std::set<int> reads_of(const Statement& st) {
  std::set<int> out(st.args.begin(), st.args.end());
  if (st.value) {
    std::vector<const ScalarExpr*> loads;
    collect_loads(*st.value, loads);
    for (const ScalarExpr* l : loads)
      out.insert(l->buffer);
  }
  return out;
}

}  // namespace

std::string plan_to_dot(const KernelPlan& plan, const std::string& title) {
  std::string s =
      "digraph " + dot_string(title) + " {\n  label=" +
      dot_string(title + ": " + std::to_string(plan.kernels.size()) + " kernel" +
                 (plan.kernels.size() == 1 ? "" : "s") + ", " + std::to_string(plan.num_slots) +
                 " temp slot" + (plan.num_slots == 1 ? "" : "s")) +
      ";\n  labelloc=t;\n  rankdir=LR;\n  node [fontname=monospace];\n";
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    s += buffer_node(plan, static_cast<int>(b));
  // The slots: memory that temporaries of kernels that do not overlap share.
  for (int slot = 0; slot < plan.num_slots; ++slot)
    s += "  slot" + std::to_string(slot) + " [label=" + dot_string("slot " + std::to_string(slot)) +
         ", shape=cylinder, style=filled, fillcolor=lightyellow];\n";
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (plan.buffers[b].kind == BufferKind::temp && plan.buffers[b].slot >= 0)
      s += "  b" + std::to_string(b) + " -> slot" + std::to_string(plan.buffers[b].slot) +
           " [style=dotted, arrowhead=none, constraint=false];\n";
  std::string edges;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const Kernel& kernel = plan.kernels[k];
    std::string ks = std::to_string(k);
    s += "  subgraph cluster_" + ks +
         " {\n    label=" + dot_string("kernel " + ks + " (" + kernel.name + ")") +
         ";\n    style=filled;\n    fillcolor=gray95;\n";
    for (size_t i = 0; i < kernel.statements.size(); ++i) {
      const Statement& st = kernel.statements[i];
      std::string id = "k" + ks + "s" + std::to_string(i);
      s += "    " + id +
           " [label=" + dot_string(dot_wrap(statement_to_text(plan, st)), DotAlign::left) +
           ", shape=box, style=filled, fillcolor=white];\n";
      for (int b : reads_of(st))
        edges += "  b" + std::to_string(b) + " -> " + id + ";\n";
      edges += "  " + id + " -> b" + std::to_string(st.buffer) + " [style=bold];\n";
    }
    s += "  }\n";
  }
  return s + edges + "}\n";
}

}  // namespace kiln
