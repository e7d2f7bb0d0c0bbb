#include "simplifier/code_rules.h"

#include <set>

#include "ir/externs.h"
#include "simplifier/index_arith.h"
#include "simplifier/match.h"

namespace kiln {

namespace {

std::vector<Op> elementwise_ops() {
  std::vector<Op> ops;
  for (int k = 0; k < kNumOps; ++k) {
    Op op = static_cast<Op>(k);
    if (is_pointwise(op)) ops.push_back(op);
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

/** Operand `x` of a product over [M, N, K] as a 2-D matrix: A[m, k] (`keep` = 0, x must not
 *  depend on n) or B[k, n] (`keep` = 1, x must not depend on m); -1 when it is neither. */
NodeId gemm_operand(NodeId x, int keep, Rewriter& rw) {
  const Node& v = rw[x];
  if (v.op != Op::view || v.shape.size() != 3) return -1;
  std::string unused = keep == 0 ? "%1" : "%0";
  std::set<std::string> vars;
  for (const IntExpr& e : v.view.index)
    e.collect_vars(vars);
  for (const MaskBound& m : v.view.mask) {
    m.expr.collect_vars(vars);
    m.bound.collect_vars(vars);
  }
  if (vars.count(unused)) return -1;
  // the new index space: (m, k) = (%0, %1) for A, (k, n) = (%0, %1) for B
  std::map<std::string, IntExpr> sub =
      keep == 0 ? std::map<std::string, IntExpr>{{"%2", IntExpr::index(1)}}
                : std::map<std::string, IntExpr>{{"%2", IntExpr::index(0)}};
  View m;
  m.shape = keep == 0 ? Shape{v.shape[0], v.shape[2]} : Shape{v.shape[2], v.shape[1]};
  for (const IntExpr& e : v.view.index)
    m.index.push_back(e.substitute(sub));
  for (const MaskBound& b : v.view.mask)
    m.mask.push_back({b.expr.substitute(sub), b.bound.substitute(sub)});
  Node n = v;
  n.shape = m.shape;
  n.view = m;
  return rw.emit(std::move(n));
}

/** reduce_sum(A[m, k] * B[k, n], k) -> gemm(A, B), under --config BLAS=... */
std::optional<Rewrite> gemm_to_blas(const Node& root, Rewriter& rw) {
  if (rw.options().blas.empty() || root.reduce_kind != ReduceKind::sum ||
      root.axes != std::vector<int>{2} || !root.domain.empty())
    return std::nullopt;
  const Node& prod = rw[root.operands[0]];
  if (prod.op != Op::mul || prod.shape.size() != 3 ||
      (prod.dtype != DType::f32 && prod.dtype != DType::f64))
    return std::nullopt;
  for (int order = 0; order < 2; ++order) {
    NodeId a = gemm_operand(prod.operands[order], 0, rw);
    NodeId b = a < 0 ? -1 : gemm_operand(prod.operands[1 - order], 1, rw);
    if (b < 0) continue;
    ExternResult t =
        extern_result_type("gemm", {{rw[a].dtype, rw[a].shape}, {rw[b].dtype, rw[b].shape}});
    if (!t.error.empty()) return std::nullopt;
    Node call;
    call.op = Op::extern_call;
    call.name = "gemm";
    call.dtype = t.type.dtype;
    call.shape = t.type.shape;
    call.operands = {a, b};
    NodeId y = rw.emit(std::move(call));
    Node out;
    out.op = Op::view;
    out.dtype = root.dtype;
    out.shape = root.shape;
    out.view = views::reshape(rw[y].shape, root.shape);
    out.operands = {y};
    return Rewrite{std::nullopt, out};
  }
  return std::nullopt;
}

/** reduce(x, axes of size 1) -> x, for a rectangular domain */
std::optional<Rewrite> reduce_unit_axes(const Node& root, Rewriter& rw) {
  if (!root.domain.empty()) return std::nullopt;
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
      code_rule("gemm-to-blas", "blas", {Op::reduce},
                "reduce_sum(A[m, k] * B[k, n], k) -> gemm(A, B)  (--config BLAS=openblas)",
                gemm_to_blas),
      code_rule("reduce-unit-axes", "reduce", {Op::reduce}, "reduce(x, axes of size 1) -> x",
                reduce_unit_axes),
  };
}

}  // namespace kiln
