// Index notation: `C[m, n] = sum(A[m, k] * B[k, n], k)`. The statement's iteration space has
// one axis per free index (the left side, in order) and per reduced index (in order of first
// appearance). Every subscripted access becomes a view over that space with size 1 on the axes
// it does not use; operators broadcast as usual; `sum(e, k)` reduces axis k; the result is the
// free axes. Ranges come from the declared output shape and from plain subscripts `A[.., k, ..]`.
#include <algorithm>

#include "dsl/lowering.h"

namespace kiln {

namespace {

using Named = std::pair<std::string, SourceLoc>;

void collect_reduced(const Expr& e, std::vector<Named>& out) {
  if (e.kind == Expr::Kind::call &&
      (e.text == "sum" || e.text == "max" || e.text == "min" || e.text == "prod"))
    for (size_t i = 1; i < e.args.size(); ++i)
      if (e.args[i].name.empty() && e.args[i].value->kind == Expr::Kind::name)
        out.push_back({e.args[i].value->text, e.args[i].value->loc});
  for (const ExprPtr& x : e.items)
    collect_reduced(*x, out);
  for (const Arg& a : e.args)
    collect_reduced(*a.value, out);
}

void collect_subscripts(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == Expr::Kind::subscript) out.push_back(&e);
  for (const ExprPtr& x : e.items)
    collect_subscripts(*x, out);
  for (const Arg& a : e.args)
    collect_subscripts(*a.value, out);
}

/** Restores the lowerer's iteration space when a statement ends, even by an error. */
template <typename T>
class Restore {
 public:
  Restore(T& slot, T value) : slot_(slot), old_(slot) { slot = value; }
  ~Restore() { slot_ = old_; }

 private:
  T& slot_;
  T old_;
};

}  // namespace

void Lowerer::index_statement(const BodyStatement& st, Scope& s) {
  const Target& t = st.targets[0];
  IndexSpace space;
  std::vector<SourceLoc> locs;
  for (const auto& [name, loc] : t.indices) {
    if (space.axis_of(name) >= 0)
      throw SpecError(loc, "index '" + name + "' appears twice on the left");
    space.names.push_back(name);
    locs.push_back(loc);
  }
  size_t n_free = space.names.size();
  std::vector<Named> reduced;
  collect_reduced(*st.value, reduced);
  for (const auto& [name, loc] : reduced) {
    int ax = space.axis_of(name);
    if (ax >= 0 && ax < static_cast<int>(n_free))
      throw SpecError(loc, "index '" + name +
                               "' is reduced here but also appears on the left; "
                               "a reduced index must not be a free index");
    if (ax < 0) {
      space.names.push_back(name);
      locs.push_back(loc);
    }
  }
  std::vector<std::optional<IntExpr>> ranges(space.names.size());
  std::vector<std::string> bound_by(space.names.size());
  for (const Param& p : s.comp->outputs) {
    if (p.name != t.name || !p.type.has_shape) continue;
    if (p.type.batch)
      throw SpecError(t.loc, "index notation cannot assign output '" + p.name +
                                 "', whose type starts with '...'; name every dimension");
    if (p.type.dims.size() != n_free)
      throw SpecError(t.loc, "output '" + p.name + "' is declared " + p.type.text + " (rank " +
                                 std::to_string(p.type.dims.size()) + ") but the left side has " +
                                 std::to_string(n_free) + " indices");
    for (size_t k = 0; k < n_free; ++k) {
      ranges[k] = eval_int(*p.type.dims[k], s, "a dimension");
      bound_by[k] = "the declared output " + p.type.text;
    }
  }
  std::vector<const Expr*> subs;
  collect_subscripts(*st.value, subs);
  for (const Expr* sub : subs) {
    Value base = eval(*sub->items[0], s);
    if (!base.is_tensor())
      throw SpecError(sub->loc, "only tensors can be subscripted, found " + base.describe(g_));
    const Shape& shape = g_[base.node].shape;
    if (sub->items.size() - 1 != shape.size())
      throw SpecError(sub->loc, "subscript rank mismatch: '" + expr_str(*sub->items[0]) + "' is " +
                                    std::string(dtype_name(g_[base.node].dtype)) +
                                    shape_str(shape) + " (rank " + std::to_string(shape.size()) +
                                    ") but is given " + std::to_string(sub->items.size() - 1) +
                                    " subscripts; expected one per dimension");
    for (size_t p = 1; p < sub->items.size(); ++p) {
      const Expr& ix = *sub->items[p];
      int ax = ix.kind == Expr::Kind::name ? space.axis_of(ix.text) : -1;
      if (ax < 0) continue;
      const IntExpr& r = shape[p - 1];
      std::string here = expr_str(*sub);
      if (ranges[ax] && *ranges[ax] != r)
        throw SpecError(ix.loc, "shape mismatch: index '" + ix.text + "' ranges over " +
                                    ranges[ax]->str() + " in " + bound_by[ax] + " but over " +
                                    r.str() + " in " + here);
      if (!ranges[ax]) {
        ranges[ax] = r;
        bound_by[ax] = here;
      }
    }
  }
  for (size_t k = 0; k < space.names.size(); ++k) {
    if (ranges[k]) {
      space.ranges.push_back(*ranges[k]);
      continue;
    }
    if (k < n_free)
      throw SpecError(locs[k], "index '" + space.names[k] +
                                   "' on the left is never bound on the right: use it as a "
                                   "plain subscript of a tensor, or assign a declared output");
    throw SpecError(locs[k], "reduced index '" + space.names[k] +
                                 "' is never bound: use it as a plain subscript of a tensor");
  }
  NodeId x;
  {
    Restore<const IndexSpace*> in_space(space_, &space);
    x = unify({eval(*st.value, s)}, st.loc, "the right side")[0];
  }
  Shape free_shape(space.ranges.begin(), space.ranges.begin() + n_free);
  Shape full = free_shape;
  full.resize(space.names.size(), IntExpr(1));
  const Shape& got = g_[x].shape;
  for (size_t k = n_free; k < got.size(); ++k)
    if (got[k] != IntExpr(1))
      throw SpecError(st.loc,
                      "index '" + space.names[k] + "' is used outside the reduction that names it");
  x = broadcast_to(x, full, st.loc);
  s.vars[t.name] = Value::tensor(g_.view(x, views::reshape(full, free_shape)));
}

Value Lowerer::index_access(const Expr& sub, Scope& s) {
  Value base;
  {
    Restore<const IndexSpace*> tensor_level(space_, nullptr);
    base = eval(*sub.items[0], s);
  }
  const Shape& src = g_[base.node].shape;
  View v;
  v.shape.assign(space_->names.size(), IntExpr(1));
  for (size_t p = 1; p < sub.items.size(); ++p) {
    IntExpr e = eval_int(*sub.items[p], s, "a subscript");
    std::set<std::string> vars;
    e.collect_vars(vars);
    for (const std::string& n : vars)
      if (n[0] == '%') {
        int ax = std::stoi(n.substr(1));
        v.shape[ax] = space_->ranges[ax];
      }
    v.index.push_back(e);
  }
  (void)src;
  return Value::tensor(g_.view(base.node, v));
}

}  // namespace kiln
