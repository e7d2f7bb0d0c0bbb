#include "simplifier/index_arith.h"

#include <optional>

namespace kiln {

namespace {

using Extents = std::map<std::string, IntExpr>;

/** Lower and upper bound of an expression, both inclusive. */
struct Range {
  IntExpr lo, hi;
};

/** The range of `e` when its atoms are variables: index variables span [0, extent - 1], a size
 *  variable is itself (>= 0). */
std::optional<Range> range_of(const IntExpr& e, const Extents& extents) {
  Range r{IntExpr(0), IntExpr(0)};
  for (const IntExpr::Term& t : e.terms()) {
    IntExpr lo(1), hi(1);
    for (const auto& f : t.factors) {
      if (f->kind != IntAtom::Kind::var) return std::nullopt;
      auto it = extents.find(f->name);
      if (it != extents.end()) {
        lo = IntExpr(0);
        hi = hi * (it->second - 1);
      } else {
        lo = lo * IntExpr::var(f->name);
        hi = hi * IntExpr::var(f->name);
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

/** `a` split as q * b + r, with r the terms that `b` (a positive constant or one size variable)
 *  does not divide. */
std::optional<std::pair<IntExpr, IntExpr>> split(const IntExpr& a, const IntExpr& b) {
  std::optional<int64_t> c = b.as_constant();
  std::optional<std::string> var = b.as_var();
  if (!(c && *c > 0) && !(var && (*var)[0] != '%')) return std::nullopt;
  IntExpr q(0), r(0);
  for (const IntExpr::Term& t : a.terms()) {
    IntExpr rest(1);
    bool divided = false;
    for (const auto& f : t.factors) {
      IntExpr atom = f->kind == IntAtom::Kind::var        ? IntExpr::var(f->name)
                     : f->kind == IntAtom::Kind::floordiv ? floordiv(f->a, f->b)
                                                          : mod(f->a, f->b);
      if (var && !divided && f->kind == IntAtom::Kind::var && f->name == *var)
        divided = true;
      else
        rest = rest * atom;
    }
    if (c && t.coeff % *c == 0) {
      q = q + IntExpr(t.coeff / *c) * rest;
    } else if (divided) {
      q = q + IntExpr(t.coeff) * rest;
    } else {
      r = r + IntExpr(t.coeff) * rest;
    }
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
