#include "ir/view.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/limits.h"

namespace kiln {

namespace {

IntExpr product(const Shape& s, size_t begin, size_t end) {
  IntExpr p = 1;
  for (size_t i = begin; i < end; ++i)
    p = p * s[i];
  return p;
}

std::map<std::string, IntExpr> index_substitution(const std::vector<IntExpr>& by) {
  std::map<std::string, IntExpr> sub;
  for (size_t k = 0; k < by.size(); ++k)
    sub["%" + std::to_string(k)] = by[k];
  return sub;
}

/** True when `a` divides `b` exactly as polynomials. */
bool divides(const IntExpr& a, const IntExpr& b) {
  if (a == IntExpr(0)) return false;
  return floordiv(b, a) * a == b;
}

}  // namespace

View View::identity(const Shape& s) {
  View v;
  v.shape = s;
  for (size_t k = 0; k < s.size(); ++k)
    v.index.push_back(IntExpr::index(static_cast<int>(k)));
  return v;
}

namespace {

/** One digit of a view index read by a source dimension: `(%k / a) % b`, `b` absent for the
 *  top digit (`%k / a`, `%k` itself when a = 1). */
struct Digit {
  int var = -1;
  IntExpr a = 1;
  std::optional<IntExpr> b;
  size_t dim = 0;
};

/** The view index `%k` that `e` is exactly, or -1. */
int index_var(const IntExpr& e) {
  std::optional<std::string> v = e.as_var();
  if (!v || v->size() < 2 || (*v)[0] != '%') return -1;
  return std::stoi(v->substr(1));
}

/** `e` as one digit of one view index, or nullopt. */
std::optional<Digit> as_digit(const IntExpr& e) {
  Digit d;
  if ((d.var = index_var(e)) >= 0) return d;
  if (e.terms().size() != 1 || e.terms()[0].coeff != 1 || e.terms()[0].factors.size() != 1)
    return std::nullopt;
  const IntAtom& atom = *e.terms()[0].factors[0];
  if (atom.kind == IntAtom::Kind::floordiv) {
    d.var = index_var(atom.a);
    d.a = atom.b;
    return d.var >= 0 ? std::optional<Digit>(d) : std::nullopt;
  }
  if (atom.kind != IntAtom::Kind::mod) return std::nullopt;
  d.b = atom.b;
  if ((d.var = index_var(atom.a)) >= 0) return d;
  std::optional<Digit> inner = as_digit(atom.a);
  if (!inner || inner->b) return std::nullopt;
  d.var = inner->var;
  d.a = inner->a;
  return d;
}

}  // namespace

std::optional<std::vector<IntExpr>> invert(const View& v, const Shape& source,
                                           const SizeFacts& facts) {
  if (!v.mask.empty() || v.index.size() != source.size()) return std::nullopt;
  std::vector<std::vector<Digit>> digits(v.shape.size());
  for (size_t j = 0; j < source.size(); ++j) {
    if (std::optional<int64_t> c = v.index[j].as_constant()) {
      if (*c != 0 || source[j] != IntExpr(1)) return std::nullopt;
      continue;
    }
    std::optional<Digit> d = as_digit(v.index[j]);
    if (!d || d->var >= static_cast<int>(v.shape.size())) return std::nullopt;
    d->dim = j;
    digits[d->var].push_back(*d);
  }
  auto same = [&](const IntExpr& x, const IntExpr& y) {
    return x == y || facts.decide({x, Relation::eq, y}) == Truth::proved;
  };
  std::vector<IntExpr> inverse;
  for (size_t k = 0; k < v.shape.size(); ++k) {
    // Rebuild %k from its digits, lowest first: each digit's divisor is the product of the
    // moduli below it, and only the top one may have no modulus.
    IntExpr at = 0, scale = 1;
    std::vector<Digit>& left = digits[k];
    bool top = false;
    while (!left.empty()) {
      if (top) return std::nullopt;
      auto next =
          std::find_if(left.begin(), left.end(), [&](const Digit& d) { return same(d.a, scale); });
      if (next == left.end()) return std::nullopt;
      at = at + scale * IntExpr::index(static_cast<int>(next->dim));
      if (next->b)
        scale = scale * *next->b;
      else
        top = true;
      left.erase(next);
    }
    // No digit at all reads %k: it must have one value. A top digit with a modulus covers %k
    // when the moduli multiply to its extent.
    if (!top && !same(scale, v.shape[k])) return std::nullopt;
    inverse.push_back(at);
  }
  if (!same(product(v.shape, 0, v.shape.size()), product(source, 0, source.size())))
    return std::nullopt;
  return inverse;
}

bool affine_in_positions(const std::vector<IntExpr>& x) {
  for (const IntExpr& e : x) {
    std::set<std::string> vars;
    e.collect_vars(vars);
    for (const std::string& v : vars)
      if (v[0] == '%' && !affine_coefficient(e, v)) return false;
  }
  return true;
}

std::optional<SplitAddress> split_address(const std::vector<IntExpr>& x, const Shape& extents,
                                          const Shape& source, const SizeFacts& facts) {
  if (x.size() != source.size() || affine_in_positions(x)) return std::nullopt;
  std::map<std::string, IntExpr> zero;
  for (size_t d = 0; d < extents.size(); ++d)
    zero["%" + std::to_string(d)] = 0;
  SplitAddress out;
  bool exact = true;  // every split dimension's extents multiply to the source's, by proof
  for (size_t s = 0; s < source.size(); ++s) {
    if (affine_in_positions({x[s]})) {
      out.shape.push_back(source[s]);
      out.index.push_back(x[s]);
      out.dims_of.push_back(1);
      continue;
    }
    // x[s] = Σ c_v·%v with coefficients free of positions, and no offset
    if (x[s].substitute(zero) != IntExpr(0)) return std::nullopt;
    std::set<std::string> vars;
    x[s].collect_vars(vars);
    std::map<IntExpr, std::string> by_coeff;
    IntExpr rebuilt = 0;
    for (const std::string& v : vars) {
      if (v[0] != '%') continue;
      std::map<std::string, IntExpr> one = zero;
      one[v] = 1;
      IntExpr c = x[s].substitute(one);
      if (!by_coeff.emplace(facts.normalize(c), v).second) return std::nullopt;
      rebuilt = rebuilt + c * IntExpr::var(v);
    }
    if (rebuilt != x[s]) return std::nullopt;
    size_t at = out.shape.size();
    IntExpr stride = 1;
    while (!by_coeff.empty()) {
      auto next = by_coeff.find(facts.normalize(stride));
      if (next == by_coeff.end()) return std::nullopt;
      size_t d = std::stoul(next->second.substr(1));
      if (d >= extents.size()) return std::nullopt;
      out.shape.insert(out.shape.begin() + at, extents[d]);
      out.index.insert(out.index.begin() + at, IntExpr::var(next->second));
      stride = stride * extents[d];
      by_coeff.erase(next);
    }
    out.dims_of.push_back(out.shape.size() - at);
    exact = exact && (source[s] == stride ||
                      facts.decide({source[s], Relation::eq, stride}) == Truth::proved);
  }
  if (out.shape.size() > static_cast<size_t>(kMaxRank)) return std::nullopt;
  IntExpr whole = 1, alias = 1;
  for (const IntExpr& d : source)
    whole = whole * d;
  for (const IntExpr& d : out.shape)
    alias = alias * d;
  if (!exact && whole != alias && facts.decide({whole, Relation::eq, alias}) != Truth::proved)
    return std::nullopt;
  return out;
}

bool View::is_identity(const Shape& source) const {
  if (!mask.empty() || !same_shape(shape, source) || index.size() != source.size()) return false;
  for (size_t k = 0; k < index.size(); ++k)
    if (index[k] != IntExpr::index(static_cast<int>(k))) return false;
  return true;
}

View View::compose(const View& outer, const View& inner) {
  auto sub = index_substitution(outer.index);
  View v;
  v.shape = outer.shape;
  for (const IntExpr& e : inner.index)
    v.index.push_back(e.substitute(sub));
  v.mask = outer.mask;
  for (const MaskBound& m : inner.mask)
    v.mask.push_back({m.expr.substitute(sub), m.bound});
  return v;
}

std::string View::str() const {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k)
    s += (k ? ", %" : "%") + std::to_string(k);
  s += ") -> (";
  for (size_t k = 0; k < index.size(); ++k)
    s += (k ? ", " : "") + index[k].str();
  s += ")";
  for (const MaskBound& m : mask)
    s += " if 0 <= " + m.expr.str() + " < " + m.bound.str();
  return s;
}

namespace views {

View reshape(const Shape& src, const Shape& dst) {
  // Match groups of source and destination dimensions with equal products, so that a reshape
  // that only splits or merges dimensions keeps simple index expressions; fall back to one
  // linearisation of everything left when no grouping is found.
  View v;
  v.shape = dst;
  v.index.assign(src.size(), IntExpr(0));
  // a source with a dimension of size 0 has no elements, so no index is ever read (and the
  // group products below would divide by 0)
  for (const IntExpr& d : src)
    if (d == IntExpr(0)) return v;
  size_t i = 0, j = 0;
  while (i < src.size() || j < dst.size()) {
    size_t i_end = i, j_end = j;
    IntExpr ps = 1, pd = 1;
    if (i_end < src.size()) ps = src[i_end++];
    if (j_end < dst.size()) pd = dst[j_end++];
    while (ps != pd) {
      if (i_end < src.size() && divides(ps, pd)) {
        ps = ps * src[i_end++];
      } else if (j_end < dst.size() && divides(pd, ps)) {
        pd = pd * dst[j_end++];
      } else {
        i_end = src.size();
        j_end = dst.size();
        break;
      }
    }
    if (i_end == src.size())  // trailing size-1 destination dimensions join the last group
      while (j_end < dst.size() && dst[j_end] == IntExpr(1))
        ++j_end;
    IntExpr linear = 0;
    for (size_t k = j; k < j_end; ++k)
      if (dst[k] != IntExpr(1)) linear = linear * dst[k] + IntExpr::index(static_cast<int>(k));
    // The group's first dimension that is not 1 takes the quotient whole: the ones before it
    // are all 1, so it spans the group's leading factor (no mod by its size).
    bool leading = true;
    for (size_t k = i; k < i_end; ++k) {
      if (src[k] == IntExpr(1)) continue;
      IntExpr index = floordiv(linear, product(src, k + 1, i_end));
      v.index[k] = leading ? index : mod(index, src[k]);
      leading = false;
    }
    i = i_end;
    j = j_end;
  }
  return v;
}

View permute(const Shape& src, const std::vector<int>& perm) {
  View v;
  v.index.resize(src.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    v.shape.push_back(src[perm[k]]);
    v.index[perm[k]] = IntExpr::index(static_cast<int>(k));
  }
  return v;
}

View expand(const Shape& src, const Shape& dst) {
  View v;
  v.shape = dst;
  for (size_t k = 0; k < src.size(); ++k)
    v.index.push_back(src[k] == IntExpr(1) && dst[k] != IntExpr(1) ? IntExpr(0)
                                                                   : IntExpr::index(int(k)));
  return v;
}

View slice(const Shape& src, int axis, const IntExpr& start, const IntExpr& count, int64_t step) {
  View v = View::identity(src);
  v.shape[axis] = count;
  v.index[axis] = start + IntExpr::index(axis) * step;
  return v;
}

View pad(const Shape& src, int axis, const IntExpr& before, const IntExpr& after) {
  View v = View::identity(src);
  if (before == IntExpr(0) && after == IntExpr(0)) return v;
  v.shape[axis] = src[axis] + before + after;
  v.index[axis] = IntExpr::index(axis) - before;
  v.mask.push_back({v.index[axis], src[axis]});
  return v;
}

}  // namespace views

namespace {

/** What one source dimension of a view reads: `start + step * %var`, or `start` alone when
 *  `var` is -1. */
struct DimRead {
  int var = -1;
  IntExpr start;
  int64_t step = 0;
};

/** The read of `e`, when it is affine in at most one index variable. */
std::optional<DimRead> dim_read(const IntExpr& e) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  DimRead r;
  for (const std::string& v : vars) {
    if (v.empty() || v[0] != '%') continue;
    if (r.var >= 0) return std::nullopt;
    r.var = std::stoi(v.substr(1));
  }
  if (r.var < 0) {
    r.start = e;
    return r;
  }
  std::optional<int64_t> step = affine_coefficient(e, "%" + std::to_string(r.var));
  if (!step || *step == 0) return std::nullopt;
  r.step = *step;
  r.start = e - IntExpr::index(r.var) * *step;
  std::set<std::string> left;
  r.start.collect_vars(left);
  for (const std::string& v : left)
    if (!v.empty() && v[0] == '%') return std::nullopt;
  return r;
}

/** `e` with the index variables %k spelled i0, i1, ... */
std::string readable(const IntExpr& e) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  std::map<std::string, IntExpr> sub;
  for (const std::string& v : vars)
    if (!v.empty() && v[0] == '%') sub[v] = IntExpr::var("i" + v.substr(1));
  return sub.empty() ? e.str() : e.substitute(sub).str();
}

std::string index_map(const Shape& source, const View& v) {
  std::string s = shape_str(source) + " -> " + shape_str(v.shape) + " reads [";
  for (size_t k = 0; k < v.index.size(); ++k)
    s += (k ? ", " : "") + readable(v.index[k]);
  s += "]";
  for (const MaskBound& m : v.mask)
    s += " if 0 <= " + readable(m.expr) + " < " + readable(m.bound);
  return s;
}

std::string list_str(const std::vector<int>& xs) {
  std::string s;
  for (size_t k = 0; k < xs.size(); ++k)
    s += (k ? ", " : "") + std::to_string(xs[k]);
  return s;
}

}  // namespace

std::string describe_view(const Shape& source, const View& v) {
  std::string shapes = shape_str(source) + " -> " + shape_str(v.shape);
  if (v.index.size() != source.size()) return index_map(source, v);
  // A reshape keeps the element count (a broadcast of size-1 dimensions reads like one).
  if (v.mask.empty() && product(source, 0, source.size()) == product(v.shape, 0, v.shape.size())) {
    View r = views::reshape(source, v.shape);
    bool same = true;
    for (size_t k = 0; k < source.size() && same; ++k)
      same = r.index[k] == v.index[k];
    if (same) return "reshape " + shapes;
  }
  std::vector<DimRead> reads;
  std::vector<int> reader(v.shape.size(), -1);  // the source dimension each view dim drives
  for (size_t k = 0; k < source.size(); ++k) {
    std::optional<DimRead> r = dim_read(v.index[k]);
    if (!r || (r->var >= 0 && (r->var >= static_cast<int>(v.shape.size()) || reader[r->var] >= 0)))
      return index_map(source, v);
    if (r->var >= 0) reader[r->var] = static_cast<int>(k);
    reads.push_back(*r);
  }
  // A mask must be a pad: the source index of one dimension kept within its size.
  std::vector<bool> padded(source.size(), false);
  for (const MaskBound& m : v.mask) {
    bool found = false;
    for (size_t k = 0; k < source.size() && !found; ++k)
      if (!padded[k] && reads[k].var >= 0 && m.expr == v.index[k] && m.bound == source[k])
        found = padded[k] = true;
    if (!found) return index_map(source, v);
  }
  std::vector<std::string> parts;
  std::vector<int> order, broadcast;  // source dims in view-dim order; view dims read by none
  for (size_t j = 0; j < v.shape.size(); ++j)
    if (reader[j] >= 0)
      order.push_back(reader[j]);
    else if (v.shape[j] != IntExpr(1))
      broadcast.push_back(static_cast<int>(j));
  if (!std::is_sorted(order.begin(), order.end())) {
    bool swap2 = order.size() == 2 && source.size() == 2 && v.shape.size() == 2;
    parts.push_back(swap2 ? "transpose" : "permute (" + list_str(order) + ")");
  }
  if (!broadcast.empty())
    parts.push_back(std::string(broadcast.size() > 1 ? "broadcast dims " : "broadcast dim ") +
                    list_str(broadcast));
  for (size_t k = 0; k < source.size(); ++k) {
    const DimRead& r = reads[k];
    std::string dim = " dim " + std::to_string(k);
    if (r.var < 0) {
      if (r.start != IntExpr(0) || source[k] != IntExpr(1))
        parts.push_back("take" + dim + " at " + r.start.str());
      continue;
    }
    const IntExpr& count = v.shape[r.var];
    if (padded[k] && r.step == 1) {
      IntExpr before = -r.start, after = count - source[k] - before;
      parts.push_back("pad" + dim + " by (" + before.str() + ", " + after.str() + ")");
      continue;
    }
    if (padded[k]) parts.push_back("pad" + dim);  // a strided window past the edges
    if (r.start != IntExpr(0) || r.step != 1 || count != source[k])
      parts.push_back("slice" + dim + " from " + r.start.str() +
                      (r.step != 1 ? " step " + std::to_string(r.step) : "") +
                      (count != source[k] ? " count " + count.str() : ""));
  }
  // Only size-1 dimensions added or dropped: a reshape that the grouping above spelled
  // differently.
  if (parts.empty()) parts.push_back("reshape");
  std::string s;
  for (const std::string& p : parts)
    s += (s.empty() ? "" : ", ") + p;
  return s + " " + shapes;
}

}  // namespace kiln
