#include "ir/loop_dot.h"

#include "ir/dot.h"

namespace kiln {

namespace {

/** "c0 in [0, N)" from a loop's init and condition; the condition as it stands where it is
 *  not `iter < e` or `iter <= e`. */
std::string bounds(const LoopNode& n) {
  std::string from = loop_expr_to_text(*n.init);
  const AstExpr& c = *n.cond;
  if (c.kind == AstExpr::Kind::op && (c.op == "lt" || c.op == "le") && c.args.size() == 2 &&
      c.args[0]->kind == AstExpr::Kind::iterator && c.args[0]->name == n.iter)
    return n.iter + " in [" + from + ", " + loop_expr_to_text(*c.args[1]) +
           (c.op == "lt" ? ")" : "]");
  return n.iter + " = " + from + " while " + loop_expr_to_text(c);
}

/** The fill colour of a loop with mapping `m`. */
const char* mapping_colour(Mapping m) {
  switch (m) {
    case Mapping::serial:
      return "white";
    case Mapping::parallel:
      return "lightsalmon";
    case Mapping::simd:
      return "lightskyblue";
    case Mapping::unroll:
      return "khaki";
    case Mapping::block_x:
    case Mapping::block_y:
    case Mapping::block_z:
      return "plum";
    case Mapping::thread_x:
    case Mapping::thread_y:
    case Mapping::thread_z:
      return "palegreen";
  }
  return "white";
}

class Writer {
 public:
  Writer(const KernelPlan& plan, const NestPicture& p, size_t k)
      : plan_(plan), pic_(p), prefix_("k" + std::to_string(k) + "n") {}

  /** Adds `n`'s node (blocks are open: their children hang from `parent`) and its subtree. */
  void add(const LoopNode& n, const std::string& parent) {
    if (n.kind == LoopNode::Kind::block) {
      for (const LoopNodePtr& c : n.body)
        add(*c, parent);
      return;
    }
    std::string id = prefix_ + std::to_string(next_++);
    out += "    " + id + " [" + attributes(n) + "];\n";
    out += "    " + parent + " -> " + id + ";\n";
    for (const LoopNodePtr& c : n.body)
      add(*c, id);
  }

  std::string out;

 private:
  std::string attributes(const LoopNode& n) const {
    switch (n.kind) {
      case LoopNode::Kind::loop: {
        std::string label =
            "for " + bounds(n) + (n.step != 1 ? " step " + std::to_string(n.step) : "");
        std::string notes = loop_annotations(n);
        label += "\n" + std::string(mapping_name(n.mapping)) + (notes.empty() ? "" : ", " + notes);
        return "label=" + dot_string(dot_wrap(label)) +
               ", shape=box, style=\"rounded,filled\", fillcolor=" + mapping_colour(n.mapping) +
               (n.mapping != Mapping::serial ? ", penwidth=2" : "");
      }
      case LoopNode::Kind::guard:
        return "label=" + dot_string(dot_wrap(loop_node_to_text(n))) + ", shape=hexagon";
      case LoopNode::Kind::stmt: {
        std::string label = loop_node_to_text(n);
        if (pic_.kernel && n.statement >= 0 &&
            static_cast<size_t>(n.statement) < pic_.kernel->statements.size())
          label += "\n" + statement_to_text(plan_, pic_.kernel->statements[n.statement]);
        return "label=" + dot_string(dot_wrap(label), DotAlign::left) + ", shape=note";
      }
      case LoopNode::Kind::alloc:
        return "label=" + dot_string(dot_wrap(loop_node_to_text(n))) +
               ", shape=component, style=filled, fillcolor=" +
               (n.space == MemorySpace::shared ? "plum" : "lightyellow");
      case LoopNode::Kind::barrier:
        return "label=\"barrier\", shape=octagon";
      case LoopNode::Kind::prefetch:
        return "label=" + dot_string(loop_node_to_text(n)) + ", shape=note, style=dashed";
      case LoopNode::Kind::single:
        return "label=" + dot_string(loop_node_to_text(n)) + ", shape=box, style=dashed";
      case LoopNode::Kind::block:
        break;
    }
    return "label=\"\"";
  }

  const KernelPlan& plan_;
  const NestPicture& pic_;
  std::string prefix_;
  int next_ = 0;
};

}  // namespace

std::string loop_nests_to_dot(const KernelPlan& plan, const std::vector<NestPicture>& nests,
                              const std::string& title) {
  std::string s = "digraph " + dot_string(title) + " {\n  label=" + dot_string(title) +
                  ";\n  labelloc=t;\n  ordering=out;\n  node [fontname=monospace];\n";
  for (size_t k = 0; k < nests.size(); ++k) {
    const NestPicture& p = nests[k];
    std::string ks = std::to_string(k);
    std::string root = "k" + ks;
    std::string label = "kernel " + ks + ": " + p.name;
    if (!p.notes.empty()) label += "\n" + p.notes;
    if (p.nest && p.nest->program_order)
      label += "\nin program order: isl ran past its operation or time limit";
    if (p.nest && p.nest->one_block) label += "\none block: no loop runs across blocks";
    s += "  subgraph cluster_" + ks + " {\n    label=\"\";\n    style=rounded;\n";
    s += "    " + root + " [label=" + dot_string(dot_wrap(label)) +
         ", shape=box, style=filled, fillcolor=gray85];\n";
    Writer w(plan, p, k);
    if (p.nest && p.nest->root) w.add(*p.nest->root, root);
    s += w.out + "  }\n";
  }
  return s + "}\n";
}

}  // namespace kiln
