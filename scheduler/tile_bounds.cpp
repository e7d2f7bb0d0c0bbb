// Bounds of a register tile's loops narrowed to what its rows need (scheduler/tile_bounds.h).
#include "scheduler/tile_bounds.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "scheduler/isl_text.h"
#include "scheduler/loop_algebra.h"
#include "scheduler/map_loops.h"

namespace kiln {

namespace {

/** An integer operand of a comparison: an iterator value or an integer constant. */
std::optional<IntExpr> integer_operand(const ScalarExpr& e) {
  if (!e.mask.empty()) return std::nullopt;
  if (e.kind == ScalarExpr::Kind::iterator && e.index.size() == 1) return e.index[0];
  if (e.kind == ScalarExpr::Kind::constant && is_int(e.dtype)) return IntExpr(e.int_value);
  return std::nullopt;
}

/** The bounds `e >= 0` whose conjunction is condition `c` (`a < b` of integer operands, and-ed;
 *  `a <= b` reaches the kernel IR as `a < b + 1`), or false where `c` is something else. */
bool conjuncts(const ScalarExpr& c, std::vector<IntExpr>& out) {
  if (c.kind != ScalarExpr::Kind::op || !c.mask.empty() || c.args.size() != 2) return false;
  if (c.op == Op::bit_and) return conjuncts(*c.args[0], out) && conjuncts(*c.args[1], out);
  if (c.op != Op::cmplt) return false;
  std::optional<IntExpr> a = integer_operand(*c.args[0]), b = integer_operand(*c.args[1]);
  if (!a || !b) return false;
  out.push_back(*b - *a - 1);
  return true;
}

/** `e` with the parameters named in `values` replaced by their expressions. */
AstExprPtr bind_params(const AstExprPtr& e, const std::map<std::string, AstExprPtr>& values) {
  if (e->kind == AstExpr::Kind::param) {
    auto v = values.find(e->name);
    return v == values.end() ? e : v->second;
  }
  if (e->kind != AstExpr::Kind::op) return e;
  auto copy = std::make_shared<AstExpr>(*e);
  for (AstExprPtr& a : copy->args)
    a = bind_params(a, values);
  return copy;
}

/** The value of `f` (over statement iterators and sizes) at the row of a tile of `n` rows from
 *  loop iterator `origin` that makes it largest (`r`'s coefficient in it is `coef`), the other
 *  statement iterators bound to stmt node `stmt`'s loop values; null where `f` names
 *  something else. */
AstExprPtr at_largest_row(const IntExpr& f, const LoopNode& stmt, const std::string& r,
                          int64_t coef, const std::string& origin, int64_t n,
                          const std::vector<std::string>& sizes) {
  std::map<std::string, AstExprPtr> values;
  for (size_t p = 0; p < stmt.args.size(); ++p)
    if (stmt.args[p]) values[iterator_name(static_cast<int>(p))] = stmt.args[p];
  values[r] = add(ast_iter(origin), ast_int(coef > 0 ? n - 1 : 0));
  std::set<std::string> vars;
  f.collect_vars(vars);
  for (const std::string& v : vars)
    if (!values.count(v) && std::find(sizes.begin(), sizes.end(), v) == sizes.end()) return nullptr;
  return bind_params(int_expr_to_ast(f), values);
}

}  // namespace

/** Where sum `s` folds `where(c, term, 0)` and `c` bounds the reduction iterator `k` by the row
 *  iterator `r` (a bounded sum made rectangular, tile_bounded.h: P·V under `j <= i`), the
 *  reduction loop `loop` of a tile of `n` rows from loop iterator `origin` narrowed to the
 *  values where c holds for some row of the tile: outside them every row adds zero. Stmt node
 *  `stmt` gives the statement iterators' loop values; `row_iter` is the row loop's iterator and
 *  `sizes` the plan's size variables. Null where nothing narrows. */
LoopNodePtr narrowed_to_rows(const Statement& s, const LoopNode& stmt, const LoopNode& loop,
                             const std::string& row_iter, const std::string& origin, int64_t n,
                             const std::vector<std::string>& sizes) {
  if (s.kind != Statement::Kind::reduce_update || s.reduce != ReduceKind::sum || !s.value ||
      s.value->kind != ScalarExpr::Kind::op || s.value->op != Op::where ||
      s.value->args.size() != 3 || s.value->args[2]->kind != ScalarExpr::Kind::constant ||
      s.value->args[2]->value != 0 || s.value->args[2]->int_value != 0)
    return nullptr;
  std::vector<IntExpr> bounds;
  if (!conjuncts(*s.value->args[0], bounds)) return nullptr;
  std::set<std::string> ks = driven_iterators(stmt, loop.iter),
                        rs = driven_iterators(stmt, row_iter);
  if (ks.size() != 1 || rs.size() != 1) return nullptr;
  const std::string &k = *ks.begin(), &r = *rs.begin();
  AstExprPtr lower = loop.init, upper_bound = upper(loop);
  bool narrowed = false;
  for (const IntExpr& e : bounds) {
    if (!e.is_affine()) continue;
    std::optional<int64_t> b = affine_coefficient(e, k), a = affine_coefficient(e, r);
    if (!b || !a || (*b != 1 && *b != -1)) continue;
    // e = b·k + f >= 0 holds for some row where it holds at the row that makes f largest.
    AstExprPtr at =
        at_largest_row(e - IntExpr(*b) * IntExpr::var(k), stmt, r, *a, origin, n, sizes);
    if (!at || uses_iterator(*at, row_iter) || uses_iterator(*at, loop.iter)) continue;
    if (*b < 0)
      upper_bound = ast_op("min", {upper_bound, add(at, ast_int(1))});  // k <= f
    else
      lower = ast_op("max", {lower, ast_op("minus", {at})});  // k >= -f
    narrowed = true;
  }
  if (!narrowed) return nullptr;
  auto out = std::make_shared<LoopNode>(loop);
  out->init = lower;
  out->cond = ast_op("lt", {ast_iter(loop.iter), upper_bound});
  return out;
}

/** The end (exclusive) of the lane tile origins of a tile of `n` rows from loop iterator
 *  `origin` that hold a point `s` must compute: where `s.needed` bounds the lane iterator from
 *  above by the row (`j <= r` on causal attention's scores, tile_bounded.h), a tile whose first
 *  lane is past the bound at its last row holds nothing anyone reads. `stmt` gives the statement
 *  iterators' loop values, `loops` are the tile's loops (the reduction loops, then the lanes) and
 *  `row_iter` the row loop's iterator; null where no bound narrows. */
AstExprPtr needed_lane_end(const Statement& s, const LoopNode& stmt,
                           const std::vector<const LoopNode*>& loops, const std::string& row_iter,
                           const std::string& origin, int64_t n,
                           const std::vector<std::string>& sizes) {
  if (s.needed.empty()) return nullptr;
  std::set<std::string> ls = driven_iterators(stmt, loops.back()->iter),
                        rs = driven_iterators(stmt, row_iter);
  if (ls.size() != 1 || rs.size() != 1) return nullptr;
  const std::string &x = *ls.begin(), &r = *rs.begin();
  AstExprPtr end;
  for (const IntExpr& e : s.needed) {
    if (!e.is_affine()) continue;
    std::optional<int64_t> a = affine_coefficient(e, x), b = affine_coefficient(e, r);
    if (!a || !b || *a != -1) continue;
    // e = f - x >= 0: lanes up to f, largest at the row that makes f largest.
    AstExprPtr at = at_largest_row(e + IntExpr::var(x), stmt, r, *b, origin, n, sizes);
    if (!at) continue;
    bool moves = uses_iterator(*at, row_iter);
    for (const LoopNode* l : loops)
      moves |= uses_iterator(*at, l->iter);
    if (moves) continue;
    AstExprPtr past = add(at, ast_int(1));
    end = end ? ast_op("min", {end, past}) : past;
  }
  return end;
}

}  // namespace kiln
