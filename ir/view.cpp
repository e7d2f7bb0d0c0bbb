#include "ir/view.h"

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
    for (size_t k = i; k < i_end; ++k) {
      if (src[k] == IntExpr(1)) continue;
      IntExpr index = floordiv(linear, product(src, k + 1, i_end));
      v.index[k] = k == i ? index : mod(index, src[k]);
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

}  // namespace kiln
