#include "scheduler/online_softmax.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "ir/mma.h"
#include "ir/value_bounds.h"
#include "scheduler/gpu_tile.h"
#include "scheduler/isl_text.h"

namespace kiln {

namespace {

IntExpr iter(int k) {
  return IntExpr::var(iterator_name(k));
}

bool is_load_of(const ScalarExpr& e, int buffer, const std::vector<IntExpr>& index) {
  return e.kind == ScalarExpr::Kind::load && e.buffer == buffer && e.index == index &&
         e.mask.empty();
}

/** Whether `a` and `b` compute the same, with b's iterators renamed by `sub`. */
bool same_value(const ScalarExpr& a, const ScalarExpr& b,
                const std::map<std::string, IntExpr>& sub) {
  if (a.kind != b.kind || a.dtype != b.dtype || a.args.size() != b.args.size() ||
      a.index.size() != b.index.size() || a.mask.size() != b.mask.size())
    return false;
  for (size_t i = 0; i < a.index.size(); ++i)
    if (a.index[i] != b.index[i].substitute(sub)) return false;
  for (size_t i = 0; i < a.mask.size(); ++i)
    if (a.mask[i].expr != b.mask[i].expr.substitute(sub) ||
        a.mask[i].bound != b.mask[i].bound.substitute(sub))
      return false;
  switch (a.kind) {
    case ScalarExpr::Kind::load:
      if (a.buffer != b.buffer) return false;
      break;
    case ScalarExpr::Kind::constant:
      if (a.value != b.value || a.int_value != b.int_value || a.symbolic != b.symbolic ||
          (a.symbolic && a.size_value != b.size_value))
        return false;
      break;
    case ScalarExpr::Kind::op:
      if (a.op != b.op) return false;
      break;
    case ScalarExpr::Kind::iterator:
      break;
  }
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!same_value(*a.args[i], *b.args[i], sub)) return false;
  return true;
}

bool reads_buffer(const ScalarExpr& e, int buffer) {
  std::vector<const ScalarExpr*> loads;
  collect_loads(e, loads);
  for (const ScalarExpr* l : loads)
    if (l->buffer == buffer) return true;
  return false;
}

/** The factors of a product tree. */
void factors_of(const ScalarExpr* e, std::vector<const ScalarExpr*>& out) {
  if (e->kind == ScalarExpr::Kind::op && e->op == Op::mul && e->mask.empty()) {
    factors_of(e->args[0].get(), out);
    factors_of(e->args[1].get(), out);
    return;
  }
  out.push_back(e);
}

/** In W = exp2(C · (X - M)), exp2((X - M) · C) or exp2(X - M) with C a positive number: X and
 *  M. C > 0 keeps M the stabiliser it is (the weights at most 1) and a masked score (-inf) a
 *  weight of 0, which the fused kernel relies on. */
bool exponential_of_difference(const ScalarExpr& w, const ScalarExpr*& x, const ScalarExpr*& m) {
  if (w.kind != ScalarExpr::Kind::op || w.op != Op::exp2 || !w.mask.empty()) return false;
  const ScalarExpr* d = w.args[0].get();
  if (d->kind == ScalarExpr::Kind::op && d->op == Op::mul && d->mask.empty()) {
    const ScalarExpr *p = d->args[0].get(), *q = d->args[1].get();
    if (varies(*p)) std::swap(p, q);
    if (p->kind != ScalarExpr::Kind::constant || p->symbolic || !p->mask.empty() || !(p->value > 0))
      return false;
    d = q;
  }
  if (d->kind != ScalarExpr::Kind::op || d->op != Op::add || !d->mask.empty()) return false;
  for (int side = 0; side < 2; ++side) {
    const ScalarExpr& neg = *d->args[1 - side];
    if (neg.kind == ScalarExpr::Kind::op && neg.op == Op::neg && neg.mask.empty()) {
      x = d->args[side].get();
      m = neg.args[0].get();
      return true;
    }
  }
  return false;
}

/** Whether `p` is `e` or inside it. */
bool contains(const ScalarExpr& e, const ScalarExpr* p) {
  if (&e == p) return true;
  for (const ScalarExprPtr& a : e.args)
    if (contains(*a, p)) return true;
  return false;
}

bool minus_infinity(const ScalarExpr& e) {
  return e.kind == ScalarExpr::Kind::constant && !e.symbolic && e.mask.empty() &&
         is_float(e.dtype) && e.value == -std::numeric_limits<double>::infinity();
}

/** In score expression `x`, a product of the scores' load (`buffer` at `index`) and invariant
 *  factors each surely positive, where x is that product or a where that picks it or -inf (a
 *  mask) along a path whose conditions do not read it: then x = k · x' with k the factors'
 *  product and x' x with the product read as the load alone (k · -inf = -inf). The product, its
 *  invariant factors in `scale`; else null. */
const ScalarExpr* scaled_score(const ScalarExpr& x, int buffer, const std::vector<IntExpr>& index,
                               std::vector<const ScalarExpr*>& scale) {
  if (x.kind != ScalarExpr::Kind::op || !x.mask.empty()) return nullptr;
  if (x.op == Op::where) {
    for (int side = 1; side <= 2; ++side) {
      if (!minus_infinity(*x.args[3 - side])) continue;
      const ScalarExpr* p = scaled_score(*x.args[side], buffer, index, scale);
      if (p && !contains(*x.args[0], p)) return p;
      scale.clear();
    }
    return nullptr;
  }
  if (x.op != Op::mul) return nullptr;
  std::vector<const ScalarExpr*> factors;
  factors_of(&x, factors);
  int loads = 0;
  bool positive = true;  // every other factor an invariant surely > 0
  for (const ScalarExpr* g : factors) {
    if (is_load_of(*g, buffer, index))
      ++loads;
    else if (!varies(*g) && surely_positive(*g))
      scale.push_back(g);
    else
      positive = false;
  }
  if (positive && loads == 1 && !scale.empty()) return &x;
  scale.clear();
  return nullptr;
}

bool half(DType t) {
  return t == DType::f16 || t == DType::bf16;
}

bool prefix(const std::vector<IntExpr>& a, const std::vector<IntExpr>& of, size_t n) {
  return a.size() == n && of.size() >= n && std::equal(a.begin(), a.end(), of.begin());
}

}  // namespace

std::optional<SoftmaxContraction> find_softmax_contraction(const KernelPlan& plan, const Kernel& k,
                                                           int from) {
  const int total = static_cast<int>(k.statements.size());
  if (from < 0 || from + 8 > total) return std::nullopt;
  for (int i = from; i < from + 8; ++i)  // the tile reads its operands by rows: no gathers
    if (k.statements[i].value && has_gather(*k.statements[i].value)) return std::nullopt;
  auto st = [&](int i) -> const Statement& { return k.statements[from + i]; };
  using K = Statement::Kind;
  auto init_of = [&](int i, ReduceKind r) {
    const Statement &init = st(i), &upd = st(i + 1);
    return init.kind == K::reduce_init && upd.kind == K::reduce_update && init.reduce == r &&
           upd.reduce == r && init.buffer == upd.buffer && init.index == upd.index && upd.value &&
           plan.buffers[upd.buffer].kind == BufferKind::temp;
  };
  if (!init_of(0, ReduceKind::sum) || !init_of(2, ReduceKind::max) ||
      !init_of(4, ReduceKind::sum) || !init_of(6, ReduceKind::sum))
    return std::nullopt;
  SoftmaxContraction f;
  f.first = from;
  const std::vector<IntExpr>& E = st(0).extents;
  const int n = f.n = static_cast<int>(E.size());
  if (n < 2) return std::nullopt;
  const std::string r = iterator_name(n - 2), j = iterator_name(n - 1), d = iterator_name(n);
  const Statement &score = st(1), &mx = st(3), &sum = st(5), &out = st(7);
  // The scores: s[..., r, j] += a(r, d) · b(j, d).
  if (!prefix(E, score.extents, n) || score.extents.size() != static_cast<size_t>(n + 1))
    return std::nullopt;
  const ScalarExpr& sv = *score.value;
  if (sv.kind != ScalarExpr::Kind::op || sv.op != Op::mul || !sv.mask.empty()) return std::nullopt;
  f.a = sv.args[0].get();
  f.b = sv.args[1].get();
  if (uses_vars(*f.a, {j})) std::swap(f.a, f.b);
  for (const ScalarExpr* o : {f.a, f.b})
    if (o->kind != ScalarExpr::Kind::load || !o->mask.empty() ||
        !half(plan.buffers[o->buffer].dtype) || !uses_vars(*o, {d}))
      return std::nullopt;
  if (plan.buffers[f.a->buffer].dtype != plan.buffers[f.b->buffer].dtype || uses_vars(*f.a, {j}) ||
      !uses_vars(*f.a, {r}) || uses_vars(*f.b, {r}) || !uses_vars(*f.b, {j}))
    return std::nullopt;
  for (const IntExpr& i : score.index) {
    std::set<std::string> used;
    i.collect_vars(used);
    if (used.count(d)) return std::nullopt;
  }
  // m[..., r] max= X, reading the scores at their own element only.
  if (mx.extents != E || !prefix(st(2).extents, E, n - 1)) return std::nullopt;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*mx.value, loads);
  for (const ScalarExpr* l : loads)
    if ((l->buffer == score.buffer && !is_load_of(*l, score.buffer, score.index)) ||
        l->buffer == mx.buffer || l->buffer == sum.buffer || l->buffer == out.buffer)
      return std::nullopt;
  for (const Statement* s : {&mx, &sum, &out})
    for (const IntExpr& i : s->index) {
      std::set<std::string> used;
      i.collect_vars(used);
      if (used.count(s == &out ? d : j)) return std::nullopt;
    }
  // l[..., r] += W(X, m).
  if (sum.extents != E || !prefix(st(4).extents, E, n - 1)) return std::nullopt;
  const ScalarExpr *x = nullptr, *m = nullptr;
  if (!exponential_of_difference(*sum.value, x, m) || !same_value(*mx.value, *x, {}) ||
      !is_load_of(*m, mx.buffer, mx.index))
    return std::nullopt;
  f.weight_score = x;
  f.weight_max = m;
  f.scaled_score = scaled_score(*mx.value, score.buffer, score.index, f.score_scale);
  // o[..., r, c] += W · F(r) · v(j, c) over (..., r, c, j), its iterators (but the sum's j,
  // last) in any order: a [B, L, H, D] output walks (b, r, h, c). Each order whose extents agree
  // is tried, the scores' own first; W must then read what the sum's value reads.
  if (out.extents.size() != static_cast<size_t>(n + 1) || out.extents[n] != E[n - 1] ||
      !prefix(st(6).extents, out.extents, n))
    return std::nullopt;
  std::vector<const ScalarExpr*> factors;
  factors_of(out.value.get(), factors);
  // canon[q]: the scores' iterator for canonical position q (batch..., r), "@c" for the lanes.
  std::vector<IntExpr> canon;
  for (int q = 0; q < n - 1; ++q)
    canon.push_back(iter(q));
  canon.push_back(IntExpr::var("@c"));
  std::vector<int> axes(n);  // out iterator p is at canonical position axes[p]
  for (int p = 0; p < n; ++p)
    axes[p] = p;
  auto try_order = [&](SoftmaxContraction& g) {
    std::map<std::string, IntExpr> rename = {{iterator_name(n), iter(n - 1)}};
    for (int p = 0; p < n; ++p) {
      if (axes[p] < n - 1 && out.extents[p] != E[axes[p]]) return false;
      rename[iterator_name(p)] = canon[axes[p]];
    }
    const std::string rv = iterator_name(std::find(axes.begin(), axes.end(), n - 2) - axes.begin());
    const std::string cv = iterator_name(std::find(axes.begin(), axes.end(), n - 1) - axes.begin());
    g.row_factors.clear();
    g.key_factors.clear();
    g.weight_factors.clear();
    g.v = nullptr;
    bool weight = false;
    for (const ScalarExpr* q : factors) {
      if (!weight && same_value(*sum.value, *q, rename)) {
        weight = true;
      } else if (!uses_vars(*q, {cv, iterator_name(n)})) {
        g.row_factors.push_back(q);
      } else if (!g.v && q->kind == ScalarExpr::Kind::load && q->mask.empty() &&
                 plan.buffers[q->buffer].dtype == plan.buffers[g.a->buffer].dtype &&
                 uses_vars(*q, {cv}) && !uses_vars(*q, {rv})) {
        g.v = q;
      } else if (!uses_vars(*q, {cv})) {
        (uses_vars(*q, {rv}) ? g.weight_factors : g.key_factors).push_back(q);
      } else {
        return false;
      }
    }
    if (!weight || !g.v) return false;
    g.out_axes = axes;
    g.out_axes.push_back(n);
    g.out_rename = rename;
    return true;
  };
  bool found = false;
  do {
    found = try_order(f);
  } while (!found && std::next_permutation(axes.begin(), axes.end()));
  if (!found) return std::nullopt;
  const std::map<std::string, IntExpr>& to_scores = f.out_rename;
  // Whether load `l` of the output's iterator space reads its row's element of m or l.
  auto at_row = [&](const ScalarExpr& l, const std::vector<IntExpr>& index) {
    if (l.index.size() != index.size()) return false;
    for (size_t i = 0; i < index.size(); ++i)
      if (l.index[i].substitute(to_scores) != index[i]) return false;
    return true;
  };
  // A bounded domain (causal attention's j <= r): the same bounds over (batch, r, j) on the
  // four updates, using neither the head nor the lanes.
  f.domain = mx.domain;
  auto same_domain = [&](const Statement& s, const std::map<std::string, IntExpr>& sub,
                         const std::string& unused) {
    if (s.domain.size() != f.domain.size()) return false;
    for (size_t i = 0; i < s.domain.size(); ++i) {
      std::set<std::string> used;
      s.domain[i].substitute(sub).collect_vars(used);
      if (used.count(unused) || s.domain[i].substitute(sub) != f.domain[i]) return false;
    }
    return true;
  };
  if (!same_domain(score, {}, d) || !same_domain(sum, {}, d) || !same_domain(out, to_scores, "@c"))
    return std::nullopt;
  // The temporaries: s, m and l read by these statements only, o by the epilogue at its element.
  const std::vector<IntExpr> element(out.extents.begin(), out.extents.end() - 1);
  f.end = from + 8;
  while (f.end < total && k.statements[f.end].kind == K::assign &&
         k.statements[f.end].extents == element &&
         reads_buffer(*k.statements[f.end].value, out.buffer))
    ++f.end;
  for (int i = 0; i < total; ++i) {
    const Statement& s = k.statements[i];
    if (i >= from && i < from + 8) continue;
    for (int t : {score.buffer, mx.buffer, sum.buffer, out.buffer})
      if (s.buffer == t || std::count(s.args.begin(), s.args.end(), t))  // an extern call's too
        return std::nullopt;
    if (!s.value) continue;
    collect_loads(*s.value, loads = {});
    for (const ScalarExpr* l : loads) {
      const bool epilogue = i >= from + 8 && i < f.end && l->mask.empty();
      if (l->buffer == score.buffer ||
          (l->buffer == mx.buffer && !(epilogue && at_row(*l, mx.index))) ||
          (l->buffer == sum.buffer && !(epilogue && at_row(*l, sum.index))))
        return std::nullopt;
      if (l->buffer == out.buffer && (i >= f.end || !is_load_of(*l, out.buffer, out.index)))
        return std::nullopt;
    }
  }
  std::vector<const ScalarExpr*> weighing = f.key_factors;
  weighing.insert(weighing.end(), f.weight_factors.begin(), f.weight_factors.end());
  for (const ScalarExpr* q : weighing) {
    collect_loads(*q, loads = {});
    for (const ScalarExpr* l : loads)
      if (l->buffer == score.buffer || l->buffer == out.buffer || l->buffer == mx.buffer ||
          l->buffer == sum.buffer)
        return std::nullopt;
  }
  for (const ScalarExpr* q : f.row_factors) {
    collect_loads(*q, loads = {});
    for (const ScalarExpr* l : loads)
      if (l->buffer == score.buffer || l->buffer == out.buffer ||
          ((l->buffer == mx.buffer || l->buffer == sum.buffer) && !at_row(*l, mx.index) &&
           !at_row(*l, sum.index)))
        return std::nullopt;
  }
  return f;
}

namespace {

/** The buffers statement `s` reads. */
std::set<int> reads_of(const Statement& s) {
  std::set<int> out(s.args.begin(), s.args.end());
  if (s.kind == Statement::Kind::reduce_update || s.kind == Statement::Kind::scatter)
    out.insert(s.buffer);
  if (!s.value) return out;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    out.insert(l->buffer);
  return out;
}

}  // namespace

namespace {

/** How one position of an index reads an iterator: whole, or as `i / K` or `i % K` (K a
 *  positive constant). */
struct IndexPart {
  enum class Kind { whole, quotient, remainder } kind = Kind::whole;
  std::string var;
  int64_t k = 0;
};

std::optional<IndexPart> index_part(const IntExpr& e) {
  if (std::optional<std::string> v = e.as_var()) return IndexPart{IndexPart::Kind::whole, *v, 0};
  const std::vector<IntExpr::Term>& terms = e.terms();
  if (terms.size() != 1 || terms[0].coeff != 1 || terms[0].factors.size() != 1) return std::nullopt;
  const IntAtom& a = *terms[0].factors[0];
  std::optional<std::string> v = a.a.as_var();
  std::optional<int64_t> k = a.b.as_constant();
  if (a.kind == IntAtom::Kind::var || !v || !k || *k <= 0) return std::nullopt;
  return IndexPart{
      a.kind == IntAtom::Kind::floordiv ? IndexPart::Kind::quotient : IndexPart::Kind::remainder,
      *v, *k};
}

/** Assignment `s`, which reads the element of update `u` (the iterators i0..i(e-1) of u's
 *  index) at a rearrangement of it — a permute, or a permute with a reshape that splits a
 *  dimension by a constant: `y[b, s, c] = o[b, c / 64, s, c % 64]` — rewritten to walk u's
 *  element instead and read it at u's own index: `y[b, s, 64·h + d] = o[b, h, s, d]` over
 *  (b, h, s, d). Every iterator of s must be one of the element's, or a quotient and remainder
 *  pair of two of them whose extents make the two domains the same points (the quotient's
 *  extent that of s's iterator divided by K, the remainder's K). Nothing where it is not such
 *  a statement. */
std::optional<Statement> walked_as_element(const Statement& s, const Statement& u, int e) {
  if (s.kind != Statement::Kind::assign || !s.value || !s.domain.empty() || !s.needed.empty())
    return std::nullopt;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  const ScalarExpr* read = nullptr;
  for (const ScalarExpr* l : loads) {
    if (l->buffer != u.buffer) continue;
    if (!l->mask.empty() || !l->args.empty() || (read && l->index != read->index))
      return std::nullopt;
    read = l;
  }
  if (!read || read->index.size() != u.index.size() || s.buffer == u.buffer) return std::nullopt;
  struct Uses {
    int whole = -1, quotient = -1, remainder = -1;
    int64_t kq = 0, kr = 0;
  };
  std::map<std::string, Uses> uses;  // s's iterator -> the element positions it stands for
  std::vector<bool> seen(e, false);
  for (size_t d = 0; d < u.index.size(); ++d) {
    std::optional<std::string> v = u.index[d].as_var();
    int p = -1;
    for (int q = 0; v && q < e; ++q)
      if (*v == iterator_name(q)) p = q;
    if (p < 0) {
      if (v || u.index[d] != read->index[d]) return std::nullopt;
      continue;
    }
    std::optional<IndexPart> part = index_part(read->index[d]);
    if (!part || seen[p]) return std::nullopt;
    seen[p] = true;
    Uses& x = uses[part->var];
    int& slot = part->kind == IndexPart::Kind::whole      ? x.whole
                : part->kind == IndexPart::Kind::quotient ? x.quotient
                                                          : x.remainder;
    if (slot >= 0) return std::nullopt;
    slot = p;
    (part->kind == IndexPart::Kind::quotient ? x.kq : x.kr) = part->k;
  }
  for (int p = 0; p < e; ++p)
    if (!seen[p] && u.extents[p] != IntExpr(1)) return std::nullopt;
  if (uses.size() != s.extents.size()) return std::nullopt;
  std::map<std::string, IntExpr> sub;
  for (size_t q = 0; q < s.extents.size(); ++q) {
    auto it = uses.find(iterator_name(static_cast<int>(q)));
    if (it == uses.end()) return std::nullopt;
    const Uses& x = it->second;
    if (x.whole >= 0 && x.quotient < 0 && x.remainder < 0 && s.extents[q] == u.extents[x.whole]) {
      sub[it->first] = iter(x.whole);
    } else if (x.whole < 0 && x.quotient >= 0 && x.remainder >= 0 && x.kq == x.kr &&
               u.extents[x.remainder] == IntExpr(x.kr) &&
               u.extents[x.quotient] == floordiv(s.extents[q], IntExpr(x.kq))) {
      sub[it->first] = x.kq * iter(x.quotient) + iter(x.remainder);
    } else {
      return std::nullopt;
    }
  }
  Statement out = s;
  out.extents.assign(u.extents.begin(), u.extents.begin() + e);
  for (IntExpr& i : out.index)
    i = i.substitute(sub);
  out.value = substitute_iterators(s.value, sub, u.buffer, read->index, u.index);
  return out;
}

/** `k` with each statement's iterators of extent 1 read as 0 (a batch of one: `t[i0, ...]`
 *  written and `t[0, ...]` read are then the same element to find_softmax_contraction). */
void zero_unit_iterators(Kernel& k) {
  for (Statement& s : k.statements) {
    std::map<std::string, IntExpr> sub;
    for (size_t q = 0; q < s.extents.size(); ++q)
      if (s.extents[q] == IntExpr(1)) sub[iterator_name(static_cast<int>(q))] = 0;
    if (sub.empty()) continue;
    for (IntExpr& i : s.index)
      i = i.substitute(sub);
    for (IntExpr& i : s.domain)
      i = i.substitute(sub);
    for (IntExpr& i : s.needed)
      i = i.substitute(sub);
    if (s.value) s.value = substitute_iterators(s.value, sub);
  }
}

/** The assignments right after statement `from` + 7 (the output's update of a softmax-weighted
 *  contraction whose scores' init is `from`, once contiguous) that read the output at a
 *  rearrangement of its element, walked as the element (walked_as_element). Returns how many. */
int align_epilogue(Kernel& k, int from) {
  const int total = static_cast<int>(k.statements.size());
  if (from + 8 > total) return 0;
  const Statement& out = k.statements[from + 7];
  if (out.kind != Statement::Kind::reduce_update || out.extents.empty()) return 0;
  int aligned = 0;
  for (int q = from + 8; q < total && k.statements[q].kind == Statement::Kind::assign; ++q) {
    std::optional<Statement> s =
        walked_as_element(k.statements[q], out, static_cast<int>(out.extents.size()) - 1);
    if (!s) continue;
    k.statements[q] = std::move(*s);
    ++aligned;
  }
  return aligned;
}

/** Moves the assignments among the eight statements of a softmax-weighted contraction whose
 *  scores' init is `p` (see gather_softmax_contractions) before them; returns how many moved,
 *  or -1 where the eight are not found. */
int hoist_independent(Kernel& k, int p) {
  const int total = static_cast<int>(k.statements.size());
  // The next eight statements that depend on the ones kept before them, the assignments
  // between them that do not (reading nothing they write, writing nothing they touch).
  std::vector<int> kept, hoisted;
  std::set<int> written, touched;
  for (int q = p; q < total && kept.size() < 8; ++q) {
    const Statement& s = k.statements[q];
    std::set<int> reads = reads_of(s);
    bool independent = s.kind == Statement::Kind::assign && !touched.count(s.buffer);
    for (int b : reads)
      independent = independent && !written.count(b);
    if (independent && !kept.empty()) {
      hoisted.push_back(q);
      continue;
    }
    kept.push_back(q);
    written.insert(s.buffer);
    touched.insert(s.buffer);
    touched.insert(reads.begin(), reads.end());
  }
  if (kept.size() < 8) return -1;
  std::vector<Statement> was = k.statements;
  int at = p;
  for (int q : hoisted)
    k.statements[at++] = was[q];
  for (int q : kept)
    k.statements[at++] = was[q];
  return static_cast<int>(hoisted.size());
}

}  // namespace

int gather_softmax_contractions(const KernelPlan& plan, Kernel& k) {
  int changed = 0;
  const int total = static_cast<int>(k.statements.size());
  for (int p = 0; p + 8 <= total; ++p) {
    const Statement& first = k.statements[p];
    if (first.kind != Statement::Kind::reduce_init || first.reduce != ReduceKind::sum ||
        find_softmax_contraction(plan, k, p))
      continue;
    // The eight made contiguous, then, where the output is read through a permute or a
    // reshape, that reader walked as the output's element: kept where the contraction forms.
    Kernel tried = k;
    zero_unit_iterators(tried);
    const int hoisted = hoist_independent(tried, p);
    if (hoisted < 0) continue;
    const int at = p + hoisted;
    int aligned = 0;
    if (!find_softmax_contraction(plan, tried, at)) {
      aligned = align_epilogue(tried, at);
      if (aligned == 0 || !find_softmax_contraction(plan, tried, at)) continue;
    }
    k = std::move(tried);
    changed += hoisted + aligned;
    p = at + 7;
  }
  return changed;
}

bool recomputes_softmax_weights(const KernelPlan& plan, const Kernel& k) {
  if (is_softmax_contraction_kernel(plan, k)) return false;
  std::set<int> maxima;  // buffers a max reduction writes, in any kernel
  for (const Kernel& other : plan.kernels)
    for (const Statement& s : other.statements)
      if (s.kind == Statement::Kind::reduce_update && s.reduce == ReduceKind::max)
        maxima.insert(s.buffer);
  for (const Statement& s : k.statements) {
    if (s.kind != Statement::Kind::reduce_update || !s.value) continue;
    std::set<std::string> all;
    for (size_t i = 0; i < s.extents.size(); ++i)
      all.insert(iterator_name(static_cast<int>(i)));
    std::function<bool(const ScalarExpr&)> walk = [&](const ScalarExpr& e) {
      if (e.kind == ScalarExpr::Kind::op && e.op == Op::exp2) {
        std::vector<const ScalarExpr*> loads;
        collect_loads(e, loads);
        bool of_max = false;
        for (const ScalarExpr* l : loads)
          of_max = of_max || maxima.count(l->buffer);
        if (of_max)
          for (const std::string& it : all)
            if (!uses_vars(e, {it})) return true;
      }
      for (const ScalarExprPtr& a : e.args)
        if (walk(*a)) return true;
      return false;
    };
    if (walk(*s.value)) return true;
  }
  return false;
}

bool is_softmax_contraction_kernel(const KernelPlan& plan, const Kernel& k) {
  std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, 0);
  return f && f->end == static_cast<int>(k.statements.size());
}

}  // namespace kiln
