#include "autodiff/view_adjoint.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

namespace kiln::autodiff {

namespace {

std::string index_var(int k) {
  return "%" + std::to_string(k);
}

/** Floor division and modulus from idiv and mod, which truncate toward zero. */
std::pair<NodeId, NodeId> floor_divmod(Graph& g, NodeId a, NodeId b) {
  const Shape shape = g[a].shape;  // a copy: adding nodes moves g's nodes
  NodeId q = g.binary(Op::idiv, a, b), r = g.binary(Op::mod, a, b);
  NodeId zero = g.constant_int(DType::i64, shape, 0);
  NodeId nonzero = g.unary(Op::logical_not, g.binary(Op::cmpeq, r, zero));
  NodeId signs_differ =
      g.binary(Op::bit_xor, g.binary(Op::cmplt, r, zero), g.binary(Op::cmplt, b, zero));
  NodeId fix = g.binary(Op::bit_and, nonzero, signs_differ);
  NodeId one = g.constant_int(DType::i64, shape, 1);
  NodeId q_floor = g.ternary(Op::where, fix, g.binary(Op::add, q, g.unary(Op::neg, one)), q);
  NodeId r_floor = g.ternary(Op::where, fix, g.binary(Op::add, r, b), r);
  return {q_floor, r_floor};
}

NodeId atom_node(Graph& g, const IntAtom& atom, const Shape& shape) {
  if (atom.kind == IntAtom::Kind::var) {
    if (atom.name.starts_with("%"))
      return g.index(DType::i64, shape, std::stoi(atom.name.substr(1)));
    return g.constant_size(DType::i64, shape, IntExpr::var(atom.name));
  }
  auto [q, r] = floor_divmod(g, int_expr_node(g, atom.a, shape), int_expr_node(g, atom.b, shape));
  return atom.kind == IntAtom::Kind::floordiv ? q : r;
}

/** Whether `0 <= e < bound` holds wherever `0 <= %j < size`: e is %j plus c >= 0 with
 *  size + c <= bound, all constant offsets. */
bool mask_always_holds(const IntExpr& e, const IntExpr& bound, int j, const IntExpr& size) {
  IntExpr c = e - IntExpr::index(j);
  std::optional<int64_t> lo = c.as_constant(), slack = (bound - size - c).as_constant();
  return lo && slack && *lo >= 0 && *slack >= 0;
}

/** A view whose every source index is ±%k + b with each %k used once (permute, slice, pad,
 *  flip and their compositions, with unit steps) inverted as a masked view of shape `src`. */
std::optional<View> affine_inverse(const View& w, const Shape& src) {
  int rank = int(w.shape.size());
  std::vector<std::optional<IntExpr>> inverse(rank);
  std::map<std::string, IntExpr> back;  // %k of w -> its value over the source's coordinates
  View out;
  out.shape = src;
  for (int j = 0; j < int(src.size()); ++j) {
    std::set<std::string> vars;
    w.index[j].collect_vars(vars);
    std::vector<std::string> idx;
    for (const std::string& v : vars)
      if (v.starts_with("%")) idx.push_back(v);
    if (idx.empty()) {  // one position of this source dimension is read
      IntExpr at = IntExpr::index(j) - w.index[j];
      if (!mask_always_holds(at, 1, j, src[j])) out.mask.push_back({at, 1});
      continue;
    }
    if (idx.size() != 1) return std::nullopt;
    int k = std::stoi(idx[0].substr(1));
    std::optional<int64_t> a = affine_coefficient(w.index[j], idx[0]);
    if (!a || (*a != 1 && *a != -1) || inverse[k]) return std::nullopt;
    IntExpr b = w.index[j] - *a * IntExpr::index(k);
    inverse[k] = *a * (IntExpr::index(j) - b);
    back[idx[0]] = *inverse[k];
    if (!mask_always_holds(*inverse[k], w.shape[k], j, src[j]))
      out.mask.push_back({*inverse[k], w.shape[k]});
  }
  for (int k = 0; k < rank; ++k) {
    if (!inverse[k]) return std::nullopt;
    out.index.push_back(*inverse[k]);
  }
  for (const MaskBound& m : w.mask) {
    IntExpr e = m.expr.substitute(back);
    bool holds = false;
    for (int j = 0; j < int(src.size()) && !holds; ++j)
      holds = mask_always_holds(e, m.bound, j, src[j]);
    if (!holds) out.mask.push_back({e, m.bound});
  }
  return out;
}

/** Any view: the cotangent scattered with `add` into the flattened source at each valid
 *  element's row-major source offset (invalid ones at -1, which scatter drops). */
NodeId scatter_adjoint(Graph& g, const View& w, const Shape& src, NodeId ct) {
  IntExpr offset = 0, stride = 1;
  for (int j = int(src.size()) - 1; j >= 0; --j) {
    offset = offset + w.index[j] * stride;
    stride = stride * src[j];
  }
  IntExpr count = 1;
  for (const IntExpr& d : w.shape)
    count = count * d;
  NodeId at = int_expr_node(g, offset, w.shape);
  if (!w.mask.empty()) {
    NodeId valid = g.constant_int(DType::boolean, w.shape, 1);
    for (const MaskBound& m : w.mask) {
      NodeId e = int_expr_node(g, m.expr, w.shape);
      NodeId lo = g.binary(Op::cmplt, g.constant_int(DType::i64, w.shape, -1), e);
      NodeId hi = g.binary(Op::cmplt, e, int_expr_node(g, m.bound, w.shape));
      valid = g.binary(Op::bit_and, valid, g.binary(Op::bit_and, lo, hi));
    }
    at = g.ternary(Op::where, valid, at, g.constant_int(DType::i64, w.shape, -1));
  }
  NodeId flat_at = g.view(at, views::reshape(w.shape, {count}));
  NodeId flat_ct = g.view(ct, views::reshape(w.shape, {count}));
  NodeId base = g.constant(g[ct].dtype, {stride}, 0);
  NodeId sum = g.scatter(Op::add, base, flat_at, flat_ct, 0);
  return g.view(sum, views::reshape({stride}, src));
}

/** The view of a tensor of shape `shape` without the dimensions k whose `%k` is not `used` (all
 *  of size 1 here): index 0 in those, the kept dimensions' own variables in the rest. Affine,
 *  where a reshape would divide. */
View squeeze(const Shape& shape, const std::set<std::string>& used) {
  View out;
  for (int k = 0; k < int(shape.size()); ++k) {
    if (!used.count(index_var(k))) {
      out.index.push_back(0);
      continue;
    }
    out.index.push_back(IntExpr::index(int(out.shape.size())));
    out.shape.push_back(shape[k]);
  }
  return out;
}

}  // namespace

NodeId int_expr_node(Graph& g, const IntExpr& e, Shape shape) {
  NodeId sum = -1;
  for (const IntExpr::Term& t : e.terms()) {
    NodeId term = -1;
    for (const auto& atom : t.factors) {
      NodeId f = atom_node(g, *atom, shape);
      term = term < 0 ? f : g.binary(Op::mul, term, f);
    }
    if (term < 0 || t.coeff != 1) {
      NodeId c = g.constant_int(DType::i64, shape, t.coeff);
      term = term < 0 ? c : g.binary(Op::mul, term, c);
    }
    sum = sum < 0 ? term : g.binary(Op::add, sum, term);
  }
  return sum < 0 ? g.constant_int(DType::i64, shape, 0) : sum;
}

NodeId domain_mask(Graph& g, std::vector<IntExpr> domain, Shape shape) {
  NodeId mask = g.constant_int(DType::boolean, shape, 1);
  for (const IntExpr& e : domain) {
    NodeId ge0 =
        g.binary(Op::cmplt, g.constant_int(DType::i64, shape, -1), int_expr_node(g, e, shape));
    mask = g.binary(Op::bit_and, mask, ge0);
  }
  return mask;
}

/** The sum of `ct` over `axes` (kept with size 1), reduced with the other axes in the order
 *  `kept` and the summed ones last: a permute view first, its inverse after, both free. Not
 *  where the summed axes lead and the others keep their order (a column sum). A
 * contraction's gradient (matmul's `da` sums `dy[m, n] * b[k, n]` over n, the middle axis of the
 * forward's [M, N, K]) then has the form the scheduler tiles, the reduced loop innermost, as index
 * notation lowers `da[m, k] = sum(dy[m, n] * b[k, n], n)`; summed in place it ran 500 times slower.
 */
NodeId sum_axes_last(Graph& g, NodeId ct, const std::vector<int>& axes,
                     const std::vector<int>& kept) {
  const int rank = int(g[ct].shape.size()), count = int(axes.size());
  std::vector<int> perm = kept, last, back(rank);
  perm.insert(perm.end(), axes.begin(), axes.end());
  // Summed in place: when the summed axes are already last, or lead with the others in order (a
  // column sum, such as a norm's dgamma over the rows, which the scheduler runs row by row).
  bool in_order = std::is_sorted(kept.begin(), kept.end());
  bool leading = true;
  for (int i = 0; i < count; ++i)
    leading = leading && axes[i] == i;
  if (in_order && (leading || kept.empty() || kept.back() < axes.front()))
    return g.reduce(ReduceKind::sum, ct, axes);
  for (int k = rank - count; k < rank; ++k)
    last.push_back(k);
  for (int k = 0; k < rank; ++k)
    back[perm[k]] = k;
  NodeId r = g.reduce(ReduceKind::sum, g.view(ct, views::permute(g[ct].shape, perm)), last);
  return g.view(r, views::permute(g[r].shape, back));
}

NodeId view_adjoint(Graph& g, NodeId n, NodeId ct) {
  const View v = g[n].view;
  const Shape src = g[g[n].operands[0]].shape;
  std::set<std::string> used;
  for (const IntExpr& e : v.index)
    e.collect_vars(used);
  for (const MaskBound& m : v.mask)
    m.expr.collect_vars(used);
  // broadcast dimensions (read by no index) are summed, then dropped
  std::vector<int> summed;
  std::map<std::string, IntExpr> renumber;
  View w;
  for (int k = 0; k < int(v.shape.size()); ++k) {
    if (used.count(index_var(k))) {
      renumber[index_var(k)] = IntExpr::index(int(w.shape.size()));
      w.shape.push_back(v.shape[k]);
    } else if (v.shape[k] != IntExpr(1)) {
      summed.push_back(k);
    }
  }
  for (const IntExpr& e : v.index)
    w.index.push_back(e.substitute(renumber));
  for (const MaskBound& m : v.mask)
    w.mask.push_back({m.expr.substitute(renumber), m.bound});
  // the other axes in the order of the source dimensions that read them (a contraction's
  // gradient then writes its rows in order)
  std::vector<int> kept;
  auto keep = [&](int k) {
    if (std::find(summed.begin(), summed.end(), k) == summed.end() &&
        std::find(kept.begin(), kept.end(), k) == kept.end())
      kept.push_back(k);
  };
  for (const IntExpr& e : v.index) {
    std::set<std::string> vars;
    e.collect_vars(vars);
    for (int k = 0; k < int(v.shape.size()); ++k)
      if (vars.count(index_var(k))) keep(k);
  }
  for (int k = 0; k < int(v.shape.size()); ++k)
    keep(k);
  NodeId c = sum_axes_last(g, ct, summed, kept);
  c = g.view(c, squeeze(g[c].shape, used));
  if (std::optional<View> inv = affine_inverse(w, src)) return g.view(c, *inv);
  if (w.mask.empty())
    if (auto inv = invert(w, src, SizeFacts{})) return g.view(c, View{src, *inv, {}});
  return scatter_adjoint(g, w, src, c);
}

}  // namespace kiln::autodiff
