#include "autodiff/scan_scatter_rules.h"

namespace kiln::autodiff {

namespace {

NodeId constant_like(Graph& g, NodeId like, double v) {
  return g.constant(g[like].dtype, g[like].shape, v);
}
NodeId select(Graph& g, NodeId cond, NodeId a, NodeId b) {
  return g.ternary(Op::where, cond, a, b);
}
NodeId else_zero(Graph& g, NodeId cond, NodeId v) {
  return select(g, cond, v, constant_like(g, v, 0));
}
/** 1 where `cond`, else 0, in the dtype and shape of `like`. */
NodeId indicator(Graph& g, NodeId cond, NodeId like) {
  return select(g, cond, constant_like(g, like, 1), constant_like(g, like, 0));
}
NodeId equals(Graph& g, NodeId a, double v) {
  return g.binary(Op::cmpeq, a, constant_like(g, a, v));
}
NodeId divide(Graph& g, NodeId a, NodeId b) {
  return g.binary(Op::mul, a, g.unary(Op::recip, b));
}

/** `x` reversed along `axis`. */
NodeId flip(Graph& g, NodeId x, int axis) {
  const Shape s = g[x].shape;
  return g.view(x, views::slice(s, axis, s[axis] - 1, s[axis], -1));
}
/** Element i is the sum of elements i.. of `x` along `axis`. */
NodeId reverse_cumsum(Graph& g, NodeId x, int axis) {
  return flip(g, g.scan(Op::add, flip(g, x, axis), axis), axis);
}

/** d y_j / d x_i = the product of x_0..x_j but x_i, for j >= i. With z_j the count of zeros up
 *  to j and p_j the running product with zeros read as 1: for x_i != 0 it is p_j / x_i while
 *  z_j = 0 (else 0); for the first zero (z_i = 1) it is p_j while z_j = 1; for later zeros 0. */
NodeId scan_mul_adjoint(Graph& g, NodeId x, NodeId ct, int axis) {
  NodeId zero = equals(g, x, 0);
  NodeId nonzero_x = select(g, zero, constant_like(g, x, 1), x);
  NodeId p = g.scan(Op::mul, nonzero_x, axis);
  NodeId z = g.scan(Op::add, indicator(g, zero, x), axis);
  NodeId ct_p = g.binary(Op::mul, ct, p);
  NodeId before_zeros = reverse_cumsum(g, else_zero(g, equals(g, z, 0), ct_p), axis);
  NodeId after_first = reverse_cumsum(g, else_zero(g, equals(g, z, 1), ct_p), axis);
  return select(g, zero, else_zero(g, equals(g, z, 1), after_first),
                divide(g, before_zeros, nonzero_x));
}

/** The view of a tensor of shape `s` as `[..., i, j, ...]`, a new axis inserted after `axis`:
 *  reading its own `axis` at position i (`at_j` false) or at j (true). */
NodeId pairs(Graph& g, NodeId x, int axis, bool at_j) {
  const Shape s = g[x].shape;
  View v;
  v.shape = s;
  v.shape.insert(v.shape.begin() + axis + 1, s[axis]);
  for (int d = 0; d < int(s.size()); ++d)
    v.index.push_back(IntExpr::index(d < axis || (d == axis && !at_j) ? d : d + 1));
  return g.view(x, v);
}

/** dx_i = sum over j >= i of ct_j / count_j where x_i equals the running maximum y_j, with
 *  count_j the number of i <= j where it does. */
NodeId scan_max_adjoint(Graph& g, NodeId x, NodeId y, NodeId ct, int axis) {
  std::vector<IntExpr> j_from_i = {IntExpr::index(axis + 1) - IntExpr::index(axis)};
  NodeId hit = g.binary(Op::cmpeq, pairs(g, x, axis, false), pairs(g, y, axis, true));
  NodeId count =
      g.reduce(ReduceKind::sum, indicator(g, hit, pairs(g, x, axis, false)), {axis}, j_from_i);
  NodeId wide = pairs(g, ct, axis, true);
  count = g.view(count, views::expand(g[count].shape, g[wide].shape));
  NodeId share = else_zero(g, hit, divide(g, wide, count));
  NodeId dx = g.reduce(ReduceKind::sum, share, {axis + 1}, j_from_i);
  Shape s = g[x].shape;
  View drop;  // [..., i, 1, ...] -> [..., i, ...]
  drop.shape = s;
  for (int d = 0; d <= int(s.size()); ++d)
    drop.index.push_back(d == axis + 1 ? IntExpr(0) : IntExpr::index(d <= axis ? d : d - 1));
  return g.view(dx, drop);
}

}  // namespace

void rule_scan(GradContext& c, NodeId n, NodeId ct) {
  NodeId x = c.g[n].operands[0];
  int axis = c.g[n].axes.at(0);
  switch (c.g[n].combine) {
    case Op::add:
      return c.accumulate(x, reverse_cumsum(c.g, ct, axis));
    case Op::mul:
      return c.accumulate(x, scan_mul_adjoint(c.g, x, ct, axis));
    case Op::max:
      return c.accumulate(x, scan_max_adjoint(c.g, x, n, ct, axis));
    default:
      c.refuse_if_active(
          n, "a scan with '" + std::string(op_name(c.g[n].combine)) + "' has no derivative");
  }
}

void rule_gather(GradContext& c, NodeId n, NodeId ct) {
  NodeId src = c.g[n].operands[0], index = c.g[n].operands[1];
  if (!c.active(src)) return;
  NodeId zeros = c.g.constant(c.g[src].dtype, c.g[src].shape, 0);
  c.accumulate(src, c.g.scatter(Op::add, zeros, index, ct, c.g[n].axis));
}

void rule_scatter(GradContext& c, NodeId n, NodeId ct) {
  Graph& g = c.g;
  const Node s = g[n];
  NodeId base = s.operands[0], index = s.operands[1], src = s.operands[2];
  if (s.combine == Op::add) {
    c.accumulate(base, ct);
    if (c.active(src)) c.accumulate(src, g.gather(ct, index, s.axis));
    return;
  }
  if (s.combine != Op::max)
    c.refuse_if_active(n, "a scatter with '" + std::string(op_name(s.combine)) +
                              "' has no gradient rule yet (only 'add' and 'max')");
  // the base element and the values scattered onto a target that equal its maximum share it
  const Shape at = g[index].shape;
  DType it = g[index].dtype;
  NodeId inside =
      g.binary(Op::bit_and, g.binary(Op::cmplt, g.constant_int(it, at, -1), index),
               g.binary(Op::cmplt, index, g.constant_size(it, at, g[base].shape[s.axis])));
  NodeId hit_base = g.binary(Op::cmpeq, base, n);
  NodeId hit_src =
      g.binary(Op::bit_and, inside, g.binary(Op::cmpeq, src, g.gather(n, index, s.axis)));
  NodeId count = g.binary(
      Op::add, indicator(g, hit_base, base),
      g.scatter(Op::add, constant_like(g, base, 0), index, indicator(g, hit_src, src), s.axis));
  NodeId share = divide(g, ct, count);
  c.accumulate(base, else_zero(g, hit_base, share));
  if (c.active(src)) c.accumulate(src, else_zero(g, hit_src, g.gather(share, index, s.axis)));
}

}  // namespace kiln::autodiff
