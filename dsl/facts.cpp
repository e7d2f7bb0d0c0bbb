// Shape facts in lowering (docs/spec-language.md, "Shape facts"): a composite's `where` facts,
// and the equality of two sizes that a shape check needs, proved or refuted by the facts known
// so far (ir/size_facts.h) or else deferred to a check of the graph when the sizes are bound.
#include "dsl/lowering.h"
#include "ir/suggest.h"

namespace kiln {

namespace {

CheckSite site_of(const SourceLoc& at) {
  return {at.file, at.line, at.col};
}

/** Checks that `e`, a side of fact `f` of `c`, uses only integers, sizes and attributes of `s`
 *  and arithmetic; a size `c` names in a type but no input binds is left to eval's message. */
void check_fact_side(const Expr& e, const Fact& f, const Composite& c, const Scope& s) {
  static const std::set<std::string> arithmetic = {"+", "-", "*", "/", "//", "%"};
  switch (e.kind) {
    case Expr::Kind::number:
      if (!e.is_integer) break;
      return;
    case Expr::Kind::name: {
      if (s.sizes.count(e.text) || s.attrs.count(e.text)) return;
      if (names_size_variable(c, e.text)) return;
      std::vector<std::string> known;
      for (const auto& [name, v] : s.sizes)
        known.push_back(name);
      for (const auto& [name, v] : s.attrs)
        known.push_back(name);
      throw SpecError(e.loc, "unknown size '" + e.text + "' in fact '" + f.text + "'" +
                                 did_you_mean(e.text, known) +
                                 "; expected a size variable of an input or an attribute of '" +
                                 c.name + "'");
    }
    case Expr::Kind::unary:
    case Expr::Kind::binary:
      if (!arithmetic.count(e.text)) break;
      for (const ExprPtr& x : e.items)
        check_fact_side(*x, f, c, s);
      return;
    default:
      break;
  }
  throw SpecError(e.loc, "fact '" + f.text +
                             "' may compare only integers, sizes and attributes combined with "
                             "+ - * / // %, found " +
                             expr_str(e));
}

}  // namespace

void Lowerer::defer(const SizeRelation& r, const std::string& claim, const SourceLoc& at,
                    bool stated) {
  SizeCheck check{r, claim, site_of(at), {}, stated};
  for (auto it = sites_.rbegin(); it != sites_.rend(); ++it) {
    CheckSite call = site_of(*it);
    if (check.trace.empty() && call == check.site) continue;  // the check is at the call itself
    check.trace.push_back(call);
  }
  g_.checks.push_back(std::move(check));
  facts_.assume(r);
}

void Lowerer::assume_facts(const Composite& c, Scope& s) {
  for (const Fact& f : c.facts) {
    for (const ExprPtr& side : f.expr->items)
      check_fact_side(*side, f, c, s);
    SizeRelation r{eval_int(*f.expr->items[0], s, "a side of a fact"),
                   *parse_relation(f.expr->text),
                   eval_int(*f.expr->items[1], s, "a side of a fact")};
    std::string claim = "fact '" + f.text + "' of '" + c.name + "'";
    switch (facts_.decide(r)) {
      case Truth::proved:
        break;
      case Truth::refuted:
        throw SpecError(
            f.loc,
            claim + " does not hold: with the sizes and attributes here it reads " + r.str());
      case Truth::unknown:
        defer(r, claim, f.loc, true);
        break;
    }
  }
}

bool Lowerer::same_size(const IntExpr& a, const IntExpr& b, const SourceLoc& at,
                        const std::string& what) {
  if (a == b) return true;
  SizeRelation r{a, Relation::eq, b};
  Truth t = facts_.decide(r);
  if (t != Truth::unknown) return t == Truth::proved;
  if (has_index_vars(a) || has_index_vars(b)) return false;
  defer(r, "shape equality '" + r.str() + "' (" + what + ")", at, false);
  return true;
}

bool Lowerer::same_dims(const Shape& a, const Shape& b, const SourceLoc& at,
                        const std::string& what) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k] && facts_.decide({a[k], Relation::eq, b[k]}) == Truth::refuted) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_size(a[k], b[k], at, "dimension " + std::to_string(k) + " of " + what)) return false;
  return true;
}

}  // namespace kiln
