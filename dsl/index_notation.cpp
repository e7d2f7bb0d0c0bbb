// Index notation: `C[m, n] = sum(A[m, k] * B[k, n], k)`. The statement's iteration space has
// one axis per free index (the left side, in order) and per reduced index (in order of first
// appearance). Every subscripted access becomes a view over that space with size 1 on the axes
// it does not use; operators broadcast as usual; `sum(e, k)` reduces axis k; the result is the
// free axes. Ranges come from the declared output shape and from plain subscripts `A[.., k, ..]`.
#include <algorithm>
#include <optional>
#include <set>

#include "dsl/lowering.h"

namespace kiln {

namespace {

/** A reduced index: its name, where it is named, and the argument that names it. */
struct Reduced {
  std::string name;
  SourceLoc loc;
  const Expr* arg = nullptr;
};

/** Every index that a reduction names, with only the free indices in `space` yet. */
void collect_reduced(const Expr& e, const IndexSpace& space, std::vector<Reduced>& out) {
  if (e.kind == Expr::Kind::call &&
      (e.text == "sum" || e.text == "max" || e.text == "min" || e.text == "prod"))
    for (size_t i = 1; i < e.args.size(); ++i) {
      const Expr* name =
          e.args[i].name.empty() ? reduction_arg(*e.args[i].value, space).index : nullptr;
      if (name) out.push_back({name->text, name->loc, e.args[i].value.get()});
    }
  for (const ExprPtr& x : e.items)
    collect_reduced(*x, space, out);
  for (const Arg& a : e.args)
    collect_reduced(*a.value, space, out);
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

/** Whether `e` mentions a name of `space`; its first such name in `found`. */
bool mentions_index(const Expr& e, const IndexSpace& space, std::string& found) {
  if (e.kind == Expr::Kind::name && space.axis_of(e.text) >= 0) {
    found = e.text;
    return true;
  }
  for (const ExprPtr& x : e.items)
    if (mentions_index(*x, space, found)) return true;
  for (const Arg& a : e.args)
    if (mentions_index(*a.value, space, found)) return true;
  return false;
}

/** The name of the free index for batch dimension `b` under `...`. */
std::string ellipsis_name(size_t b) {
  return "..." + std::to_string(b);
}

}  // namespace

ReductionArg reduction_arg(const Expr& e, const IndexSpace& space) {
  ReductionArg out;
  if (e.kind == Expr::Kind::name) {
    out.index = &e;
    return out;
  }
  if (e.kind != Expr::Kind::binary ||
      (e.text != "<" && e.text != "<=" && e.text != ">" && e.text != ">="))
    return out;
  auto names_reduced = [&](const Expr& side) {
    if (side.kind != Expr::Kind::name) return false;
    const int ax = space.axis_of(side.text);
    return ax < 0 || ax >= static_cast<int>(space.free);
  };
  if (names_reduced(*e.items[0]))
    out.index = e.items[0].get();
  else if (names_reduced(*e.items[1]))
    out.index = e.items[1].get();
  std::string other;
  if (out.index == e.items[0].get() && e.text == "<" && !mentions_index(*e.items[1], space, other))
    out.range = e.items[1].get();
  else
    out.bound = &e;
  return out;
}

IntExpr Lowerer::domain_bound(const Expr& cmp, Scope& s) {
  IntExpr a = eval_int(*cmp.items[0], s, "a bound"), b = eval_int(*cmp.items[1], s, "a bound");
  IntExpr e = cmp.text == "<"    ? b - a - 1
              : cmp.text == "<=" ? b - a
              : cmp.text == ">"  ? a - b - 1
                                 : a - b;
  if (!e.is_affine())
    throw SpecError(cmp.loc, "the bound '" + expr_str(cmp) +
                                 "' must be affine in the indices: sums of indices times "
                                 "constants, plus sizes and attributes");
  std::set<std::string> vars;
  e.collect_vars(vars);
  if (std::none_of(vars.begin(), vars.end(), [](const std::string& v) { return v[0] == '%'; }))
    throw SpecError(cmp.loc, "the bound '" + expr_str(cmp) +
                                 "' uses no index; a bound restricts the indices a reduction "
                                 "runs over, such as sum(x[j], j <= i)");
  return e;
}

IntExpr Lowerer::index_bound(const std::string& index, const Expr& bound, const IndexSpace& space,
                             Scope& s) {
  std::string other;
  if (mentions_index(bound, space, other))
    throw SpecError(bound.loc, "the bound of index '" + index + "' on the left uses index '" +
                                   other +
                                   "': an intermediate's shape is rectangular; bound a reduced "
                                   "index instead, such as sum(x[j], j <= i)");
  return eval_int(bound, s, "the bound of index '" + index + "'");
}

namespace {

/** The largest (`upper`) or smallest value of `e`, affine in the indices, with index k over
 *  [0, ranges[k]); nullopt when it uses an index without a range or not linearly. */
std::optional<IntExpr> extreme_over(const IntExpr& e,
                                    const std::vector<std::optional<IntExpr>>& ranges, bool upper) {
  std::map<std::string, IntExpr> at;
  for (const auto& t : e.terms()) {
    for (const auto& f : t.factors) {
      if (f->kind != IntAtom::Kind::var || f->name[0] != '%') continue;
      const size_t ax = std::stoul(f->name.substr(1));
      if (t.factors.size() != 1 || ax >= ranges.size() || !ranges[ax]) return std::nullopt;
      at[f->name] = (t.coeff > 0) == upper ? *ranges[ax] - 1 : IntExpr(0);
    }
  }
  return e.substitute(at);
}

/** Whether `e` is a constant >= 0. */
bool provably_nonnegative(const IntExpr& e) {
  std::optional<int64_t> c = e.as_constant();
  return c && *c >= 0;
}

}  // namespace

Value Lowerer::eval_bounded(const Expr& e, Scope& s) {
  Restore<int> depth(bounded_, bounded_ + 1);
  return eval(e, s);
}

void Lowerer::index_statement(const BodyStatement& st, Scope& s) {
  const Target& t = st.targets[0];
  IndexSpace space;
  std::vector<SourceLoc> locs;
  for (const auto& [name, loc] : t.indices) {
    if (name == "...") {
      if (!s.has_batch)
        throw SpecError(loc, "'...' on the left stands for the batch dimensions, but '" +
                                 s.comp->name + "' has none: no input or output is typed " +
                                 "T[..., N]");
      space.ellipsis = true;
      space.batch = s.batch.size();
      for (size_t b = 0; b < space.batch; ++b) {
        space.names.push_back(ellipsis_name(b));
        locs.push_back(loc);
      }
      continue;
    }
    if (space.axis_of(name) >= 0)
      throw SpecError(loc, "index '" + name + "' appears twice on the left");
    space.names.push_back(name);
    locs.push_back(loc);
  }
  size_t n_free = space.free = space.names.size();
  std::vector<Reduced> reduced;
  collect_reduced(*st.value, space, reduced);
  for (const auto& [name, loc, arg] : reduced) {
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
  for (size_t b = 0; b < space.batch; ++b) {
    ranges[b] = s.batch[b];
    bound_by[b] = "the batch dimensions '...'";
  }
  // `i < N` on the left or in a reduction: [0, N), before any other source of the range.
  auto bind = [&](const std::string& name, const Expr& bound) {
    const int ax = space.axis_of(name);
    IntExpr r = index_bound(name, bound, space, s);
    const std::string here = "'" + name + " < " + expr_str(bound) + "'";
    if (ranges[ax] &&
        !same_size(*ranges[ax], r, bound.loc,
                   "the range of index '" + name + "' in " + bound_by[ax] + " and in " + here))
      throw SpecError(bound.loc, "index '" + name + "' is bounded by " + r.str() + " here but by " +
                                     ranges[ax]->str() + " in " + bound_by[ax]);
    ranges[ax] = r;
    bound_by[ax] = here;
  };
  for (size_t k = 0; k < t.bounds.size(); ++k)
    if (t.bounds[k]) bind(t.indices[k].first, *t.bounds[k]);
  for (const Reduced& r : reduced)
    if (const Expr* range = reduction_arg(*r.arg, space).range) bind(r.name, *range);
  for (const Param& p : s.comp->outputs) {
    if (p.name != t.name || !p.type.has_shape) continue;
    if (p.type.batch != space.ellipsis)
      throw SpecError(t.loc, "output '" + p.name + "' is declared " + p.type.text + ": " +
                                 (p.type.batch ? "start the left side with '...', as in "
                                               : "the left side must not start with '...', as "
                                                 "in ") +
                                 p.name + "[" + (p.type.batch ? "..., " : "") + "i, j]");
    const size_t named = n_free - space.batch;
    if (p.type.dims.size() != named)
      throw SpecError(t.loc, "output '" + p.name + "' is declared " + p.type.text + " (" +
                                 std::to_string(p.type.dims.size()) +
                                 " named dimensions) but the left side has " +
                                 std::to_string(named) + " indices");
    for (size_t k = 0; k < named; ++k) {
      const size_t ax = space.batch + k;
      IntExpr dim = eval_int(*p.type.dims[k], s, "a dimension");
      if (ranges[ax] && !same_size(*ranges[ax], dim, locs[ax],
                                   "the range of index '" + space.names[ax] + "' in " +
                                       bound_by[ax] + " and in the declared output " + p.type.text))
        throw SpecError(locs[ax], "shape mismatch: index '" + space.names[ax] + "' ranges over " +
                                      ranges[ax]->str() + " in " + bound_by[ax] + " but over " +
                                      dim.str() + " in the declared output " + p.type.text);
      ranges[ax] = dim;
      bound_by[ax] = "the declared output " + p.type.text;
    }
  }
  std::vector<const Expr*> subs;
  collect_subscripts(*st.value, subs);
  for (const Expr* sub : subs) {
    Value base = eval(*sub->items[0], s);
    if (!base.is_tensor())
      throw SpecError(sub->loc, "only tensors can be subscripted, found " + base.describe(g_));
    const Shape& shape = g_[base.node].shape;
    std::vector<ExprPtr> items = subscript_items(*sub, base.node, space);
    for (size_t p = 0; p < items.size(); ++p) {
      const Expr& ix = *items[p];
      int ax = ix.kind == Expr::Kind::name ? space.axis_of(ix.text) : -1;
      if (ax < 0) continue;
      const IntExpr& r = shape[p];
      std::string here = expr_str(*sub);
      if (ranges[ax] &&
          !same_size(*ranges[ax], r, ix.loc,
                     "the range of index '" + ix.text + "' in " + bound_by[ax] + " and in " + here))
        throw SpecError(ix.loc, "shape mismatch: index '" + ix.text + "' ranges over " +
                                    ranges[ax]->str() + " in " + bound_by[ax] + " but over " +
                                    r.str() + " in " + here);
      if (!ranges[ax]) {
        ranges[ax] = r;
        bound_by[ax] = here;
      }
    }
  }
  // A reduced index with no range yet takes it from an upper bound: `j <= i` over i < N
  // gives j < N.
  for (const Reduced& r : reduced) {
    const int ax = space.axis_of(r.name);
    const ReductionArg ra = reduction_arg(*r.arg, space);
    if (ranges[ax] || !ra.bound || ra.index != r.arg->items[0].get() ||
        (r.arg->text != "<" && r.arg->text != "<="))
      continue;
    Restore<const IndexSpace*> in_space(space_, &space);
    IntExpr limit = eval_int(*r.arg->items[1], s, "a bound");
    if (r.arg->text == "<=") limit = limit + 1;
    if (std::optional<IntExpr> hi = extreme_over(limit, ranges, true)) {
      ranges[ax] = *hi;
      bound_by[ax] = "'" + expr_str(*r.arg) + "'";
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
                                 "' is never bound: use it as a plain subscript of a tensor, or "
                                 "bound it: " +
                                 space.names[k] + " < N");
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
  const size_t q = space_->names.size();
  View v;
  v.shape.assign(q, IntExpr(1));
  std::optional<size_t> gathered;  // the dimension a tensor subscript picks
  NodeId at = -1;
  std::vector<ExprPtr> items = subscript_items(sub, base.node, *space_);
  for (size_t p = 0; p < items.size(); ++p) {
    Value x = eval(*items[p], s);
    if (x.is_tensor()) {
      if (gathered)
        throw SpecError(items[p]->loc, "only one subscript of '" + expr_str(*sub.items[0]) +
                                           "' may be a tensor: a gather reads along one axis");
      if (!is_int(g_[x.node].dtype))
        throw SpecError(items[p]->loc,
                        "a tensor subscript must have an integer dtype, found " + x.describe(g_));
      gathered = p;
      at = x.node;
      v.index.push_back(IntExpr::index(static_cast<int>(q)));
      continue;
    }
    if (x.kind != Value::Kind::integer)
      throw SpecError(items[p]->loc,
                      "a subscript must be an integer expression of sizes and attributes, or a "
                      "tensor of an integer dtype, found " +
                          x.describe(g_));
    std::set<std::string> vars;
    x.integer.collect_vars(vars);
    for (const std::string& n : vars)
      if (n[0] == '%') {
        int ax = std::stoi(n.substr(1));
        v.shape[ax] = space_->ranges[ax];
      }
    v.index.push_back(x.integer);
  }
  if (bounded_ > 0) {  // a subscript that may leave its tensor outside the domain reads 0 there
    std::vector<std::optional<IntExpr>> ranges(space_->ranges.begin(), space_->ranges.end());
    const Shape& shape = g_[base.node].shape;
    for (size_t p = 0; p < v.index.size(); ++p) {
      if (p == gathered) continue;  // the gathered axis: a position or zero (docs/primitives.md)
      std::optional<IntExpr> lo = extreme_over(v.index[p], ranges, false),
                             hi = extreme_over(v.index[p], ranges, true);
      if (!lo || !hi || !provably_nonnegative(*lo) || !provably_nonnegative(shape[p] - 1 - *hi))
        v.mask.push_back({v.index[p], shape[p]});
    }
  }
  if (!gathered) return Value::tensor(g_.view(base.node, v));
  // A gather along an extra last axis of the space: the source viewed over the space and that
  // axis, the positions over the space (both over the axes either uses) with a size-1 last axis.
  const Shape& at_shape = g_[at].shape;
  for (size_t k = 0; k < q && at_shape.size() == q; ++k)
    if (at_shape[k] != IntExpr(1)) v.shape[k] = at_shape[k];
  const Shape space_shape = v.shape;
  Shape extended = space_shape;
  extended.push_back(IntExpr(1));
  v.shape.push_back(g_[base.node].shape[*gathered]);
  NodeId positions = g_.view(broadcast_to(at, space_shape, items[*gathered]->loc),
                             views::reshape(space_shape, extended));
  NodeId picked = g_.gather(g_.view(base.node, v), positions, static_cast<int>(q));
  return Value::tensor(g_.view(picked, views::reshape(extended, space_shape)));
}

std::vector<ExprPtr> Lowerer::subscript_items(const Expr& sub, NodeId base,
                                              const IndexSpace& space) {
  const Shape& shape = g_[base].shape;
  const size_t rank = shape.size();
  std::vector<ExprPtr> items(sub.items.begin() + 1, sub.items.end());
  auto dots = std::find_if(items.begin(), items.end(),
                           [](const ExprPtr& e) { return e->kind == Expr::Kind::ellipsis; });
  const bool has_dots = dots != items.end();
  if (has_dots) {
    if (auto again = std::find_if(dots + 1, items.end(),
                                  [](const ExprPtr& e) { return e->kind == Expr::Kind::ellipsis; });
        again != items.end())
      throw SpecError((*again)->loc, "a subscript may hold one '...'");
    const size_t named = items.size() - 1;
    if (rank >= named) {
      const size_t covered = rank - named;
      if (covered > space.batch)
        throw SpecError((*dots)->loc,
                        "'...' in '" + expr_str(sub) + "' stands for " + std::to_string(covered) +
                            " dimensions, but '...' on the left for " +
                            std::to_string(space.batch) +
                            (space.ellipsis ? "" : " (start the left side with '...')"));
      const SourceLoc at = (*dots)->loc;
      std::vector<ExprPtr> dims;
      for (size_t j = 0; j < covered; ++j) {
        auto name = std::make_shared<Expr>();
        name->kind = Expr::Kind::name;
        name->loc = at;
        name->text = ellipsis_name(space.batch - covered + j);
        dims.push_back(name);
      }
      dots = items.erase(dots);
      items.insert(dots, dims.begin(), dims.end());
    }
  }
  if (items.size() != rank)
    throw SpecError(sub.loc, "subscript rank mismatch: '" + expr_str(*sub.items[0]) + "' is " +
                                 std::string(dtype_name(g_[base].dtype)) + shape_str(shape) +
                                 " (rank " + std::to_string(rank) + ") but is given " +
                                 std::to_string(sub.items.size() - 1) +
                                 " subscripts; expected one per dimension" +
                                 (has_dots ? "" : " (or '...' for the leading ones)"));
  return items;
}

}  // namespace kiln
