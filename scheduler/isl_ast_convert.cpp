// Conversion of isl's AST into the isl-free loop IR of ir/loop_ir.h.
#include <set>
#include <string_view>

#include "scheduler/isl_internal.h"
#include "scheduler/isl_schedule.h"

namespace kiln::isl {

namespace {

using Substitutions = std::map<std::string, AstExprPtr>;

/** What converting needs at every node: the substitutions and the loop iterators in scope,
 *  which make an isl id an iterator rather than a size parameter. */
struct Scope {
  const Substitutions& subs;
  std::set<std::string> iterators;
};

/** Releases an isl object at the end of a scope. */
template <class T, T* (*Free)(T*)>
struct Scoped {
  T* p;
  ~Scoped() { Free(p); }
};
using ScopedExpr = Scoped<isl_ast_expr, isl_ast_expr_free>;
using ScopedNode = Scoped<isl_ast_node, isl_ast_node_free>;

std::string id_name(isl_id* id) {
  std::string name = id ? isl_id_get_name(id) : "";
  isl_id_free(id);
  return name;
}

int64_t int_value(isl_ast_expr* e) {
  isl_val* v = isl_ast_expr_get_val(e);
  int64_t out = isl_val_get_num_si(v);
  isl_val_free(v);
  return out;
}

const char* op_name(isl_ast_expr_op_type t) {
  switch (t) {
    case isl_ast_expr_op_and:
    case isl_ast_expr_op_and_then:
      return "and";
    case isl_ast_expr_op_or:
    case isl_ast_expr_op_or_else:
      return "or";
    case isl_ast_expr_op_max:
      return "max";
    case isl_ast_expr_op_min:
      return "min";
    case isl_ast_expr_op_minus:
      return "minus";
    case isl_ast_expr_op_add:
      return "add";
    case isl_ast_expr_op_sub:
      return "sub";
    case isl_ast_expr_op_mul:
      return "mul";
    case isl_ast_expr_op_div:
      return "div";
    case isl_ast_expr_op_fdiv_q:
      return "fdiv_q";
    case isl_ast_expr_op_pdiv_q:
      return "pdiv_q";
    case isl_ast_expr_op_pdiv_r:
      return "pdiv_r";
    case isl_ast_expr_op_zdiv_r:
      return "zdiv_r";
    case isl_ast_expr_op_cond:
    case isl_ast_expr_op_select:
      return "select";
    case isl_ast_expr_op_eq:
      return "eq";
    case isl_ast_expr_op_le:
      return "le";
    case isl_ast_expr_op_lt:
      return "lt";
    case isl_ast_expr_op_ge:
      return "ge";
    case isl_ast_expr_op_gt:
      return "gt";
    default:
      throw std::runtime_error("isl AST: unsupported expression operator");
  }
}

AstExprPtr convert_expr(isl_ast_expr* e, const Scope& scope) {
  auto out = std::make_shared<AstExpr>();
  switch (isl_ast_expr_get_type(e)) {
    case isl_ast_expr_int:
      out->kind = AstExpr::Kind::integer;
      out->value = int_value(e);
      return out;
    case isl_ast_expr_id: {
      out->name = id_name(isl_ast_expr_get_id(e));
      if (scope.iterators.count(out->name)) {
        out->kind = AstExpr::Kind::iterator;
        return out;
      }
      out->kind = AstExpr::Kind::param;
      auto it = scope.subs.find(out->name);
      if (it != scope.subs.end()) return it->second;
      return out;
    }
    case isl_ast_expr_op: {
      out->kind = AstExpr::Kind::op;
      out->op = op_name(isl_ast_expr_op_get_type(e));
      isl_size n = isl_ast_expr_op_get_n_arg(e);
      for (isl_size i = 0; i < n; ++i) {
        ScopedExpr arg{isl_ast_expr_op_get_arg(e, i)};
        out->args.push_back(convert_expr(arg.p, scope));
      }
      return out;
    }
    default:
      throw std::runtime_error("isl AST: invalid expression");
  }
}

/** The negation of a condition, for an isl `else` branch (the loop IR has guards only). */
AstExprPtr negate(const AstExprPtr& c) {
  static const std::map<std::string, std::string> flipped = {
      {"le", "gt"}, {"lt", "ge"}, {"ge", "lt"}, {"gt", "le"}, {"and", "or"}, {"or", "and"}};
  auto out = std::make_shared<AstExpr>(*c);
  if (c->kind == AstExpr::Kind::op && c->op == "eq") {
    auto lt = std::make_shared<AstExpr>(*c), gt = std::make_shared<AstExpr>(*c);
    lt->op = "lt";
    gt->op = "gt";
    out->op = "or";
    out->args = {lt, gt};
    return out;
  }
  auto it = flipped.find(c->op);
  if (c->kind != AstExpr::Kind::op || it == flipped.end())
    throw std::runtime_error("isl AST: cannot negate an else condition");
  out->op = it->second;
  if (out->op == "and" || out->op == "or")
    for (auto& a : out->args)
      a = negate(a);
  return out;
}

LoopNodePtr convert_node(isl_ast_node* n, Scope& scope);

LoopNodePtr convert_for(isl_ast_node* n, Scope& scope) {
  auto out = std::make_shared<LoopNode>();
  out->kind = LoopNode::Kind::loop;
  ScopedExpr iter{isl_ast_node_for_get_iterator(n)}, init{isl_ast_node_for_get_init(n)},
      cond{isl_ast_node_for_get_cond(n)}, inc{isl_ast_node_for_get_inc(n)};
  ScopedNode body{isl_ast_node_for_get_body(n)};
  out->iter = id_name(isl_ast_expr_get_id(iter.p));
  out->init = convert_expr(init.p, scope);
  bool fresh = scope.iterators.insert(out->iter).second;
  out->cond = convert_expr(cond.p, scope);
  if (isl_ast_expr_get_type(inc.p) != isl_ast_expr_int)
    throw std::runtime_error("isl AST: non-constant loop increment");
  out->step = int_value(inc.p);
  out->body.push_back(convert_node(body.p, scope));
  if (fresh) scope.iterators.erase(out->iter);
  if (isl_id* note = isl_ast_node_get_annotation(n)) {
    const char* name = isl_id_get_name(note);
    if (name) parse_for_mark(name, out->coincident, out->only_reductions);
    isl_id_free(note);
  }
  return out;
}

LoopNodePtr convert_if(isl_ast_node* n, Scope& scope) {
  ScopedExpr cond{isl_ast_node_if_get_cond(n)};
  ScopedNode then_node{isl_ast_node_if_get_then_node(n)};
  auto guard = std::make_shared<LoopNode>();
  guard->kind = LoopNode::Kind::guard;
  guard->cond = convert_expr(cond.p, scope);
  guard->body.push_back(convert_node(then_node.p, scope));
  if (isl_ast_node_if_has_else_node(n) != isl_bool_true) return guard;
  ScopedNode else_node{isl_ast_node_if_get_else_node(n)};
  auto other = std::make_shared<LoopNode>();
  other->kind = LoopNode::Kind::guard;
  other->cond = negate(guard->cond);
  other->body.push_back(convert_node(else_node.p, scope));
  auto block = std::make_shared<LoopNode>();
  block->body = {guard, other};
  return block;
}

LoopNodePtr convert_block(isl_ast_node* n, Scope& scope) {
  auto out = std::make_shared<LoopNode>();
  isl_ast_node_list* list = isl_ast_node_block_get_children(n);
  isl_size count = isl_ast_node_list_n_ast_node(list);
  for (isl_size i = 0; i < count; ++i) {
    ScopedNode child{isl_ast_node_list_get_at(list, i)};
    out->body.push_back(convert_node(child.p, scope));
  }
  isl_ast_node_list_free(list);
  return out;
}

LoopNodePtr convert_user(isl_ast_node* n, Scope& scope) {
  auto out = std::make_shared<LoopNode>();
  out->kind = LoopNode::Kind::stmt;
  ScopedExpr call{isl_ast_node_user_get_expr(n)};
  ScopedExpr callee{isl_ast_expr_op_get_arg(call.p, 0)};
  std::string name = id_name(isl_ast_expr_get_id(callee.p));
  if (name.size() < 2 || name[0] != 'S') throw std::runtime_error("isl AST: bad statement " + name);
  out->statement = std::stoi(name.substr(1));
  isl_size n_arg = isl_ast_expr_op_get_n_arg(call.p);
  for (isl_size i = 1; i < n_arg; ++i) {
    ScopedExpr arg{isl_ast_expr_op_get_arg(call.p, i)};
    out->args.push_back(convert_expr(arg.p, scope));
  }
  return out;
}

/** A copy of `n` whose outermost loops (below blocks and guards) carry a member's annotation:
 *  isl generates a member as one loop, or as a block where statements of lower dimension sit
 *  beside the loop (a reduction's 0-dimensional init), or no loop for a single iteration. A
 *  loop that already carries an annotation is an inner member's, below a member of a single
 *  iteration: it keeps its own (a tile loop of one tile over a coincident row would otherwise
 *  lend the next member, which carries dependences, its coincidence). */
LoopNodePtr annotate(const LoopNodePtr& n, const MemberMark& m) {
  if (n->kind == LoopNode::Kind::stmt) return n;
  if (n->kind == LoopNode::Kind::loop && n->band >= 0) return n;
  auto copy = std::make_shared<LoopNode>(*n);
  if (n->kind == LoopNode::Kind::loop) {
    copy->band = m.band;
    copy->member = m.member;
    copy->tile = m.tile;
    // The loop's own legality (build_ast) may be finer than its member's.
    copy->coincident = m.coincident || n->coincident;
    copy->only_reductions = m.only_reductions || n->only_reductions;
    return copy;
  }
  for (LoopNodePtr& c : copy->body)
    c = annotate(c, m);
  return copy;
}

LoopNodePtr convert_mark(isl_ast_node* n, Scope& scope) {
  std::string mark = id_name(isl_ast_node_mark_get_id(n));
  ScopedNode child{isl_ast_node_mark_get_node(n)};
  LoopNodePtr below = convert_node(child.p, scope);
  MemberMark m;
  if (!parse_member_mark(mark, m)) return below;
  return annotate(below, m);
}

LoopNodePtr convert_node(isl_ast_node* n, Scope& scope) {
  switch (isl_ast_node_get_type(n)) {
    case isl_ast_node_for:
      return convert_for(n, scope);
    case isl_ast_node_if:
      return convert_if(n, scope);
    case isl_ast_node_block:
      return convert_block(n, scope);
    case isl_ast_node_user:
      return convert_user(n, scope);
    case isl_ast_node_mark:
      return convert_mark(n, scope);
    default:
      throw std::runtime_error("isl AST: invalid node");
  }
}

}  // namespace

LoopNest convert_ast(const AstNode& root, const Substitutions& substitutions) {
  Scope scope{substitutions, {}};
  return LoopNest{convert_node(root.keep(), scope)};
}

}  // namespace kiln::isl
