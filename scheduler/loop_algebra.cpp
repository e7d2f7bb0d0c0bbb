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

AstExprPtr sub(const AstExprPtr& a, const AstExprPtr& b) {
  return is_int(*b, 0) ? a : ast_op("sub", {a, b});
}

AstExprPtr upper(const LoopNode& l) {
  const AstExpr& c = *l.cond;
  if (c.op == "lt") return c.args[1];
  return add(c.args[1], ast_int(1));
}

LoopNodePtr coincident_loop(const std::string& iter, AstExprPtr init, AstExprPtr cond, int64_t step,
                            std::vector<LoopNodePtr> body) {
  auto l = std::make_shared<LoopNode>();
  l->kind = LoopNode::Kind::loop;
  l->iter = iter;
  l->init = std::move(init);
  l->cond = std::move(cond);
  l->step = step;
  l->coincident = true;
  l->only_reductions = true;
  l->body = std::move(body);
  return l;
}

LoopNodePtr make_guard(AstExprPtr cond, LoopNodePtr body) {
  auto g = std::make_shared<LoopNode>();
  g->kind = LoopNode::Kind::guard;
  g->cond = std::move(cond);
  g->body = {std::move(body)};
  return g;
}

LoopNodePtr rebuild_nest(const std::vector<const LoopNode*>& loops, const LoopNode& stmt, int skip,
                         const AstExprPtr& init) {
  LoopNodePtr inner = std::make_shared<LoopNode>(stmt);
  for (size_t a = loops.size(); a-- > 0;) {
    if (static_cast<int>(a) == skip) continue;
    auto copy = std::make_shared<LoopNode>(*loops[a]);
    if (init && a + 1 == loops.size()) copy->init = init;
    copy->body = {inner};
    inner = copy;
  }
  return inner;
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
