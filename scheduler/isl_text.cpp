#include "scheduler/isl_text.h"

#include "ir/kernel_ir.h"

#include <cctype>

namespace kiln {

bool IslTextRenderer::has_iterator(const IntExpr& e) const {
  std::set<std::string> vars;
  e.collect_vars(vars);
  for (const auto& v : vars)
    if (!plan_sizes_.count(v)) return true;
  return false;
}

namespace {

IntExpr monomial(const IntExpr::Term& t) {
  IntExpr out = 1;
  for (const auto& f : t.factors) {
    if (f->kind == IntAtom::Kind::var) out = out * IntExpr::var(f->name);
    if (f->kind == IntAtom::Kind::floordiv) out = out * floordiv(f->a, f->b);
    if (f->kind == IntAtom::Kind::mod) out = out * mod(f->a, f->b);
  }
  return out;
}

AstExprPtr atom_to_ast(const IntAtom& a) {
  if (a.kind == IntAtom::Kind::var) {
    auto e = std::make_shared<AstExpr>();
    e->kind = AstExpr::Kind::param;
    e->name = a.name;
    return e;
  }
  return ast_op(a.kind == IntAtom::Kind::floordiv ? "fdiv_q" : "pdiv_r",
                {int_expr_to_ast(a.a), int_expr_to_ast(a.b)});
}

}  // namespace

AstExprPtr int_expr_to_ast(const IntExpr& e) {
  AstExprPtr sum;
  for (const auto& t : e.terms()) {
    AstExprPtr term = t.factors.empty() || t.coeff != 1 ? ast_int(t.coeff) : nullptr;
    for (const auto& f : t.factors)
      term = term ? ast_op("mul", {term, atom_to_ast(*f)}) : atom_to_ast(*f);
    sum = sum ? ast_op("add", {sum, term}) : term;
  }
  return sum ? sum : ast_int(0);
}

std::optional<std::string> IslTextRenderer::render(const IntExpr& e, bool allow_fresh) {
  std::string out;
  for (const auto& t : e.terms()) {
    std::optional<std::string> m = render_monomial(t, allow_fresh);
    if (!m) return std::nullopt;
    const char* sign = t.coeff < 0 ? (out.empty() ? "-" : " - ") : (out.empty() ? "" : " + ");
    out += sign + *m;
  }
  return out.empty() ? "0" : out;
}

/** `|coeff| * monomial`; the caller writes the sign. */
std::optional<std::string> IslTextRenderer::render_monomial(const IntExpr::Term& t,
                                                            bool allow_fresh) {
  int64_t magnitude = t.coeff < 0 ? -t.coeff : t.coeff;
  if (t.factors.empty()) return std::to_string(magnitude);
  std::optional<std::string> atom;
  if (t.factors.size() == 1) atom = render_atom(*t.factors[0]);
  if (!atom && allow_fresh && !has_iterator(monomial(t))) atom = fresh_param(t);
  if (!atom) return std::nullopt;
  return magnitude == 1 ? *atom : std::to_string(magnitude) + "*" + *atom;
}

std::optional<std::string> IslTextRenderer::render_atom(const IntAtom& a) {
  if (a.kind == IntAtom::Kind::var) {
    if (a.name == kGatherVar) return std::nullopt;  // a gathered position: any
    if (plan_sizes_.count(a.name)) size_vars_.insert(a.name);
    return a.name;
  }
  std::optional<int64_t> d = a.b.as_constant();
  if (!d || *d == 0) return std::nullopt;
  std::optional<std::string> num = render(*d > 0 ? a.a : -a.a, false);
  if (!num) return std::nullopt;
  std::string den = std::to_string(*d > 0 ? *d : -*d);
  if (a.kind == IntAtom::Kind::floordiv) return "floor((" + *num + ")/" + den + ")";
  if (*d < 0) return std::nullopt;
  return "((" + *num + ") mod " + den + ")";
}

std::string IslTextRenderer::fresh_param(const IntExpr::Term& t) {
  IntExpr m = monomial(t);
  auto it = fresh_by_key_.find(m.key());
  if (it != fresh_by_key_.end()) return it->second;
  std::string name = "kiln_p" + std::to_string(fresh_.size());
  fresh_by_key_[m.key()] = name;
  fresh_[name] = m;
  // The variables of the product stay out of isl's parameters unless they also appear alone:
  // every parameter costs the scheduler's ILPs (softmax over 16 batch dimensions, merged into
  // one loop over their product, scheduled 6x slower with the 16 unused parameters).
  bool vars_only = true;
  for (const auto& f : t.factors)
    vars_only = vars_only && f->kind == IntAtom::Kind::var;
  if (vars_only) positive_fresh_.insert(name);
  return name;
}

std::string IslTextRenderer::params() const {
  std::string out;
  for (const auto& v : size_vars_)
    out += (out.empty() ? "" : ", ") + v;
  for (const auto& [name, e] : fresh_)
    out += (out.empty() ? "" : ", ") + name;
  return "[" + out + "]";
}

std::string IslTextRenderer::context() const {
  std::string out;
  for (const auto& v : size_vars_)
    out += (out.empty() ? "" : " and ") + v + " >= 0";
  for (const auto& v : positive_fresh_)
    out += (out.empty() ? "" : " and ") + v + " >= 0";
  return params() + " -> { : " + out + " }";
}

std::map<std::string, AstExprPtr> IslTextRenderer::substitutions() const {
  std::map<std::string, AstExprPtr> out;
  for (const auto& [name, e] : fresh_)
    out[name] = int_expr_to_ast(e);
  return out;
}

}  // namespace kiln
