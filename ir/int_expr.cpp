#include "ir/int_expr.h"

#include <algorithm>
#include <stdexcept>

namespace kiln {

namespace {

using Atom = std::shared_ptr<const IntAtom>;
using Term = IntExpr::Term;

std::string monomial_key(const std::vector<Atom>& f) {
  std::string k;
  for (const auto& a : f) {
    if (!k.empty()) k += "*";
    k += a->key;
  }
  return k;
}

/** a + b and a * b on coefficients and values; std::overflow_error past int64. */
int64_t add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw std::overflow_error("a size expression overflows int64");
  return r;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw std::overflow_error("a size expression overflows int64");
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw std::runtime_error("division by zero in a size expression");
  if (b == -1) return mul(a, -1);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  return a - floor_div(a, b) * b;
}

Atom make_atom(IntAtom::Kind kind, const std::string& name, const IntExpr& a, const IntExpr& b) {
  auto atom = std::make_shared<IntAtom>();
  atom->kind = kind;
  atom->name = name;
  atom->a = a;
  atom->b = b;
  if (kind == IntAtom::Kind::var)
    atom->key = name;
  else
    atom->key = "(" + a.key() + (kind == IntAtom::Kind::floordiv ? ")/(" : ")%(") + b.key() + ")";
  return atom;
}

/** Splits `a` into (quotient, remainder) terms: terms that `b` divides exactly and the rest.
 *  `b` must be a single term. */
std::pair<std::vector<Term>, std::vector<Term>> split_divisible(const IntExpr& a, const Term& b) {
  std::vector<Term> quotient, rest;
  for (const Term& t : a.terms()) {
    bool ok = b.coeff != 0 && t.coeff % b.coeff == 0;
    std::vector<Atom> remaining = t.factors;
    for (const Atom& f : b.factors) {
      auto it = std::find_if(remaining.begin(), remaining.end(),
                             [&](const Atom& x) { return x->key == f->key; });
      if (it == remaining.end()) {
        ok = false;
        break;
      }
      remaining.erase(it);
    }
    if (ok)
      quotient.push_back({t.coeff / b.coeff, remaining});
    else
      rest.push_back(t);
  }
  return {quotient, rest};
}

std::string term_str(const Term& t) {
  std::string s;
  int64_t c = t.coeff < 0 ? -t.coeff : t.coeff;
  if (t.factors.empty()) return std::to_string(c);
  if (c != 1) s = std::to_string(c) + "*";
  for (size_t i = 0; i < t.factors.size(); ++i) {
    const IntAtom& a = *t.factors[i];
    if (i) s += "*";
    if (a.kind == IntAtom::Kind::var) {
      s += a.name;
    } else {
      auto paren = [](const IntExpr& e) {
        return e.terms().size() == 1 && e.terms()[0].factors.size() <= 1 && e.terms()[0].coeff >= 0
                   ? e.str()
                   : "(" + e.str() + ")";
      };
      s +=
          "(" + paren(a.a) + (a.kind == IntAtom::Kind::floordiv ? " / " : " % ") + paren(a.b) + ")";
    }
  }
  return s;
}

/** The index of the term of `terms` whose monomial is `want`'s, or -1. */
int find_monomial(const std::vector<Term>& terms, const Term& want) {
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    if (t.factors.size() != want.factors.size()) continue;
    bool same = true;
    for (size_t k = 0; k < t.factors.size() && same; ++k)
      same = t.factors[k]->key == want.factors[k]->key;
    if (same) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

IntExpr IntExpr::merge_div_mod() const {
  for (const Term& t : terms_)
    for (size_t f = 0; f < t.factors.size(); ++f) {
      const IntAtom& m = *t.factors[f];
      if (m.kind != IntAtom::Kind::mod || m.b.terms_.size() != 1) continue;
      IntExpr rest(t.coeff);
      for (size_t g = 0; g < t.factors.size(); ++g)
        if (g != f) {
          IntExpr one;
          one.terms_.push_back({1, {t.factors[g]}});
          rest = rest * one;
        }
      IntExpr div_term = rest * m.b * floordiv(m.a, m.b);
      if (div_term.terms_.size() != 1) continue;
      int k = find_monomial(terms_, div_term.terms_[0]);
      if (k < 0 || terms_[k].coeff != div_term.terms_[0].coeff) continue;
      return *this - rest * mod(m.a, m.b) - div_term + rest * m.a;
    }
  return *this;
}

IntExpr::IntExpr(int64_t c) {
  if (c != 0) terms_.push_back({c, {}});
}

IntExpr IntExpr::var(const std::string& name) {
  IntExpr e;
  e.terms_.push_back({1, {make_atom(IntAtom::Kind::var, name, {}, {})}});
  return e;
}

IntExpr IntExpr::index(int k) {
  return var("%" + std::to_string(k));
}

IntExpr IntExpr::from_terms(std::vector<Term> terms) {
  for (Term& t : terms)
    std::sort(t.factors.begin(), t.factors.end(),
              [](const Atom& x, const Atom& y) { return x->key < y->key; });
  std::map<std::string, Term> merged;
  for (Term& t : terms) {
    auto [it, inserted] = merged.emplace(monomial_key(t.factors), t);
    if (!inserted) it->second.coeff = add(it->second.coeff, t.coeff);
  }
  IntExpr e;
  bool has_mod = false;
  for (auto& [k, t] : merged)
    if (t.coeff != 0) {
      for (const Atom& f : t.factors)
        has_mod |= f->kind == IntAtom::Kind::mod;
      e.terms_.push_back(std::move(t));
    }
  return has_mod && e.terms_.size() > 1 ? e.merge_div_mod() : e;
}

IntExpr operator+(const IntExpr& a, const IntExpr& b) {
  std::vector<Term> t = a.terms_;
  t.insert(t.end(), b.terms_.begin(), b.terms_.end());
  return IntExpr::from_terms(std::move(t));
}

IntExpr operator-(const IntExpr& a) {
  std::vector<Term> t = a.terms_;
  for (Term& x : t)
    x.coeff = mul(x.coeff, -1);
  return IntExpr::from_terms(std::move(t));
}

IntExpr operator-(const IntExpr& a, const IntExpr& b) {
  return a + (-b);
}

IntExpr operator*(const IntExpr& a, const IntExpr& b) {
  std::vector<Term> t;
  for (const Term& x : a.terms_)
    for (const Term& y : b.terms_) {
      Term p{mul(x.coeff, y.coeff), x.factors};
      p.factors.insert(p.factors.end(), y.factors.begin(), y.factors.end());
      t.push_back(std::move(p));
    }
  return IntExpr::from_terms(std::move(t));
}

IntExpr floordiv(const IntExpr& a, const IntExpr& b) {
  auto ca = a.as_constant(), cb = b.as_constant();
  if (cb && *cb == 0) throw std::runtime_error("division by zero in a size expression");
  if (ca && cb) return floor_div(*ca, *cb);
  if (cb && *cb == 1) return a;
  if (b.terms().size() == 1 && b.terms()[0].coeff > 0) {
    auto [q, r] = split_divisible(a, b.terms()[0]);
    IntExpr quotient = IntExpr::from_terms(q);
    if (r.empty()) return quotient;
    IntExpr rest = IntExpr::from_terms(r);
    if (!q.empty()) return quotient + floordiv(rest, b);
    IntExpr e;
    e.terms_.push_back({1, {make_atom(IntAtom::Kind::floordiv, "", rest, b)}});
    return e;
  }
  IntExpr e;
  e.terms_.push_back({1, {make_atom(IntAtom::Kind::floordiv, "", a, b)}});
  return e;
}

IntExpr mod(const IntExpr& a, const IntExpr& b) {
  auto ca = a.as_constant(), cb = b.as_constant();
  if (cb && *cb == 0) throw std::runtime_error("modulus by zero in a size expression");
  if (ca && cb) return floor_mod(*ca, *cb);
  if (cb && *cb == 1) return 0;
  IntExpr rest = a;
  if (b.terms().size() == 1 && b.terms()[0].coeff > 0) {
    auto [q, r] = split_divisible(a, b.terms()[0]);
    if (r.empty()) return 0;
    rest = IntExpr::from_terms(r);
    if (!q.empty()) return mod(rest, b);  // (q * b + rest) % b: a constant rest folds
  }
  IntExpr e;
  e.terms_.push_back({1, {make_atom(IntAtom::Kind::mod, "", rest, b)}});
  return e;
}

std::optional<int64_t> IntExpr::as_constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_[0].factors.empty()) return terms_[0].coeff;
  return std::nullopt;
}

std::optional<std::string> IntExpr::as_var() const {
  if (terms_.size() == 1 && terms_[0].coeff == 1 && terms_[0].factors.size() == 1 &&
      terms_[0].factors[0]->kind == IntAtom::Kind::var)
    return terms_[0].factors[0]->name;
  return std::nullopt;
}

int64_t IntExpr::eval(const std::map<std::string, int64_t>& env) const {
  int64_t sum = 0;
  for (const Term& t : terms_) {
    int64_t p = t.coeff;
    for (const Atom& f : t.factors) {
      int64_t v = 0;
      switch (f->kind) {
        case IntAtom::Kind::var: {
          auto it = env.find(f->name);
          if (it == env.end()) throw std::runtime_error("unbound size variable '" + f->name + "'");
          v = it->second;
          break;
        }
        case IntAtom::Kind::floordiv:
          v = floor_div(f->a.eval(env), f->b.eval(env));
          break;
        case IntAtom::Kind::mod:
          v = floor_mod(f->a.eval(env), f->b.eval(env));
          break;
      }
      p = mul(p, v);
    }
    sum = add(sum, p);
  }
  return sum;
}

IntExpr IntExpr::substitute(const std::map<std::string, IntExpr>& sub) const {
  IntExpr sum;
  for (const Term& t : terms_) {
    IntExpr p = t.coeff;
    for (const Atom& f : t.factors) {
      switch (f->kind) {
        case IntAtom::Kind::var: {
          auto it = sub.find(f->name);
          p = p * (it == sub.end() ? var(f->name) : it->second);
          break;
        }
        case IntAtom::Kind::floordiv:
          p = p * floordiv(f->a.substitute(sub), f->b.substitute(sub));
          break;
        case IntAtom::Kind::mod:
          p = p * mod(f->a.substitute(sub), f->b.substitute(sub));
          break;
      }
    }
    sum = sum + p;
  }
  return sum;
}

void IntExpr::collect_vars(std::set<std::string>& out) const {
  for (const Term& t : terms_)
    for (const Atom& f : t.factors) {
      if (f->kind == IntAtom::Kind::var) {
        out.insert(f->name);
      } else {
        f->a.collect_vars(out);
        f->b.collect_vars(out);
      }
    }
}

bool nonnegative_over_vars(const IntExpr& e) {
  for (const IntExpr::Term& t : e.terms()) {
    if (t.coeff < 0) return false;
    for (const auto& f : t.factors)
      if (f->kind != IntAtom::Kind::var) return false;
  }
  return true;
}

bool IntExpr::is_affine() const {
  for (const Term& t : terms_) {
    if (t.factors.size() > 1) return false;
    if (!t.factors.empty() && t.factors[0]->kind != IntAtom::Kind::var) return false;
  }
  return true;
}

std::string IntExpr::str() const {
  if (terms_.empty()) return "0";
  std::vector<const Term*> order;
  for (const Term& t : terms_)
    if (t.coeff > 0 && !t.factors.empty()) order.push_back(&t);
  for (const Term& t : terms_)
    if (t.coeff < 0 && !t.factors.empty()) order.push_back(&t);
  for (const Term& t : terms_)
    if (t.factors.empty()) order.push_back(&t);
  std::string s;
  for (const Term* t : order) {
    if (s.empty())
      s = (t->coeff < 0 ? "-" : "") + term_str(*t);
    else
      s += (t->coeff < 0 ? " - " : " + ") + term_str(*t);
  }
  return s;
}

const std::string& IntExpr::key() const {
  if (!key_) {
    std::string k;
    for (const Term& t : terms_)
      k += std::to_string(t.coeff) + "*" + monomial_key(t.factors) + ";";
    key_ = std::make_shared<const std::string>(std::move(k));
  }
  return *key_;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

bool same_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

std::vector<int64_t> eval_shape(const Shape& s, const std::map<std::string, int64_t>& env) {
  std::vector<int64_t> out;
  for (const IntExpr& d : s)
    out.push_back(d.eval(env));
  return out;
}

std::optional<int64_t> affine_coefficient(const IntExpr& e, const std::string& var) {
  int64_t c = 0;
  for (const IntExpr::Term& t : e.terms()) {
    bool has = false;
    for (const auto& f : t.factors) {
      if (f->kind == IntAtom::Kind::var) {
        if (f->name == var) {
          if (has || t.factors.size() != 1) return std::nullopt;
          has = true;
        }
      } else if (affine_coefficient(f->a, var) != 0 || affine_coefficient(f->b, var) != 0) {
        return std::nullopt;
      }
    }
    if (has) c += t.coeff;
  }
  return c;
}

std::optional<int64_t> eval_at(const IntExpr& e, int64_t value) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  std::map<std::string, int64_t> env;
  for (const std::string& v : vars)
    env[v] = value;
  try {
    return e.eval(env);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace kiln
