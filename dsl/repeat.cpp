// `repeat(block, n, ...)`: a composite applied n times, its outputs carried into its first
// inputs (all of them, or the first `carry`, the others stacked along a new leading axis), the
// other inputs stacked along a leading axis (one slice a step) or shared. Unrolled
// here, while lowering: the graph has no loops, and the simplifier and scheduler then see every
// step's statements as they would hand-written calls (docs/spec-language.md "Repeated blocks").
#include "dsl/lowering.h"
#include "ir/view.h"

namespace kiln {

namespace {

/** The most steps a repeat may unroll: a model's blocks, not a loop over data. */
constexpr int64_t kMaxRepeat = 1024;

/** The steps' values of one output that is not carried, as one tensor with a leading axis of
 *  size n: step l's value at l (each a view padded along a new axis, the n views added). */
NodeId stack_steps(Graph& g, const std::vector<NodeId>& steps) {
  const IntExpr n(static_cast<int64_t>(steps.size()));
  NodeId all = 0;
  for (size_t l = 0; l < steps.size(); ++l) {
    const Shape& shape = g[steps[l]].shape;
    Shape one = shape;
    one.insert(one.begin(), IntExpr(1));
    const NodeId unit = g.view(steps[l], views::reshape(shape, one));
    const IntExpr before(static_cast<int64_t>(l));
    const NodeId placed = g.view(unit, views::pad(one, 0, before, n - before - IntExpr(1)));
    all = l == 0 ? placed : g.binary(Op::add, all, placed);
  }
  return all;
}

}  // namespace

Value Lowerer::eval_repeat(const Expr& e, Scope& s) {
  std::vector<const Arg*> pos;
  std::vector<Arg> kwargs;
  const Arg* carry = nullptr;
  for (const Arg& a : e.args) {
    if (a.name.empty())
      pos.push_back(&a);
    else if (a.name == "carry")
      carry = &a;
    else
      kwargs.push_back(a);
  }
  if (pos.size() < 3)
    throw SpecError(e.loc,
                    "repeat(block, n, x, ...) takes a composite, a count and the block's "
                    "inputs; given " +
                        std::to_string(pos.size()) + " positional argument" +
                        (pos.size() == 1 ? "" : "s"));
  if (space_)
    throw SpecError(e.loc,
                    "repeat is not allowed inside index notation; assign it to a name first");
  const Expr& name = *pos[0]->value;
  const Composite* c =
      name.kind == Expr::Kind::name ? lib_.resolve(*s.comp->file, name.text) : nullptr;
  if (!c)
    throw SpecError(
        pos[0]->loc,
        "repeat's first argument must name a composite of this file or "
        "of a file in [meta] use" +
            (name.kind == Expr::Kind::name ? ", not '" + name.text + "'" : std::string()));
  const std::optional<int64_t> n = eval_int(*pos[1]->value, s, "repeat's count").as_constant();
  if (!n)
    throw SpecError(pos[1]->loc,
                    "repeat's count must be known when the composite is compiled "
                    "(a literal or an attribute), not a size");
  if (*n < 0 || *n > kMaxRepeat)
    throw SpecError(pos[1]->loc, "repeat's count is " + std::to_string(*n) +
                                     "; it must be in [0, " + std::to_string(kMaxRepeat) + "]");
  size_t carried = c->outputs.size();
  const size_t given = pos.size() - 2;
  if (carry) {
    const std::optional<int64_t> k = eval_int(*carry->value, s, "repeat's carry").as_constant();
    if (!k || *k < 0 || *k > static_cast<int64_t>(c->outputs.size()))
      throw SpecError(carry->loc, "repeat's carry must be a known count in [0, " +
                                      std::to_string(c->outputs.size()) + "], the outputs of '" +
                                      c->name + "' carried into its first inputs");
    carried = static_cast<size_t>(*k);
    if (carried < c->outputs.size() && *n == 0)
      throw SpecError(e.loc, "repeat of '" + c->name +
                                 "' with count 0 has no step to stack its output '" +
                                 c->outputs[carried].name + "' from");
  }
  if (given != c->inputs.size())
    throw SpecError(e.loc, "repeat of '" + c->name + "': it takes " +
                               std::to_string(c->inputs.size()) + " inputs, given " +
                               std::to_string(given));
  if (carried > c->inputs.size())
    throw SpecError(e.loc, "repeat of '" + c->name + "': its " + std::to_string(carried) +
                               " outputs are carried into its first inputs, but it has " +
                               std::to_string(c->inputs.size()));
  std::vector<Value> args;
  for (size_t k = 2; k < pos.size(); ++k)
    args.push_back(eval(*pos[k]->value, s));
  // An input given with one dimension more than the block declares is stacked: step l takes
  // its slice l of the leading axis, whose size must be n.
  std::vector<bool> stacked(args.size(), false);
  for (size_t k = carried; k < args.size(); ++k) {
    const Param& p = c->inputs[k];
    if (!args[k].is_tensor() || p.type.batch) continue;
    const Shape& shape = g_[args[k].node].shape;
    if (shape.size() != p.type.dims.size() + 1) continue;
    stacked[k] = true;
    const SourceLoc& at = pos[k + 2]->loc;
    if (!same_size(shape[0], IntExpr(*n), at,
                   "the leading axis of repeat's stacked input '" + p.name + "' and the count"))
      throw SpecError(at, "'" + p.name + "' of '" + c->name + "' is stacked for repeat: its " +
                              "leading axis " + shape[0].str() + " is not the count " +
                              std::to_string(*n));
  }
  std::vector<Value> state(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(carried));
  std::vector<std::vector<NodeId>> stacked_outs(c->outputs.size() - carried);
  for (int64_t l = 0; l < *n; ++l) {
    std::vector<Value> step = state;
    for (size_t k = carried; k < args.size(); ++k) {
      if (!stacked[k]) {
        step.push_back(args[k]);
        continue;
      }
      // Slice l of the leading axis as one view reading [l, i0, i1, ...]: a slice and a
      // reshape would clamp the slice to the symbolic axis and leave div and mod by sizes in
      // every index (a contraction then reads its weight too opaquely to be register-tiled).
      const NodeId w = args[k].node;
      const Shape& src = g_[w].shape;
      View select;
      select.shape.assign(src.begin() + 1, src.end());
      select.index.push_back(IntExpr(l));
      for (size_t d = 0; d + 1 < src.size(); ++d)
        select.index.push_back(IntExpr::index(static_cast<int>(d)));
      step.push_back(Value::tensor(g_.view(w, select)));
    }
    std::vector<NodeId> outs = call(*c, step, kwargs, &s, e.loc);
    for (size_t k = 0; k < carried; ++k)
      state[k] = Value::tensor(outs[k]);
    for (size_t k = carried; k < outs.size(); ++k)
      stacked_outs[k - carried].push_back(outs[k]);
  }
  for (const std::vector<NodeId>& steps : stacked_outs)
    state.push_back(Value::tensor(stack_steps(g_, steps)));
  if (state.size() == 1) return state[0];
  Value v;
  v.kind = Value::Kind::list;
  v.list = state;
  return v;
}

}  // namespace kiln
