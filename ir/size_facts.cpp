#include "ir/size_facts.h"

#include <numeric>
#include <set>

namespace kiln {

namespace {

/** True when `x` is non-negative for every binding of its size variables (never negative):
 *  positive coefficients times size variables, floor divisions of such by a positive constant,
 *  and moduli by a positive constant. */
bool plainly_nonnegative(const IntExpr& x) {
  for (const IntExpr::Term& t : x.terms()) {
    if (t.coeff < 0) return false;
    for (const auto& f : t.factors) {
      auto b = f->b.as_constant();
      switch (f->kind) {
        case IntAtom::Kind::var:
          if (f->name[0] == '%') return false;  // an index variable of a view
          break;
        case IntAtom::Kind::floordiv:
          if (!b || *b <= 0 || !plainly_nonnegative(f->a)) return false;
          break;
        case IntAtom::Kind::mod:
          if (!b || *b <= 0) return false;
          break;
      }
    }
  }
  return true;
}

/** `d = 0` written one way: divided by the gcd of its coefficients, the first term positive. */
IntExpr canonical(const IntExpr& d) {
  int64_t g = 0;
  for (const IntExpr::Term& t : d.terms())
    g = std::gcd(g, t.coeff);
  if (g == 0) return d;
  if (d.terms().front().coeff < 0) g = -g;
  return g == 1 ? d : floordiv(d, IntExpr(g < 0 ? -g : g)) * (g < 0 ? -1 : 1);
}

Truth negate(Truth t) {
  return t == Truth::proved ? Truth::refuted : t == Truth::refuted ? Truth::proved : t;
}

std::set<std::string> vars_of(const SizeRelation& r) {
  std::set<std::string> vars;
  r.lhs.collect_vars(vars);
  r.rhs.collect_vars(vars);
  return vars;
}

}  // namespace

const char* relation_name(Relation r) {
  switch (r) {
    case Relation::eq:
      return "==";
    case Relation::ne:
      return "!=";
    case Relation::lt:
      return "<";
    case Relation::le:
      return "<=";
    case Relation::gt:
      return ">";
    case Relation::ge:
      return ">=";
  }
  return "?";
}

std::optional<Relation> parse_relation(const std::string& op) {
  for (Relation r :
       {Relation::eq, Relation::ne, Relation::lt, Relation::le, Relation::gt, Relation::ge})
    if (op == relation_name(r)) return r;
  return std::nullopt;
}

std::string SizeRelation::str() const {
  return lhs.str() + " " + relation_name(rel) + " " + rhs.str();
}

bool SizeRelation::holds(const std::map<std::string, int64_t>& sizes) const {
  int64_t a = lhs.eval(sizes), b = rhs.eval(sizes);
  switch (rel) {
    case Relation::eq:
      return a == b;
    case Relation::ne:
      return a != b;
    case Relation::lt:
      return a < b;
    case Relation::le:
      return a <= b;
    case Relation::gt:
      return a > b;
    case Relation::ge:
      return a >= b;
  }
  return false;
}

IntExpr SizeFacts::normalize(const IntExpr& e) const {
  if (subst_.empty()) return e;
  try {
    return e.substitute(subst_);
  } catch (const std::exception&) {  // overflow or a division by zero: proves nothing
    return e;
  }
}

Truth SizeFacts::decide(const SizeRelation& r) const {
  try {
    return decide_normalized(normalize(r.lhs - r.rhs), r.rel);
  } catch (const std::exception&) {
    return Truth::unknown;
  }
}

bool SizeFacts::nonnegative(const IntExpr& d) const {
  if (plainly_nonnegative(d)) return true;
  for (const IntExpr& s : nonnegative_)
    if (plainly_nonnegative(d - s)) return true;
  return false;
}

Truth SizeFacts::decide_normalized(const IntExpr& d, Relation rel) const {
  auto equal = [&] {
    if (auto c = d.as_constant()) return *c == 0 ? Truth::proved : Truth::refuted;
    IntExpr canon = canonical(d);
    for (const IntExpr& z : zero_)
      if (z == canon) return Truth::proved;
    for (const IntExpr& z : nonzero_)
      if (z == canon) return Truth::refuted;
    if (nonnegative(d - 1) || nonnegative(-d - 1)) return Truth::refuted;
    return Truth::unknown;
  };
  auto at_least = [&](const IntExpr& x) {  // x >= 0
    if (nonnegative(x)) return Truth::proved;
    if (nonnegative(-x - 1)) return Truth::refuted;
    return Truth::unknown;
  };
  switch (rel) {
    case Relation::eq:
      return equal();
    case Relation::ne:
      return negate(equal());
    case Relation::ge:
      return at_least(d);
    case Relation::gt:
      return at_least(d - 1);
    case Relation::le:
      return at_least(-d);
    case Relation::lt:
      return at_least(-d - 1);
  }
  return Truth::unknown;
}

void SizeFacts::assume(const SizeRelation& r) {
  try {
    IntExpr d = normalize(r.lhs - r.rhs);
    switch (r.rel) {
      case Relation::eq:
        assume_zero(d);
        break;
      case Relation::ne:
        if (!d.is_constant()) nonzero_.push_back(canonical(d));
        break;
      case Relation::ge:
        nonnegative_.push_back(d);
        break;
      case Relation::gt:
        nonnegative_.push_back(d - 1);
        break;
      case Relation::le:
        nonnegative_.push_back(-d);
        break;
      case Relation::lt:
        nonnegative_.push_back(-d - 1);
        break;
    }
  } catch (const std::exception&) {
    // A fact that overflows proves nothing; it is still checked when the sizes are bound.
  }
}

void SizeFacts::assume_zero(IntExpr d) {
  if (d.is_constant()) return;
  // `a % b == 0` with b one term: a == b * q for a fresh q, so that (a / b) * b becomes a.
  if (d.terms().size() == 1 && d.terms()[0].factors.size() == 1) {
    const IntAtom& f = *d.terms()[0].factors[0];
    if (f.kind == IntAtom::Kind::mod && f.b.terms().size() == 1 && f.b.terms()[0].coeff > 0)
      d = f.a - f.b * IntExpr::var("?" + std::to_string(++fresh_));
  }
  d = canonical(d);
  std::set<std::string> vars;
  d.collect_vars(vars);
  // Solve for a variable of coefficient +-1 (the last by name: `J == K` replaces K by J).
  for (auto v = vars.rbegin(); v != vars.rend(); ++v) {
    if ((*v)[0] == '%') continue;
    std::optional<int64_t> c = affine_coefficient(d, *v);
    if (c && (*c == 1 || *c == -1)) {
      substitute_everywhere(*v, (IntExpr::var(*v) * *c - d) * *c);
      return;
    }
  }
  zero_.push_back(d);
}

void SizeFacts::substitute_everywhere(const std::string& var, const IntExpr& value) {
  const std::map<std::string, IntExpr> one{{var, value}};
  for (auto& [k, e] : subst_)
    e = e.substitute(one);
  subst_[var] = value;
  for (auto* list : {&zero_, &nonzero_, &nonnegative_})
    for (IntExpr& e : *list)
      e = e.substitute(one);
  for (auto* list : {&zero_, &nonzero_})
    for (IntExpr& e : *list)
      if (!e.is_constant()) e = canonical(e);
}

std::string CheckSite::str() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

SizeCheckError::SizeCheckError(SizeCheck c, std::string p)
    : std::invalid_argument(c.site.str() + ": " + p), check(std::move(c)), problem(std::move(p)) {}

std::optional<std::string> size_check_failure(const SizeCheck& c,
                                              const std::map<std::string, int64_t>& sizes) {
  std::string with;
  for (const std::string& v : vars_of(c.relation)) {
    auto it = sizes.find(v);
    if (it == sizes.end()) return std::nullopt;
    with += (with.empty() ? " with " : ", ") + v + " = " + std::to_string(it->second);
  }
  try {
    if (c.relation.holds(sizes)) return std::nullopt;
    std::string detail;  // the value of each side that is more than a number or a size
    for (const IntExpr* side : {&c.relation.lhs, &c.relation.rhs})
      if (!side->is_constant() && !side->as_var())
        detail += (detail.empty() ? ": " : ", ") + side->str() + " is " +
                  std::to_string(side->eval(sizes));
    return c.claim + " does not hold" + with + detail;
  } catch (const std::exception& e) {
    return c.claim + " cannot be evaluated" + with + ": " + e.what();
  }
}

void check_size_facts(const std::vector<SizeCheck>& checks,
                      const std::map<std::string, int64_t>& sizes) {
  for (const SizeCheck& c : checks)
    if (std::optional<std::string> problem = size_check_failure(c, sizes))
      throw SizeCheckError(c, *problem);
}

}  // namespace kiln
