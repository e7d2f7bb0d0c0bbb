#include "scheduler/loop_algebra.h"

#include "scheduler/map_loops.h"

namespace kiln {

bool has_iterator(const AstExpr& e) {
  if (e.kind == AstExpr::Kind::iterator) return true;
  for (const AstExprPtr& a : e.args)
    if (has_iterator(*a)) return true;
  return false;
}

bool rectangular(const LoopNode& l) {
  return l.kind == LoopNode::Kind::loop && l.step == 1 && canonical_loop(l) &&
         !has_iterator(*l.init) && !has_iterator(*l.cond->args[1]);
}

bool is_int(const AstExpr& e, int64_t v) {
  return e.kind == AstExpr::Kind::integer && e.value == v;
}

AstExprPtr add(const AstExprPtr& a, const AstExprPtr& b) {
  if (is_int(*a, 0)) return b;
  if (is_int(*b, 0)) return a;
  return ast_op("add", {a, b});
}

AstExprPtr extent(const LoopNode& l) {
  AstExprPtr upper = l.cond->op == "lt" ? l.cond->args[1] : add(l.cond->args[1], ast_int(1));
  AstExprPtr n = is_int(*l.init, 0) ? upper : ast_op("sub", {upper, l.init});
  return ast_op("max", {n, ast_int(0)});
}

AstExprPtr ceil_div(const AstExprPtr& e, int64_t d) {
  return ast_op("pdiv_q", {ast_op("add", {e, ast_int(d - 1)}), ast_int(d)});
}

LoopNodePtr substitute_node(const LoopNodePtr& n, const std::string& iter,
                            const AstExprPtr& value) {
  auto copy = std::make_shared<LoopNode>(*n);
  auto sub = [&](AstExprPtr& e) {
    if (e) e = substitute(e, iter, value);
  };
  sub(copy->init);
  sub(copy->cond);
  for (AstExprPtr& a : copy->args)
    sub(a);
  for (LoopNodePtr& c : copy->body)
    c = substitute_node(c, iter, value);
  return copy;
}

}  // namespace kiln
