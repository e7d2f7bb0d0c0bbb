#include "dsl/builtins.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "dsl/lowering.h"

namespace kiln {

namespace {

/** The arguments of one builtin call, matched to its parameter names. */
class Args {
 public:
  Args(const Expr& call, std::vector<std::string> params, size_t required)
      : call_(call), params_(std::move(params)), given_(params_.size()) {
    size_t k = 0;
    for (const Arg& a : call.args) {
      if (a.name.empty()) {
        if (k >= params_.size()) fail_count();
        given_[k++] = &a;
        continue;
      }
      auto it = std::find(params_.begin(), params_.end(), a.name);
      if (it == params_.end()) {
        std::string names;
        for (const auto& p : params_)
          names += (names.empty() ? "" : ", ") + p;
        throw SpecError(
            a.loc, "unknown argument '" + a.name + "' of '" + call.text + "'; expected " + names);
      }
      given_[it - params_.begin()] = &a;
    }
    for (size_t i = 0; i < required; ++i)
      if (!given_[i]) fail_count();
  }
  const Expr* get(size_t i) const { return given_[i] ? given_[i]->value.get() : nullptr; }
  SourceLoc loc(size_t i) const { return given_[i] ? given_[i]->loc : call_.loc; }

 private:
  [[noreturn]] void fail_count() const {
    std::string names;
    for (const auto& p : params_)
      names += (names.empty() ? "" : ", ") + p;
    throw SpecError(call_.loc, "wrong number of arguments to '" + call_.text + "': given " +
                                   std::to_string(call_.args.size()) + ", expected (" + names +
                                   ")");
  }
  const Expr& call_;
  std::vector<std::string> params_;
  std::vector<const Arg*> given_;
};

using Handler = std::function<Value(Lowerer&, const Expr&, Scope&)>;

int normalize_axis(int64_t axis, size_t rank, const SourceLoc& at, const std::string& what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    throw SpecError(at, "axis " + std::to_string(axis) + " is out of range for " + what +
                            " (rank " + std::to_string(rank) + ")");
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

int64_t const_int(Lowerer& l, const Expr& e, Scope& s, const std::string& what) {
  auto c = l.eval_int(e, s, what).as_constant();
  if (!c) throw SpecError(e.loc, what + " must be a constant integer");
  return *c;
}

std::string describe(Lowerer& l, NodeId n) {
  const Node& x = l.graph()[n];
  return std::string(dtype_name(x.dtype)) + shape_str(x.shape);
}

NodeId tensor_arg(Lowerer& l, const Args& a, size_t i, Scope& s, const std::string& fn) {
  return l.require_tensor(l.eval(*a.get(i), s), a.loc(i), "'" + fn + "'");
}

bool starts_with_ellipsis(const Expr& e) {
  return e.kind == Expr::Kind::list && !e.items.empty() && e.items[0]->kind == Expr::Kind::ellipsis;
}

/** The items of a list argument; a leading `...` is skipped (the caller expands it). */
std::vector<Value> list_items(Lowerer& l, const Expr& e, Scope& s, const std::string& expected) {
  if (!starts_with_ellipsis(e)) {
    Value v = l.eval(e, s);
    if (v.kind != Value::Kind::list) throw SpecError(e.loc, "expected " + expected);
    return v.list;
  }
  if (!s.has_batch)
    throw SpecError(e.items[0]->loc, "'...' in a list needs a composite with batch dimensions");
  std::vector<Value> out;
  for (size_t i = 1; i < e.items.size(); ++i) {  // a list item (an attribute) is spliced in
    Value v = l.eval(*e.items[i], s);
    if (v.kind == Value::Kind::list)
      out.insert(out.end(), v.list.begin(), v.list.end());
    else
      out.push_back(v);
  }
  return out;
}

/** A list of sizes such as [M, N] (a leading `...` stands for the batch dimensions), or a
 *  tensor, which stands for its shape. */
Shape shape_arg(Lowerer& l, const Expr& e, Scope& s) {
  if (e.kind != Expr::Kind::list) {  // a tensor stands for its shape: full(0, x, T)
    Value v = l.eval(e, s);
    if (v.is_tensor()) return l.graph()[v.node].shape;
  }
  std::vector<Value> items = list_items(l, e, s, "a list of sizes such as [M, N]");
  Shape out = starts_with_ellipsis(e) ? s.batch : Shape{};
  for (const Value& d : items) {
    if (d.kind != Value::Kind::integer)
      throw SpecError(e.loc, "expected a list of integer sizes, found " + d.describe(l.graph()));
    out.push_back(d.integer);
  }
  return out;
}

/** Axes from an `axis` argument (an integer or a list); all axes when absent. */
std::vector<int> axes_arg(Lowerer& l, const Expr* e, Scope& s, NodeId x) {
  size_t rank = l.graph()[x].shape.size();
  std::vector<int> axes;
  if (!e) {
    for (size_t k = 0; k < rank; ++k)
      axes.push_back(static_cast<int>(k));
    return axes;
  }
  Value v = l.eval(*e, s);
  std::vector<Value> items = v.kind == Value::Kind::list ? v.list : std::vector<Value>{v};
  for (const Value& item : items) {
    auto c = item.kind == Value::Kind::integer ? item.integer.as_constant() : std::nullopt;
    if (!c) throw SpecError(e->loc, "axis must be a constant integer or a list of them");
    int ax = normalize_axis(*c, rank, e->loc, describe(l, x));
    if (std::find(axes.begin(), axes.end(), ax) != axes.end())
      throw SpecError(e->loc, "axis " + std::to_string(*c) + " is listed twice");
    axes.push_back(ax);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool bool_arg(Lowerer& l, const Expr* e, Scope& s, bool dflt) {
  if (!e) return dflt;
  Value v = l.eval(*e, s);
  if (v.kind != Value::Kind::boolean) throw SpecError(e->loc, "expected true or false");
  return v.number != 0;
}

/** An order-reversing map that is its own inverse: neg for floats, bitwise not for integers
 *  (exact for every value, unlike neg, which overflows at the minimum and wraps unsigned). */
NodeId mirror(Lowerer& l, NodeId x) {
  return l.graph().unary(is_float(l.graph()[x].dtype) ? Op::neg : Op::logical_not, x);
}

/** sum, max and prod; `min` is max between two mirrors: min(x) = mirror(max(mirror(x))). */
Value reduce_builtin(Lowerer& l, const Expr& call, Scope& s, ReduceKind kind,
                     bool mirrored = false) {
  auto m = [&](NodeId x) { return mirrored ? mirror(l, x) : x; };
  if (const IndexSpace* space = l.space()) {  // sum(expr, k, l): reduce named indices
    if (call.args.size() < 2)
      throw SpecError(call.loc, "'" + call.text +
                                    "' in index notation names the reduced "
                                    "indices, such as " +
                                    call.text + "(A[i, k] * B[k, j], k)");
    std::vector<int> axes;
    std::vector<const Expr*> bounds;
    for (size_t i = 1; i < call.args.size(); ++i) {
      const Expr& arg = *call.args[i].value;
      const ReductionArg ra = reduction_arg(arg, *space);
      if (ra.bound) bounds.push_back(ra.bound);
      if (!ra.index && ra.bound) continue;
      int ax = ra.index ? space->axis_of(ra.index->text) : -1;
      if (ax < 0)
        throw SpecError(arg.loc,
                        "expected the name of a reduced index or a bound such as "
                        "'j <= i', found '" +
                            expr_str(arg) + "'");
      if (std::find(axes.begin(), axes.end(), ax) == axes.end()) axes.push_back(ax);
    }
    std::sort(axes.begin(), axes.end());
    std::vector<IntExpr> domain;
    for (const Expr* b : bounds)
      domain.push_back(l.domain_bound(*b, s));
    const Expr& operand = *call.args[0].value;
    NodeId x = l.unify({domain.empty() ? l.eval(operand, s) : l.eval_bounded(operand, s)}, call.loc,
                       "'" + call.text + "'")[0];
    Shape full = l.graph()[x].shape;
    for (int ax : axes)
      full[ax] = space->ranges[ax];
    for (const IntExpr& e : domain) {  // a bound's other indices join the operand's shape
      std::set<std::string> vars;
      e.collect_vars(vars);
      for (const std::string& v : vars)
        if (v[0] == '%') {
          const size_t ax = std::stoul(v.substr(1));
          full[ax] = space->ranges[ax];
        }
    }
    x = l.broadcast_to(x, full, call.loc);
    return Value::tensor(m(l.graph().reduce(kind, m(x), axes, domain)));
  }
  if (kind == ReduceKind::max && call.args.size() == 2 && call.args[1].name.empty()) {
    auto x = l.unify({l.eval(*call.args[0].value, s), l.eval(*call.args[1].value, s)}, call.loc,
                     "'" + call.text + "'");
    return Value::tensor(m(l.graph().binary(Op::max, m(x[0]), m(x[1]))));
  }
  Args a(call, {"x", "axis", "keepdim"}, 1);
  NodeId x = tensor_arg(l, a, 0, s, call.text);
  std::vector<int> axes = axes_arg(l, a.get(1), s, x);
  if (kind != ReduceKind::max && l.graph()[x].dtype == DType::boolean)
    throw SpecError(call.loc, "'" + call.text + "' of a bool tensor: cast it to a number first");
  NodeId r = m(l.graph().reduce(kind, m(x), axes));
  if (bool_arg(l, a.get(2), s, false)) return Value::tensor(r);
  Shape kept;
  const Shape& rs = l.graph()[r].shape;
  for (size_t k = 0; k < rs.size(); ++k)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(k)) == axes.end())
      kept.push_back(rs[k]);
  return Value::tensor(l.graph().view(r, views::reshape(rs, kept)));
}

/** The identity of scan combiner `op` in dtype `t`, as a constant of `shape`. */
NodeId scan_identity(Graph& g, Op op, DType t, const Shape& shape) {
  if (op == Op::mul) return g.constant(t, shape, 1);
  if (op == Op::bit_and) return g.constant_int(t, shape, t == DType::boolean ? 1 : wrap_int(t, -1));
  if (op != Op::max) return g.constant_int(t, shape, 0);
  if (is_float(t)) return g.constant(t, shape, -INFINITY);
  return g.constant_int(t, shape, int_min_of(t));
}

/** scan(x, op, axis=-1, exclusive=false): the running `op` ("add", "mul", "max", "min",
 *  "and", "or", "xor") along `axis`. Exclusive: shifted one place, the identity first. */
Value scan_builtin(Lowerer& l, const Expr& call, Scope& s) {
  Args a(call, {"x", "op", "axis", "exclusive"}, 2);
  Graph& g = l.graph();
  NodeId x = tensor_arg(l, a, 0, s, call.text);
  Value name = l.eval(*a.get(1), s);
  static const std::map<std::string, Op> kOps = {
      {"add", Op::add},     {"mul", Op::mul},   {"max", Op::max},     {"min", Op::max},
      {"and", Op::bit_and}, {"or", Op::bit_or}, {"xor", Op::bit_xor},
  };
  auto it = name.kind == Value::Kind::string ? kOps.find(name.string) : kOps.end();
  if (it == kOps.end())
    throw SpecError(a.loc(1),
                    "the combiner of 'scan' must be one of \"add\", \"mul\", \"max\", "
                    "\"min\", \"and\", \"or\", \"xor\"; found " +
                        name.describe(g));
  const Op op = it->second;
  const bool mirrored = name.string == "min";
  const DType t = g[x].dtype;
  const bool bitwise = op == Op::bit_and || op == Op::bit_or || op == Op::bit_xor;
  if (bitwise && is_float(t))
    throw SpecError(call.loc, "scan with \"" + name.string +
                                  "\" needs an integer or bool tensor, found " + describe(l, x));
  if (t == DType::boolean && (op == Op::add || op == Op::mul))
    throw SpecError(
        call.loc, "scan with \"" + name.string + "\" of a bool tensor: cast it to a number first");
  const Shape shape = g[x].shape;
  if (shape.empty())
    throw SpecError(call.loc, "'scan' needs a tensor of rank 1 or more, found " + describe(l, x));
  int axis = static_cast<int>(shape.size()) - 1;
  if (a.get(2)) {
    std::vector<int> axes = axes_arg(l, a.get(2), s, x);
    if (axes.size() != 1) throw SpecError(a.loc(2), "'scan' runs along one axis");
    axis = axes[0];
  }
  auto m = [&](NodeId v) { return mirrored ? mirror(l, v) : v; };
  NodeId y = g.scan(op, m(x), axis);
  if (bool_arg(l, a.get(3), s, false)) {
    View shift = View::identity(shape);
    IntExpr before = IntExpr::var("%" + std::to_string(axis)) - 1;
    shift.index[axis] = before;
    shift.mask.push_back({before, shape[axis]});
    NodeId first =
        g.binary(Op::cmpeq, g.index(DType::i64, shape, axis), g.constant_int(DType::i64, shape, 0));
    y = g.ternary(Op::where, first, scan_identity(g, op, t, shape), g.view(y, shift));
  }
  return Value::tensor(m(y));
}

Value cast_builtin(Lowerer& l, const Expr& call, Scope& s, bool bitwise) {
  Args a(call, {"x", "dtype"}, 2);
  DType t = l.eval_dtype(*a.get(1), s);
  Value v = l.eval(*a.get(0), s);
  if (!v.is_tensor()) {  // a number, size or index: materialise it, then convert
    DType via = v.kind == Value::Kind::number    ? (is_float(t) ? t : DType::f64)
                : v.kind == Value::Kind::boolean ? DType::boolean
                : t == DType::boolean            ? DType::i64
                                                 : t;
    v = Value::tensor(l.as_tensor(v, via, l.scalar_shape(v), call.loc));
  }
  if (bitwise && dtype_bits(l.graph()[v.node].dtype) != dtype_bits(t))
    throw SpecError(call.loc, "bitcast needs dtypes of equal width: " + describe(l, v.node) +
                                  " to " + std::string(dtype_name(t)));
  return Value::tensor(l.graph().cast(v.node, t, bitwise));
}

Value view_builtin(Lowerer& l, const Expr& call, Scope& s) {
  Graph& g = l.graph();
  const std::string& fn = call.text;
  if (fn == "reshape" || fn == "expand") {
    Args a(call, {"x", "shape"}, 2);
    NodeId x = tensor_arg(l, a, 0, s, fn);
    Shape src = g[x].shape, dst = shape_arg(l, *a.get(1), s);
    if (fn == "expand") {
      if (dst.size() < src.size())
        throw SpecError(call.loc, "expand cannot lower the rank of " + describe(l, x));
      Shape padded(dst.size() - src.size(), IntExpr(1));
      padded.insert(padded.end(), src.begin(), src.end());
      for (size_t k = 0; k < dst.size(); ++k)
        if (padded[k] != IntExpr(1) &&
            !l.same_size(padded[k], dst[k], call.loc,
                         "dimension " + std::to_string(k) + " of the expand of " + describe(l, x)))
          throw SpecError(call.loc, "shape mismatch: cannot expand " + describe(l, x) + " to " +
                                        shape_str(dst));
      return Value::tensor(l.broadcast_to(x, dst, call.loc));
    }
    IntExpr a_count = 1, b_count = 1;
    for (const IntExpr& d : src)
      a_count = a_count * d;
    int inferred = -1;  // one -1 in the new shape takes the remaining elements
    for (size_t k = 0; k < dst.size(); ++k) {
      if (dst[k] != IntExpr(-1)) {
        b_count = b_count * dst[k];
      } else if (inferred >= 0) {
        throw SpecError(a.loc(1), "reshape accepts at most one -1 in the new shape");
      } else {
        inferred = static_cast<int>(k);
      }
    }
    if (inferred >= 0 && b_count != IntExpr(0)) {
      dst[inferred] = floordiv(a_count, b_count);
      b_count = b_count * dst[inferred];
    }
    if (!l.same_size(
            a_count, b_count, call.loc,
            "the element counts of the reshape of " + describe(l, x) + " to " + shape_str(dst)))
      throw SpecError(call.loc, "shape mismatch: reshape of " + describe(l, x) + " (" +
                                    a_count.str() + " elements) to " + shape_str(dst) + " (" +
                                    b_count.str() + " elements)");
    return Value::tensor(g.view(x, views::reshape(src, dst)));
  }
  if (fn == "permute") {
    Args a(call, {"x", "dims"}, 2);
    NodeId x = tensor_arg(l, a, 0, s, fn);
    std::vector<Value> items = list_items(l, *a.get(1), s, "a list of constant axes");
    size_t rank = g[x].shape.size();
    std::vector<int> perm;
    if (starts_with_ellipsis(*a.get(1)))  // [..., -1, -2]: leading axes stay in place
      for (size_t k = 0; k + items.size() < rank; ++k)
        perm.push_back(static_cast<int>(k));
    for (const Value& d : items) {
      auto c = d.kind == Value::Kind::integer ? d.integer.as_constant() : std::nullopt;
      if (!c) throw SpecError(a.loc(1), "permute needs a list of constant axes");
      perm.push_back(normalize_axis(*c, rank, a.loc(1), describe(l, x)));
    }
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
      if (sorted[k] != static_cast<int>(k)) sorted.clear();
    if (perm.size() != rank || sorted.size() != rank)
      throw SpecError(a.loc(1), "permute needs a permutation of the " + std::to_string(rank) +
                                    " axes of " + describe(l, x));
    return Value::tensor(g.view(x, views::permute(g[x].shape, perm)));
  }
  if (fn == "squeeze" || fn == "unsqueeze") {
    Args a(call, {"x", "axis"}, 2);
    NodeId x = tensor_arg(l, a, 0, s, fn);
    Shape src = g[x].shape, dst = src;
    int64_t ax = const_int(l, *a.get(1), s, "axis");
    if (fn == "squeeze") {
      int k = normalize_axis(ax, src.size(), a.loc(1), describe(l, x));
      if (src[k] != IntExpr(1))
        throw SpecError(a.loc(1), "squeeze of axis " + std::to_string(ax) + " of " +
                                      describe(l, x) + ": its size is not 1");
      dst.erase(dst.begin() + k);
    } else {
      int k = normalize_axis(ax, src.size() + 1, a.loc(1), describe(l, x) + " plus one");
      dst.insert(dst.begin() + k, IntExpr(1));
    }
    return Value::tensor(g.view(x, views::reshape(src, dst)));
  }
  if (fn == "slice" || fn == "pad" || fn == "flip") {
    Args a = fn == "slice" ? Args(call, {"x", "axis", "start", "stop", "step"}, 2)
             : fn == "pad" ? Args(call, {"x", "axis", "before", "after"}, 2)
                           : Args(call, {"x", "axis"}, 2);
    NodeId x = tensor_arg(l, a, 0, s, fn);
    Shape src = g[x].shape;
    int ax =
        normalize_axis(const_int(l, *a.get(1), s, "axis"), src.size(), a.loc(1), describe(l, x));
    auto opt_int = [&](size_t i, IntExpr dflt) {
      return a.get(i) ? l.eval_int(*a.get(i), s, "'" + call.args[0].value->text + "' argument")
                      : dflt;
    };
    if (fn == "flip")
      return Value::tensor(g.view(x, views::slice(src, ax, src[ax] - 1, src[ax], -1)));
    if (fn == "pad")
      return Value::tensor(g.view(x, views::pad(src, ax, opt_int(2, 0), opt_int(3, 0))));
    IntExpr start = opt_int(2, 0), stop = opt_int(3, src[ax]);
    int64_t step = a.get(4) ? const_int(l, *a.get(4), s, "step") : 1;
    if (step <= 0) throw SpecError(a.loc(4), "slice step must be positive; use flip() to reverse");
    IntExpr count = floordiv(stop - start + (step - 1), step);
    return Value::tensor(g.view(x, views::slice(src, ax, start, count, step)));
  }
  throw SpecError(call.loc, "unknown view '" + fn + "'");
}

Value source_builtin(Lowerer& l, const Expr& call, Scope& s) {
  Graph& g = l.graph();
  if (call.text == "size") {
    Args a(call, {"x", "axis"}, 2);
    NodeId x = tensor_arg(l, a, 0, s, "size");
    int ax = normalize_axis(const_int(l, *a.get(1), s, "axis"), g[x].shape.size(), a.loc(1),
                            describe(l, x));
    return Value::of_int(g[x].shape[ax]);
  }
  if (call.text == "full") {
    Args a(call, {"value", "shape", "dtype"}, 3);
    return Value::tensor(l.as_tensor(l.eval(*a.get(0), s), l.eval_dtype(*a.get(2), s),
                                     shape_arg(l, *a.get(1), s), call.loc));
  }
  Args a(call, {"shape", "axis", "dtype"}, 3);  // iota
  Shape shape = shape_arg(l, *a.get(0), s);
  int ax =
      normalize_axis(const_int(l, *a.get(1), s, "axis"), shape.size(), a.loc(1), shape_str(shape));
  return Value::tensor(g.index(l.eval_dtype(*a.get(2), s), shape, ax));
}

/** take_along(x, idx, axis): x read along `axis` at the positions idx holds (the gather
 *  primitive); x and idx have one rank and broadcast in the other dimensions. */
Value take_along_builtin(Lowerer& l, const Expr& call, Scope& s) {
  Args a(call, {"x", "idx", "axis"}, 3);
  NodeId x = tensor_arg(l, a, 0, s, "take_along"), idx = tensor_arg(l, a, 1, s, "take_along");
  const Shape &xs = l.graph()[x].shape, &is = l.graph()[idx].shape;
  if (!is_int(l.graph()[idx].dtype))
    throw SpecError(a.loc(1), "the positions of 'take_along' must have an integer dtype, found " +
                                  describe(l, idx));
  if (xs.size() != is.size())
    throw SpecError(call.loc, "'take_along' needs x and idx of one rank, found " + describe(l, x) +
                                  " and " + describe(l, idx));
  int axis = normalize_axis(const_int(l, *a.get(2), s, "the axis of 'take_along'"), xs.size(),
                            a.loc(2), "'take_along'");
  Shape x_to = xs, idx_to = is;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (static_cast<int>(d) == axis || xs[d] == is[d]) continue;
    if (xs[d] != IntExpr(1) && is[d] != IntExpr(1))
      throw SpecError(call.loc, "'take_along': dimension " + std::to_string(d) + " of x " +
                                    describe(l, x) + " and of idx " + describe(l, idx) +
                                    " neither match nor broadcast");
    x_to[d] = idx_to[d] = xs[d] == IntExpr(1) ? is[d] : xs[d];
  }
  Graph& g = l.graph();
  return Value::tensor(
      g.gather(l.broadcast_to(x, x_to, a.loc(0)), l.broadcast_to(idx, idx_to, a.loc(1)), axis));
}

/** scatter(base, idx, src, op="add", axis=-1): base with src combined in by `op` ("add",
 *  "mul", "max", "min") along `axis` at the positions idx holds (the scatter primitive); idx
 *  has base's rank and equals it but along the axis; src, a tensor of base's dtype or a number,
 *  broadcasts to idx's shape. "min" mirrors "max", as scan does. */
Value scatter_builtin(Lowerer& l, const Expr& call, Scope& s) {
  Args a(call, {"base", "idx", "src", "op", "axis"}, 3);
  Graph& g = l.graph();
  NodeId base = tensor_arg(l, a, 0, s, "scatter"), idx = tensor_arg(l, a, 1, s, "scatter");
  const Shape bs = g[base].shape, is = g[idx].shape;
  const DType t = g[base].dtype;
  if (!is_int(g[idx].dtype))
    throw SpecError(a.loc(1), "the positions of 'scatter' must have an integer dtype, found " +
                                  describe(l, idx));
  if (bs.empty() || bs.size() != is.size())
    throw SpecError(call.loc, "'scatter' needs base and idx of one rank of 1 or more, found " +
                                  describe(l, base) + " and " + describe(l, idx));
  std::string name = "add";
  if (a.get(3)) {
    Value v = l.eval(*a.get(3), s);
    name = v.kind == Value::Kind::string ? v.string : "?";
    if (name != "add" && name != "mul" && name != "max" && name != "min")
      throw SpecError(a.loc(3),
                      "the combiner of 'scatter' must be one of \"add\", \"mul\", \"max\", "
                      "\"min\"; found " +
                          v.describe(g));
  }
  const Op op = name == "add" ? Op::add : name == "mul" ? Op::mul : Op::max;
  if (t == DType::boolean && op != Op::max)
    throw SpecError(call.loc,
                    "scatter with \"" + name + "\" of a bool tensor: cast it to a number first");
  int axis = static_cast<int>(bs.size()) - 1;
  if (a.get(4))
    axis = normalize_axis(const_int(l, *a.get(4), s, "the axis of 'scatter'"), bs.size(), a.loc(4),
                          "'scatter'");
  for (size_t d = 0; d < bs.size(); ++d)
    if (static_cast<int>(d) != axis && bs[d] != is[d])
      throw SpecError(call.loc, "'scatter': dimension " + std::to_string(d) + " of base " +
                                    describe(l, base) + " and of idx " + describe(l, idx) +
                                    " differ (only the axis " + std::to_string(axis) + " may)");
  Value sv = l.eval(*a.get(2), s);
  NodeId src = sv.is_tensor() ? sv.node : l.as_tensor(sv, t, is, a.loc(2));
  if (g[src].dtype != t)
    throw SpecError(a.loc(2), "the values of 'scatter' must have base's dtype " +
                                  std::string(dtype_name(t)) + ", found " + describe(l, src));
  src = l.broadcast_to(src, is, a.loc(2));
  auto m = [&](NodeId v) { return name == "min" ? mirror(l, v) : v; };
  return Value::tensor(m(g.scatter(op, m(base), idx, m(src), axis)));
}

const std::map<std::string, Handler>& table() {
  static const std::map<std::string, Handler> t = [] {
    std::map<std::string, Handler> m;
    for (const char* fn : {"recip", "sqrt", "exp2", "log2", "sin"})
      m[fn] = [fn](Lowerer& l, const Expr& c, Scope& s) {
        Args a(c, {"x"}, 1);
        return l.unary(fn, l.eval(*a.get(0), s), c.loc);
      };
    m["neg"] = [](Lowerer& l, const Expr& c, Scope& s) {
      Args a(c, {"x"}, 1);
      return l.unary("-", l.eval(*a.get(0), s), c.loc);
    };
    m["not"] = [](Lowerer& l, const Expr& c, Scope& s) {
      Args a(c, {"x"}, 1);
      return l.unary("!", l.eval(*a.get(0), s), c.loc);
    };
    m["maximum"] = [](Lowerer& l, const Expr& c, Scope& s) {
      Args a(c, {"a", "b"}, 2);
      auto x = l.unify({l.eval(*a.get(0), s), l.eval(*a.get(1), s)}, c.loc, "'maximum'");
      return Value::tensor(l.graph().binary(Op::max, x[0], x[1]));
    };
    m["where"] = [](Lowerer& l, const Expr& c, Scope& s) {
      Args a(c, {"cond", "a", "b"}, 3);
      Value cond = l.eval(*a.get(0), s);
      auto x = l.unify({l.eval(*a.get(1), s), l.eval(*a.get(2), s)}, c.loc, "'where'");
      NodeId cn = l.unify({cond}, a.loc(0), "the condition of 'where'")[0];
      if (l.graph()[cn].dtype != DType::boolean)
        throw SpecError(a.loc(0), "the condition of 'where' must be bool, found " +
                                      describe(l, cn) + "; compare it, e.g. x > 0");
      auto b = l.broadcast({cn, x[0], x[1]}, c.loc, "'where'");
      return Value::tensor(l.graph().ternary(Op::where, b[0], b[1], b[2]));
    };
    m["mulacc"] = [](Lowerer& l, const Expr& c, Scope& s) {
      Args a(c, {"a", "b", "c"}, 3);
      auto x = l.unify({l.eval(*a.get(0), s), l.eval(*a.get(1), s), l.eval(*a.get(2), s)}, c.loc,
                       "'mulacc'");
      return Value::tensor(l.graph().ternary(Op::mulacc, x[0], x[1], x[2]));
    };
    m["copy"] = [](Lowerer& l, const Expr& c, Scope& s) {
      Args a(c, {"x"}, 1);
      return Value::tensor(l.graph().unary(Op::copy, tensor_arg(l, a, 0, s, "copy")));
    };
    m["sum"] = [](Lowerer& l, const Expr& c, Scope& s) {
      return reduce_builtin(l, c, s, ReduceKind::sum);
    };
    m["max"] = [](Lowerer& l, const Expr& c, Scope& s) {
      return reduce_builtin(l, c, s, ReduceKind::max);
    };
    m["min"] = [](Lowerer& l, const Expr& c, Scope& s) {
      return reduce_builtin(l, c, s, ReduceKind::max, true);
    };
    m["prod"] = [](Lowerer& l, const Expr& c, Scope& s) {
      return reduce_builtin(l, c, s, ReduceKind::prod);
    };
    m["scan"] = scan_builtin;
    m["cast"] = [](Lowerer& l, const Expr& c, Scope& s) { return cast_builtin(l, c, s, false); };
    m["bitcast"] = [](Lowerer& l, const Expr& c, Scope& s) { return cast_builtin(l, c, s, true); };
    for (const char* fn :
         {"reshape", "expand", "permute", "squeeze", "unsqueeze", "slice", "pad", "flip"})
      m[fn] = view_builtin;
    for (const char* fn : {"size", "full", "iota"})
      m[fn] = source_builtin;
    m["take_along"] = take_along_builtin;
    m["scatter"] = scatter_builtin;
    return m;
  }();
  return t;
}

}  // namespace

bool is_builtin(const std::string& name) {
  return table().count(name) > 0;
}

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [k, h] : table())
      v.push_back(k);
    return v;
  }();
  return names;
}

Value Lowerer::call_builtin(const Expr& call, Scope& s) {
  if (space_) {
    static const std::set<std::string> kViews = {
        "reshape", "expand", "permute", "squeeze", "unsqueeze", "slice", "pad", "flip", "iota"};
    if (kViews.count(call.text))
      throw SpecError(call.loc, "'" + call.text +
                                    "' is a tensor-level view; inside index "
                                    "notation it may only be subscripted, e.g. " +
                                    call.text + "(x, ...)[i, j]");
  }
  return table().at(call.text)(*this, call, s);
}

}  // namespace kiln
