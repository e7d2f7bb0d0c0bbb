#include "simplifier/match.h"

#include <cmath>
#include <set>
#include <stdexcept>

#include "ir/interpreter.h"

namespace kiln {

namespace {

bool same_number(const Node& n, const Pattern& p) {
  if (!is_float(n.dtype))
    return !std::isnan(p.value) && int_to_double(n.dtype, n.int_value) == p.value;
  return n.value == p.value && std::signbit(n.value) == std::signbit(p.value);
}

bool bind(const std::string& name, NodeId id, Bindings& b) {
  auto [it, added] = b.emplace(name, id);
  return added || it->second == id;
}

bool match_args(const Pattern& p, const std::vector<NodeId>& operands, const Graph& g, Bindings& b);

bool match_node(const Pattern& p, NodeId id, const Graph& g, Bindings& b) {
  const Node& n = g[id];
  switch (p.kind) {
    case Pattern::Kind::any:
      return bind(p.name, id, b);
    case Pattern::Kind::constant:
      return is_plain_constant(n) && bind(p.name, id, b);
    case Pattern::Kind::literal:
      return is_plain_constant(n) && same_number(n, p);
    case Pattern::Kind::op:
      return n.op == p.op && match_args(p, n.operands, g, b);
    case Pattern::Kind::fold:
      return false;
  }
  return false;
}

bool match_args(const Pattern& p, const std::vector<NodeId>& operands, const Graph& g,
                Bindings& b) {
  if (operands.size() != p.args.size()) return false;
  auto in_order = [&](size_t first, Bindings& out) {
    for (size_t k = 0; k < operands.size(); ++k) {
      size_t arg = k < 2 && first == 1 ? 1 - k : k;
      if (!match_node(*p.args[arg], operands[k], g, out)) return false;
    }
    return true;
  };
  Bindings tried = b;
  if (in_order(0, tried)) {
    b = std::move(tried);
    return true;
  }
  if (!is_commutative(p.op)) return false;
  tried = b;
  if (!in_order(1, tried)) return false;
  b = std::move(tried);
  return true;
}

// --- guards -------------------------------------------------------------------------------

struct GuardValue {
  bool is_bool = false;
  double number = 0;
};

struct GuardFn {
  int arity;
  bool (*check)(const std::vector<const Node*>&);
};

const std::map<std::string, GuardFn>& predicates() {
  using Args = const std::vector<const Node*>&;
  static const std::map<std::string, GuardFn> table = {
      {"is_float", {1, [](Args a) { return is_float(a[0]->dtype); }}},
      {"is_int", {1, [](Args a) { return is_int(a[0]->dtype); }}},
      {"is_signed", {1, [](Args a) { return is_signed_int(a[0]->dtype); }}},
      {"is_unsigned", {1, [](Args a) { return is_unsigned_int(a[0]->dtype); }}},
      {"is_bool", {1, [](Args a) { return a[0]->dtype == DType::boolean; }}},
      {"is_f32", {1, [](Args a) { return a[0]->dtype == DType::f32; }}},
      {"is_f64", {1, [](Args a) { return a[0]->dtype == DType::f64; }}},
      {"same_shape", {2, [](Args a) { return same_shape(a[0]->shape, a[1]->shape); }}},
      {"is_pow2",
       {1,
        [](Args a) {
          return is_plain_constant(*a[0]) && !is_float(a[0]->dtype) && a[0]->int_value > 0 &&
                 (a[0]->int_value & (a[0]->int_value - 1)) == 0;
        }}},
  };
  return table;
}

class GuardEval {
 public:
  GuardEval(const Bindings& b, const Graph& g, const SimplifyOptions& opt)
      : b_(b), g_(g), opt_(opt) {}

  GuardValue eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::number:
        return {false, e.number};
      case Expr::Kind::boolean:
        return {true, e.number};
      case Expr::Kind::name:
        return name(e);
      case Expr::Kind::unary:
        return unary(e);
      case Expr::Kind::binary:
        return binary(e);
      case Expr::Kind::call:
        return call(e);
      default:
        throw SpecError(e.loc, "'" + expr_str(e) + "' cannot appear in a guard");
    }
  }

  /** A guard read an integer constant past 2^53, which its double arithmetic would round. */
  bool inexact() const { return inexact_; }

 private:
  const Bindings& b_;
  const Graph& g_;
  const SimplifyOptions& opt_;
  bool inexact_ = false;

  const Node& bound(const Expr& e) {
    auto it = b_.find(e.text);
    if (it == b_.end()) throw SpecError(e.loc, "'" + e.text + "' is not a pattern variable");
    return g_[it->second];
  }

  GuardValue name(const Expr& e) {
    const Node& n = bound(e);
    if (!is_plain_constant(n))
      throw SpecError(e.loc, "'" + e.text +
                                 "' is used as a number but matches any node; "
                                 "use a constant matcher (c0, c1...)");
    double v = is_float(n.dtype) ? n.value : int_to_double(n.dtype, n.int_value);
    if (!is_float(n.dtype) && std::fabs(v) > 0x1.0p53) inexact_ = true;
    return {n.dtype == DType::boolean, v};
  }

  GuardValue unary(const Expr& e) {
    GuardValue x = eval(*e.items[0]);
    if (e.text == "!") return {true, x.number == 0 ? 1.0 : 0.0};
    if (e.text == "-") return {false, -x.number};
    throw SpecError(e.loc, "operator '" + e.text + "' cannot appear in a guard");
  }

  GuardValue binary(const Expr& e) {
    GuardValue a = eval(*e.items[0]), b = eval(*e.items[1]);
    const std::string& op = e.text;
    double x = a.number, y = b.number;
    if (op == "&") return {true, (x != 0 && y != 0) ? 1.0 : 0.0};
    if (op == "|") return {true, (x != 0 || y != 0) ? 1.0 : 0.0};
    if (op == "<") return {true, x < y ? 1.0 : 0.0};
    if (op == "<=") return {true, x <= y ? 1.0 : 0.0};
    if (op == ">") return {true, x > y ? 1.0 : 0.0};
    if (op == ">=") return {true, x >= y ? 1.0 : 0.0};
    if (op == "==") return {true, x == y ? 1.0 : 0.0};
    if (op == "!=") return {true, x != y ? 1.0 : 0.0};
    if (op == "+") return {false, x + y};
    if (op == "-") return {false, x - y};
    if (op == "*") return {false, x * y};
    if (op == "**") return {false, std::pow(x, y)};
    if (op == "%") return {false, y == 0 ? std::nan("") : std::fmod(x, y)};
    throw SpecError(e.loc, "operator '" + op + "' cannot appear in a guard");
  }

  GuardValue call(const Expr& e) {
    if (e.text == "fastmath") return {true, opt_.fastmath ? 1.0 : 0.0};
    if (e.text == "bits") {
      if (e.args.size() != 1 || e.args[0].value->kind != Expr::Kind::name)
        throw SpecError(e.loc, "bits() takes one pattern variable");
      return {false, double(dtype_bits(bound(*e.args[0].value).dtype))};
    }
    if (e.text == "abs") {
      if (e.args.size() != 1) throw SpecError(e.loc, "abs() takes one argument");
      return {false, std::fabs(eval(*e.args[0].value).number)};
    }
    auto it = predicates().find(e.text);
    if (it == predicates().end())
      throw SpecError(e.loc, "unknown guard function '" + e.text + "'; docs/rules.md lists them");
    if (static_cast<int>(e.args.size()) != it->second.arity)
      throw SpecError(
          e.loc, "'" + e.text + "' takes " + std::to_string(it->second.arity) + " argument(s)");
    std::vector<const Node*> args;
    for (const Arg& a : e.args) {
      if (a.value->kind != Expr::Kind::name)
        throw SpecError(a.loc, "'" + e.text + "' takes pattern variables");
      args.push_back(&bound(*a.value));
    }
    return {true, it->second.check(args) ? 1.0 : 0.0};
  }
};

void check_guard_expr(const Expr& e, const std::set<std::string>& names) {
  if (e.kind == Expr::Kind::name && !names.count(e.text))
    throw SpecError(e.loc, "'" + e.text + "' is not a variable of the pattern");
  if (e.kind == Expr::Kind::call && e.text != "fastmath" && e.text != "abs" && e.text != "bits" &&
      !predicates().count(e.text))
    throw SpecError(e.loc, "unknown guard function '" + e.text + "'; docs/rules.md lists them");
  if (e.kind == Expr::Kind::subscript || e.kind == Expr::Kind::list ||
      e.kind == Expr::Kind::string || e.kind == Expr::Kind::ellipsis)
    throw SpecError(e.loc, "'" + expr_str(e) + "' cannot appear in a guard");
  for (const ExprPtr& i : e.items)
    check_guard_expr(*i, names);
  for (const Arg& a : e.args)
    check_guard_expr(*a.value, names);
}

// --- replacements -------------------------------------------------------------------------

DType result_dtype(Op op, const std::vector<NodeId>& args, const Graph& g) {
  if (op == Op::cmplt || op == Op::cmpeq) return DType::boolean;
  if (op == Op::where) return g[args[1]].dtype;
  return g[args[0]].dtype;
}

/** A scalar graph computing pattern `p` on the bound constants; its root, or -1. */
NodeId fold_graph(const Pattern& p, const Bindings& b, const Graph& src, DType hint, Graph& g) {
  switch (p.kind) {
    case Pattern::Kind::any:
    case Pattern::Kind::constant: {
      Node n = src[b.at(p.name)];
      if (!is_plain_constant(n)) return -1;
      n.shape = {};
      return g.add(n);
    }
    case Pattern::Kind::literal:
      return g.add(constant_node(hint, {}, p.value));
    case Pattern::Kind::fold:
      return fold_graph(*p.args[0], b, src, hint, g);
    case Pattern::Kind::op: {
      std::vector<NodeId> args;
      for (const PatternPtr& a : p.args)
        if (a->kind != Pattern::Kind::literal) {
          DType t = hint;
          NodeId id = fold_graph(*a, b, src, t, g);
          if (id < 0) return -1;
          args.push_back(id);
        } else {
          args.push_back(-2);
        }
      DType sibling = hint;
      for (NodeId id : args)
        if (id >= 0) sibling = g[id].dtype;
      for (size_t k = 0; k < args.size(); ++k)
        if (args[k] == -2)
          args[k] = g.add(constant_node(p.op == Op::where && k == 0 ? DType::boolean : sibling, {},
                                        p.args[k]->value));
      Node n;
      n.op = p.op;
      n.operands = args;
      n.dtype = result_dtype(p.op, args, g);
      return g.add(n);
    }
  }
  return -1;
}

/** Evaluates the scalar graph `g` whose root is `root` and gives its value as a constant of
 *  dtype `t` and shape `shape`; nothing when evaluation fails (an integer division by zero). */
std::optional<Node> evaluate_constant(Graph& g, NodeId root, DType t, const Shape& shape) {
  g.outputs = {{"y", root}};
  try {
    Tensor v = interpret(g, {}, {})[0];
    Graph out;
    NodeId c = is_float(t)
                   ? out.constant(t, shape, v.at(0))
                   : out.constant_int(t, shape, is_float(v.dtype) ? int64_t(v.at(0)) : v.i[0]);
    return out[c];
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

class Instantiator {
 public:
  Instantiator(const Bindings& b, const Node& root, Rewriter& rw) : b_(b), root_(root), rw_(rw) {}

  /** The node for `p` at the root position. */
  std::optional<Rewrite> at_root(const Pattern& p) {
    if (p.kind == Pattern::Kind::any || p.kind == Pattern::Kind::constant)
      return Rewrite{b_.at(p.name), {}};
    std::optional<Node> n = node(p, root_.dtype);
    if (!n) return std::nullopt;
    return Rewrite{std::nullopt, *n};
  }

 private:
  const Bindings& b_;
  const Node& root_;
  Rewriter& rw_;

  std::optional<NodeId> id(const Pattern& p, DType hint) {
    if (p.kind == Pattern::Kind::any || p.kind == Pattern::Kind::constant) return b_.at(p.name);
    std::optional<Node> n = node(p, hint);
    if (!n) return std::nullopt;
    return rw_.emit(*n);
  }

  std::optional<Node> node(const Pattern& p, DType hint) {
    if (p.kind == Pattern::Kind::literal) return constant_node(hint, root_.shape, p.value);
    if (p.kind == Pattern::Kind::fold) return fold(p, hint);
    std::vector<std::optional<NodeId>> args(p.args.size());
    std::optional<DType> sibling;
    for (size_t k = 0; k < p.args.size(); ++k) {
      Pattern::Kind kind = p.args[k]->kind;
      if (kind == Pattern::Kind::literal || kind == Pattern::Kind::fold) continue;
      args[k] = id(*p.args[k], operand_hint(p.op, k, hint));
      if (!args[k]) return std::nullopt;
      if (!(p.op == Op::where && k == 0)) sibling = rw_.graph()[*args[k]].dtype;
    }
    for (size_t k = 0; k < p.args.size(); ++k) {
      if (args[k]) continue;
      DType t = p.op == Op::where && k == 0 ? DType::boolean : sibling.value_or(hint);
      args[k] = id(*p.args[k], t);
      if (!args[k]) return std::nullopt;
    }
    Node n;
    n.op = p.op;
    for (const auto& a : args)
      n.operands.push_back(*a);
    n.dtype = result_dtype(p.op, n.operands, rw_.graph());
    n.shape = root_.shape;
    return n;
  }

  static DType operand_hint(Op op, size_t k, DType result) {
    if (op == Op::where && k == 0) return DType::boolean;
    return result;
  }

  std::optional<Node> fold(const Pattern& p, DType hint) {
    Graph g;
    NodeId root = fold_graph(*p.args[0], b_, rw_.graph(), hint, g);
    if (root < 0) return std::nullopt;
    return evaluate_constant(g, root, hint, root_.shape);  // nothing: the rule declines
  }
};

}  // namespace

bool is_plain_constant(const Node& n) {
  return n.op == Op::constant && !n.symbolic;
}

bool match_root(const Pattern& p, const Node& root, const Graph& g, Bindings& b) {
  return p.kind == Pattern::Kind::op && root.op == p.op && match_args(p, root.operands, g, b);
}

bool guard_holds(const Expr& guard, const Bindings& b, const Graph& g, const SimplifyOptions& opt) {
  GuardEval e(b, g, opt);
  bool holds = e.eval(guard).number != 0;
  return holds && !e.inexact();  // an integer past 2^53 in a guard: the rule declines
}

void check_guard(const Expr& guard, const Pattern& pattern) {
  std::set<std::string> names;
  pattern_variables(pattern, names);
  check_guard_expr(guard, names);
}

std::optional<Rewrite> instantiate(const Pattern& replacement, const Bindings& b, const Node& root,
                                   Rewriter& rw) {
  return Instantiator(b, root, rw).at_root(replacement);
}

Node constant_node(DType t, const Shape& shape, double value) {
  Graph g;
  return g[g.constant(t, shape, value)];
}

std::optional<Node> fold_op(Op op, DType result, const Shape& shape,
                            const std::vector<const Node*>& operands) {
  Graph g;
  std::vector<NodeId> args;
  for (const Node* n : operands) {
    if (!is_plain_constant(*n)) return std::nullopt;
    Node c = *n;
    c.shape = {};
    args.push_back(g.add(c));
  }
  Node n;
  n.op = op;
  n.dtype = result;
  n.operands = args;
  return evaluate_constant(g, g.add(n), result, shape);
}

}  // namespace kiln
