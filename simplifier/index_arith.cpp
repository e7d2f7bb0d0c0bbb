#include "simplifier/index_arith.h"

#include <algorithm>
#include <optional>
#include <set>

namespace kiln {

namespace {

using Extents = std::map<std::string, IntExpr>;

/** Lower and upper bound of an expression, both inclusive. */
struct Range {
  IntExpr lo, hi;
};

/** Whether `e` holds no index variable. */
bool size_atom_expr(const IntExpr& e) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  for (const std::string& v : vars)
    if (v[0] == '%') return false;
  return true;
}

/** Whether atom `f` holds no index variable: a size, or a division or modulus of sizes. */
bool size_atom(const IntAtom& f) {
  if (f.kind == IntAtom::Kind::var) return f.name[0] != '%';
  return size_atom_expr(f.a) && size_atom_expr(f.b);
}

/** The atom `f` as an expression of its own. */
IntExpr atom_expr(const IntAtom& f) {
  return f.kind == IntAtom::Kind::var        ? IntExpr::var(f.name)
         : f.kind == IntAtom::Kind::floordiv ? floordiv(f.a, f.b)
                                             : mod(f.a, f.b);
}

/** The range of `e`: index variables span [0, extent - 1], a size variable or an atom of sizes
 *  (`C / 4`) is itself (>= 0), `a % b` with `b` one positive term of sizes spans [0, b - 1]. */
std::optional<Range> range_of(const IntExpr& e, const Extents& extents) {
  Range r{IntExpr(0), IntExpr(0)};
  for (const IntExpr::Term& t : e.terms()) {
    IntExpr lo(1), hi(1);
    for (const auto& f : t.factors) {
      auto it = f->kind == IntAtom::Kind::var ? extents.find(f->name) : extents.end();
      if (it != extents.end()) {
        lo = IntExpr(0);
        hi = hi * (it->second - 1);
      } else if (size_atom(*f)) {
        lo = lo * atom_expr(*f);
        hi = hi * atom_expr(*f);
      } else if (f->kind == IntAtom::Kind::mod && f->b.terms().size() == 1 &&
                 f->b.terms()[0].coeff > 0 && size_atom_expr(f->b)) {
        lo = IntExpr(0);
        hi = hi * (f->b - 1);
      } else {
        return std::nullopt;
      }
    }
    if (t.coeff >= 0) {
      r.lo = r.lo + IntExpr(t.coeff) * lo;
      r.hi = r.hi + IntExpr(t.coeff) * hi;
    } else {
      r.lo = r.lo + IntExpr(t.coeff) * hi;
      r.hi = r.hi + IntExpr(t.coeff) * lo;
    }
  }
  return r;
}

/** `a` split as q * b + r, with r the terms that `b` does not divide: `b` is one term, a positive
 *  coefficient times atoms without index variables (sizes, `C / 4`), each non-negative. */
std::optional<std::pair<IntExpr, IntExpr>> split(const IntExpr& a, const IntExpr& b) {
  if (b.terms().size() != 1 || b.terms()[0].coeff <= 0) return std::nullopt;
  const IntExpr::Term& bt = b.terms()[0];
  for (const auto& f : bt.factors)
    if (!size_atom(*f)) return std::nullopt;
  IntExpr q(0), r(0);
  for (const IntExpr::Term& t : a.terms()) {
    std::vector<std::shared_ptr<const IntAtom>> rest = t.factors;
    bool divided = t.coeff % bt.coeff == 0;
    for (const auto& f : bt.factors) {
      auto it =
          std::find_if(rest.begin(), rest.end(), [&](const auto& x) { return x->key == f->key; });
      if (it == rest.end()) {
        divided = false;
        break;
      }
      rest.erase(it);
    }
    IntExpr whole(t.coeff), part(divided ? t.coeff / bt.coeff : 1);
    for (const auto& f : divided ? rest : t.factors)
      (divided ? part : whole) = (divided ? part : whole) * atom_expr(*f);
    if (divided)
      q = q + part;
    else
      r = r + whole;
  }
  return std::make_pair(q, r);
}

/** True when 0 <= e < bound for every value in the ranges. */
bool within(const IntExpr& e, const IntExpr& bound, const Extents& extents) {
  std::optional<Range> r = range_of(e, extents);
  return r && nonnegative_over_vars(r->lo) && nonnegative_over_vars(bound - 1 - r->hi);
}

IntExpr simplify_atom(const IntAtom& atom, const Extents& extents) {
  if (atom.kind == IntAtom::Kind::var) return IntExpr::var(atom.name);
  IntExpr a = simplify_index(atom.a, extents), b = simplify_index(atom.b, extents);
  bool div = atom.kind == IntAtom::Kind::floordiv;
  if (auto qr = split(a, b); qr && within(qr->second, b, extents))
    return div ? qr->first : qr->second;
  // b = m * n with a = q * m + r, 0 <= r < m: a / b is q / n and a % b is (q % n) * m + r, as
  // (i1 * P + i2) / (G * P) is i1 / G where i2 < P (a reshape of [C, P] into [C / G, G * P]).
  if (b.terms().size() == 1 && b.terms()[0].coeff > 0) {
    const IntExpr::Term& bt = b.terms()[0];
    std::vector<IntExpr> divisors;
    if (bt.coeff > 1 && !bt.factors.empty()) divisors.push_back(IntExpr(bt.coeff));
    for (const auto& f : bt.factors)
      if (bt.factors.size() > 1 || bt.coeff > 1) divisors.push_back(atom_expr(*f));
    for (const IntExpr& m : divisors) {
      auto qr = split(a, m);
      if (!qr || qr->first == IntExpr(0) || !within(qr->second, m, extents)) continue;
      IntExpr n = split(b, m)->first;
      IntExpr quotient = simplify_index(floordiv(qr->first, n), extents);
      return div ? quotient : simplify_index(mod(qr->first, n), extents) * m + qr->second;
    }
  }
  return div ? floordiv(a, b) : mod(a, b);
}

}  // namespace

IntExpr simplify_index(const IntExpr& e, const Extents& extents) {
  IntExpr out(0);
  for (const IntExpr::Term& t : e.terms()) {
    IntExpr term(t.coeff);
    for (const auto& f : t.factors)
      term = term * simplify_atom(*f, extents);
    out = out + term;
  }
  return out;
}

View simplify_view_index(const View& v) {
  Extents extents;
  for (size_t k = 0; k < v.shape.size(); ++k)
    extents["%" + std::to_string(k)] = v.shape[k];
  View out = v;
  for (IntExpr& e : out.index)
    e = simplify_index(e, extents);
  out.mask.clear();
  for (const MaskBound& m : v.mask) {
    MaskBound s{simplify_index(m.expr, extents), m.bound};
    if (!within(s.expr, s.bound, extents)) out.mask.push_back(s);
  }
  return out;
}

}  // namespace kiln
