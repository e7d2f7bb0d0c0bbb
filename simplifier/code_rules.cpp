#include "simplifier/code_rules.h"

#include "simplifier/index_arith.h"
#include "simplifier/match.h"

namespace kiln {

namespace {

std::vector<Op> elementwise_ops() {
  std::vector<Op> ops;
  for (int k = 0; k < kNumOps; ++k) {
    Op op = static_cast<Op>(k);
    OpClass c = op_info(op).cls;
    if (c == OpClass::unary || c == OpClass::binary || c == OpClass::ternary || op == Op::cast ||
        op == Op::bitcast)
      ops.push_back(op);
  }
  return ops;
}

/** op(c0, c1, ...) -> fold(op(c0, c1, ...)) */
std::optional<Rewrite> fold_constants(const Node& root, Rewriter& rw) {
  std::vector<const Node*> args;
  for (NodeId o : root.operands)
    args.push_back(&rw[o]);
  std::optional<Node> c = fold_op(root.op, root.dtype, root.shape, args);
  if (!c) return std::nullopt;
  return Rewrite{std::nullopt, *c};
}

/** view(view(x, inner), outer) -> view(x, outer . inner) */
std::optional<Rewrite> view_of_view(const Node& root, Rewriter& rw) {
  const Node& inner = rw[root.operands[0]];
  if (inner.op != Op::view) return std::nullopt;
  Node n = root;
  n.operands = {inner.operands[0]};
  n.view = View::compose(root.view, inner.view);
  return Rewrite{std::nullopt, n};
}

/** view(x, identity) -> x */
std::optional<Rewrite> view_identity(const Node& root, Rewriter& rw) {
  if (!root.view.is_identity(rw[root.operands[0]].shape)) return std::nullopt;
  return Rewrite{root.operands[0], {}};
}

/** view(c, v) -> c, with v's shape, when v has no mask (or c is 0, which masks keep) */
std::optional<Rewrite> view_of_constant(const Node& root, Rewriter& rw) {
  const Node& c = rw[root.operands[0]];
  if (c.op != Op::constant) return std::nullopt;
  bool zero = !c.symbolic && c.value == 0 && c.int_value == 0;
  if (!root.view.mask.empty() && !zero) return std::nullopt;
  Node n = c;
  n.shape = root.shape;
  if (zero && is_float(n.dtype)) n.value = 0;  // a masked-out -0 reads as +0
  return Rewrite{std::nullopt, n};
}

/** view(x, v) -> view(x, v') with v's divisions and moduli decided by the index ranges */
std::optional<Rewrite> view_index_arith(const Node& root, Rewriter& rw) {
  View v = simplify_view_index(root.view);
  if (v.str() == root.view.str()) return std::nullopt;
  Node n = root;
  n.view = std::move(v);
  return Rewrite{std::nullopt, n};
}

bool is_pointwise(Op op) {
  OpClass c = op_info(op).cls;
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::ternary || op == Op::cast ||
         op == Op::bitcast;
}

/** view(op(a, b), v) -> op(view(a, v), view(b, v)) when v has no mask and a, b are views or
 *  constants, so the new views fold into them */
std::optional<Rewrite> view_through_elementwise(const Node& root, Rewriter& rw) {
  const Node& x = rw[root.operands[0]];
  if (!root.view.mask.empty() || !is_pointwise(x.op)) return std::nullopt;
  for (NodeId o : x.operands)
    if (rw[o].op != Op::view && rw[o].op != Op::constant) return std::nullopt;
  Node n = x;
  n.shape = root.shape;
  for (NodeId& o : n.operands) {
    Node v = root;
    v.dtype = rw[o].dtype;
    v.operands = {o};
    o = rw.emit(std::move(v));
  }
  return Rewrite{std::nullopt, n};
}

/** reduce(x, axes of size 1) -> x */
std::optional<Rewrite> reduce_unit_axes(const Node& root, Rewriter& rw) {
  const Node& x = rw[root.operands[0]];
  for (int a : root.axes)
    if (!(x.shape[a] == IntExpr(1))) return std::nullopt;
  return Rewrite{root.operands[0], {}};
}

Rule code_rule(const char* name, const char* set, std::vector<Op> roots, const char* comment,
               CodeRule fn) {
  Rule r;
  r.name = name;
  r.set = set;
  r.roots = std::move(roots);
  r.comment = comment;
  r.code = std::move(fn);
  return r;
}

}  // namespace

std::vector<Rule> code_rules() {
  return {
      code_rule("fold-constants", "fold", elementwise_ops(), "op(c0, c1...) -> fold(op(c0, c1...))",
                fold_constants),
      code_rule("view-identity", "views", {Op::view}, "view(x, id) -> x", view_identity),
      code_rule("view-of-view", "views", {Op::view}, "view(view(x, a), b) -> view(x, b . a)",
                view_of_view),
      code_rule("view-of-constant", "views", {Op::view},
                "view(c, v) -> c  (v without mask, or c = 0)", view_of_constant),
      code_rule("view-index-arith", "index", {Op::view},
                "view(x, ... (%0 * N + %1) / N ...) -> view(x, ... %0 ...) when %1 < N",
                view_index_arith),
      code_rule("view-through-elementwise", "views", {Op::view},
                "view(op(a, b), v) -> op(view(a, v), view(b, v))  (a, b views or constants)",
                view_through_elementwise),
      code_rule("reduce-unit-axes", "reduce", {Op::reduce}, "reduce(x, axes of size 1) -> x",
                reduce_unit_axes),
  };
}

}  // namespace kiln
