#include "autodiff/grad_rules.h"

#include <array>
#include <numbers>

#include "autodiff/gradient.h"
#include "autodiff/scan_scatter_rules.h"
#include "autodiff/view_adjoint.h"

namespace kiln::autodiff {

namespace {

using Rule = void (*)(GradContext&, NodeId, NodeId);

/** One op's rule: `algebra` states it, with `ct` the cotangent of the result `y`. */
struct GradRule {
  Op op;
  const char* algebra;
  Rule rule;
};

NodeId operand(GradContext& c, NodeId n, int k) {
  return c.g[n].operands[k];
}
NodeId mul(GradContext& c, NodeId a, NodeId b) {
  return c.g.binary(Op::mul, a, b);
}
NodeId scale(GradContext& c, NodeId a, double s) {
  return mul(c, a, c.constant_like(a, s));
}
/** The reduced node `r` (reduced axes of size 1) broadcast back to the shape of its operand. */
NodeId expand_back(GradContext& c, NodeId r, NodeId like) {
  return c.g.view(r, views::expand(c.g[r].shape, c.g[like].shape));
}
NodeId where_else_zero(GradContext& c, NodeId cond, NodeId v) {
  return c.g.ternary(Op::where, cond, v, c.constant_like(v, 0));
}

void no_operands(GradContext&, NodeId, NodeId) {}

void rule_copy(GradContext& c, NodeId n, NodeId ct) {
  c.accumulate(operand(c, n, 0), ct);
}

void rule_cast(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0);
  if (!c.active(a)) return;
  if (!is_float(c.g[a].dtype))
    c.refuse(n, "a cast from " + std::string(dtype_name(c.g[a].dtype)) +
                    " has no derivative: integer values carry no gradient");
  c.accumulate(a, c.g.cast(ct, c.g[a].dtype));
}

void rule_bitcast(GradContext& c, NodeId n, NodeId) {
  c.refuse_if_active(n, "a bitcast reinterprets bits and has no derivative");
}

void rule_view(GradContext& c, NodeId n, NodeId ct) {
  if (c.active(operand(c, n, 0))) c.accumulate(operand(c, n, 0), view_adjoint(c.g, n, ct));
}

void rule_neg(GradContext& c, NodeId n, NodeId ct) {
  c.accumulate(operand(c, n, 0), c.g.unary(Op::neg, ct));
}
void rule_recip(GradContext& c, NodeId n, NodeId ct) {
  c.accumulate(operand(c, n, 0), c.g.unary(Op::neg, mul(c, ct, mul(c, n, n))));
}
void rule_sqrt(GradContext& c, NodeId n, NodeId ct) {
  c.accumulate(operand(c, n, 0), mul(c, ct, scale(c, c.g.unary(Op::recip, n), 0.5)));
}
void rule_exp2(GradContext& c, NodeId n, NodeId ct) {
  c.accumulate(operand(c, n, 0), mul(c, ct, scale(c, n, std::numbers::ln2)));
}
void rule_log2(GradContext& c, NodeId n, NodeId ct) {
  NodeId inv = c.g.unary(Op::recip, operand(c, n, 0));
  c.accumulate(operand(c, n, 0), mul(c, ct, scale(c, inv, 1 / std::numbers::ln2)));
}
void rule_sin(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0);
  NodeId cos = c.g.unary(Op::sin, c.g.binary(Op::add, a, c.constant_like(a, std::numbers::pi / 2)));
  c.accumulate(a, mul(c, ct, cos));
}

void rule_add(GradContext& c, NodeId n, NodeId ct) {
  c.accumulate(operand(c, n, 0), ct);
  c.accumulate(operand(c, n, 1), ct);
}
void rule_mul(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0), b = operand(c, n, 1);
  if (c.active(a)) c.accumulate(a, mul(c, ct, b));
  if (c.active(b)) c.accumulate(b, mul(c, ct, a));
}
/** The share of max(a, b)'s cotangent that goes to `a`: 1 where a > b, 1/2 where a == b. */
NodeId max_share(GradContext& c, NodeId a, NodeId b) {
  NodeId half = c.g.ternary(Op::where, c.g.binary(Op::cmpeq, a, b), c.constant_like(a, 0.5),
                            c.constant_like(a, 0));
  return c.g.ternary(Op::where, c.g.binary(Op::cmplt, b, a), c.constant_like(a, 1), half);
}
void rule_max(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0), b = operand(c, n, 1);
  if (c.active(a)) c.accumulate(a, mul(c, ct, max_share(c, a, b)));
  if (c.active(b)) c.accumulate(b, mul(c, ct, max_share(c, b, a)));
}
void rule_mod(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0), b = operand(c, n, 1);
  c.accumulate(a, ct);
  if (!c.active(b)) return;
  NodeId whole = c.g.binary(Op::add, a, c.g.unary(Op::neg, n));  // trunc(a / b) * b
  c.accumulate(b, c.g.unary(Op::neg, mul(c, ct, mul(c, whole, c.g.unary(Op::recip, b)))));
}
void no_derivative(GradContext& c, NodeId n, NodeId) {
  c.refuse_if_active(n, "'" + std::string(op_name(c.g[n].op)) + "' has no derivative");
}

void rule_where(GradContext& c, NodeId n, NodeId ct) {
  NodeId cond = operand(c, n, 0), a = operand(c, n, 1), b = operand(c, n, 2);
  NodeId zero = c.constant_like(ct, 0);
  if (c.active(a)) c.accumulate(a, c.g.ternary(Op::where, cond, ct, zero));
  if (c.active(b)) c.accumulate(b, c.g.ternary(Op::where, cond, zero, ct));
}
void rule_mulacc(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0), b = operand(c, n, 1);
  if (c.active(a)) c.accumulate(a, mul(c, ct, b));
  if (c.active(b)) c.accumulate(b, mul(c, ct, a));
  c.accumulate(operand(c, n, 2), ct);
}

/** The operand's points inside the reduction's domain, or all of them. */
NodeId in_domain(GradContext& c, NodeId n, NodeId a) {
  return domain_mask(c.g, c.g[n].domain, c.g[a].shape);
}

void reduce_sum(GradContext& c, NodeId n, NodeId ct, NodeId a) {
  NodeId d = expand_back(c, ct, a);
  if (!c.g[n].domain.empty()) d = where_else_zero(c, in_domain(c, n, a), d);
  c.accumulate(a, d);
}
/** Ties split the cotangent equally among the maxima of each reduced group. */
void reduce_max(GradContext& c, NodeId n, NodeId ct, NodeId a) {
  const Node r = c.g[n];
  NodeId hit = c.g.binary(Op::cmpeq, a, expand_back(c, n, a));
  if (!r.domain.empty()) hit = c.g.binary(Op::bit_and, hit, in_domain(c, n, a));
  NodeId ones = c.g.ternary(Op::where, hit, c.constant_like(a, 1), c.constant_like(a, 0));
  NodeId count = c.g.reduce(ReduceKind::sum, ones, r.axes);
  NodeId share = mul(c, ct, c.g.unary(Op::recip, count));
  c.accumulate(a, where_else_zero(c, hit, expand_back(c, share, a)));
}
/** d prod / d a_i is the product of the others: prod / a_i without zeros, the product of the
 *  nonzero elements at the only zero, and 0 everywhere when two or more are zero. */
void reduce_prod(GradContext& c, NodeId n, NodeId ct, NodeId a) {
  const Node r = c.g[n];
  NodeId inside = in_domain(c, n, a);
  NodeId one = c.constant_like(a, 1), zero = c.constant_like(a, 0);
  NodeId is_zero = c.g.binary(Op::bit_and, inside, c.g.binary(Op::cmpeq, a, zero));
  NodeId zeros = c.g.reduce(ReduceKind::sum, c.g.ternary(Op::where, is_zero, one, zero), r.axes);
  NodeId nonzero = c.g.ternary(Op::where, is_zero, one, a);
  NodeId rest = c.g.reduce(ReduceKind::prod, nonzero, r.axes, r.domain);
  NodeId zeros_a = expand_back(c, zeros, a), rest_a = expand_back(c, rest, a);
  NodeId no_zero = c.g.binary(Op::cmpeq, zeros_a, zero);
  NodeId one_zero = c.g.binary(Op::cmpeq, zeros_a, one);
  NodeId others =
      c.g.ternary(Op::where, no_zero, mul(c, rest_a, c.g.unary(Op::recip, nonzero)),
                  c.g.ternary(Op::where, c.g.binary(Op::bit_and, one_zero, is_zero), rest_a, zero));
  c.accumulate(a, where_else_zero(c, inside, mul(c, expand_back(c, ct, a), others)));
}
void rule_reduce(GradContext& c, NodeId n, NodeId ct) {
  NodeId a = operand(c, n, 0);
  switch (c.g[n].reduce_kind) {
    case ReduceKind::sum:
      return reduce_sum(c, n, ct, a);
    case ReduceKind::max:
      return reduce_max(c, n, ct, a);
    case ReduceKind::prod:
      return reduce_prod(c, n, ct, a);
  }
}

void rule_extern(GradContext& c, NodeId n, NodeId) {
  c.refuse_if_active(n,
                     "extern calls come from rewrite rules and have no gradient; differentiate the "
                     "graph before simplifying it");
}

// clang-format off
constexpr std::array<GradRule, kNumOps> kRules = {{
    {Op::input,        "an input: its adjoint is its gradient",                      no_operands},
    {Op::constant,     "no operands",                                                no_operands},
    {Op::index,        "no operands",                                                no_operands},
    {Op::view,         "dx = the adjoint view of ct (view_adjoint.h)",               rule_view},
    {Op::copy,         "dx = ct",                                                    rule_copy},
    {Op::cast,         "dx = cast(ct, dtype(x)) between floats; refused from integers", rule_cast},
    {Op::bitcast,      "refused: no derivative",                                     rule_bitcast},
    {Op::neg,          "dx = -ct",                                                   rule_neg},
    {Op::recip,        "dx = -ct * y * y",                                           rule_recip},
    {Op::sqrt,         "dx = ct * 0.5 / y",                                          rule_sqrt},
    {Op::exp2,         "dx = ct * y * ln 2",                                         rule_exp2},
    {Op::log2,         "dx = ct / (x * ln 2)",                                       rule_log2},
    {Op::sin,          "dx = ct * sin(x + pi/2)",                                    rule_sin},
    {Op::logical_not,  "refused: no derivative",                                     no_derivative},
    {Op::add,          "da = ct, db = ct",                                           rule_add},
    {Op::mul,          "da = ct * b, db = ct * a",                                   rule_mul},
    {Op::max,          "da = ct * (a > b ? 1 : a == b ? 1/2 : 0), db alike",         rule_max},
    {Op::idiv,         "refused: no derivative",                                     no_derivative},
    {Op::mod,          "da = ct, db = -ct * (a - y) / b (fmod)",                     rule_mod},
    {Op::bit_and,      "refused: no derivative",                                     no_derivative},
    {Op::bit_or,       "refused: no derivative",                                     no_derivative},
    {Op::bit_xor,      "refused: no derivative",                                     no_derivative},
    {Op::shl,          "refused: no derivative",                                     no_derivative},
    {Op::shr,          "refused: no derivative",                                     no_derivative},
    {Op::cmplt,        "refused: no derivative (a bool result carries none)",        no_derivative},
    {Op::cmpeq,        "refused: no derivative (a bool result carries none)",        no_derivative},
    {Op::where,        "da = where(c, ct, 0), db = where(c, 0, ct), none for c",     rule_where},
    {Op::mulacc,       "da = ct * b, db = ct * a, dc = ct",                          rule_mulacc},
    {Op::reduce,       "sum: expand(ct); max: expand(ct / ties) at the maxima; prod: product of the others", rule_reduce},
    {Op::scan,         "add: a reverse scan; mul: reverse scans of products, zeros exact; max: to the maxima, ties split", rule_scan},
    {Op::gather,       "dsrc = scatter(add, 0, index, ct), none for index",          rule_gather},
    {Op::scatter,      "add: dbase = ct, dsrc = gather(ct, index); max: to the maxima, ties split; mul refused", rule_scatter},
    {Op::extern_call,  "refused: differentiate before simplifying",                  rule_extern},
}};
// clang-format on

constexpr bool rules_in_op_order() {
  for (int i = 0; i < kNumOps; ++i)
    if (static_cast<int>(kRules[i].op) != i) return false;
  return true;
}
static_assert(rules_in_op_order(), "kRules must list every op in the order of enum Op");

}  // namespace

void GradContext::accumulate(NodeId node, NodeId contribution) {
  if (!active(node) || !is_float(g[node].dtype)) return;
  NodeId& adj = adjoint_[node];
  adj = adj < 0 ? contribution : g.binary(Op::add, adj, contribution);
}

void GradContext::refuse(NodeId node, const std::string& why) const {
  const Node& n = g[node];
  std::string attrs = node_attributes(n);
  throw GradError(node, "at %" + std::to_string(node) + " = " + std::string(op_name(n.op)) +
                            (attrs.empty() ? "" : " " + attrs) + " : " + node_type(n) + ": " + why);
}

void GradContext::refuse_if_active(NodeId n, const std::string& why) const {
  for (NodeId o : g[n].operands)
    if (active(o)) refuse(n, why);
}

NodeId GradContext::constant_like(NodeId node, double value) {
  return g.constant(g[node].dtype, g[node].shape, value);
}

void apply_rule(GradContext& ctx, NodeId n, NodeId ct) {
  const GradRule& r = kRules[static_cast<int>(ctx.g[n].op)];
  r.rule(ctx, n, ct);
}

}  // namespace kiln::autodiff
