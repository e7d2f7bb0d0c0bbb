// Operators of the body language: weak scalar typing, broadcasting, and the lowering of each
// operator to primitive ops (docs/spec-language.md, "Operators").
#include <cmath>

#include "dsl/lowering.h"

namespace kiln {

bool has_index_vars(const IntExpr& e) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  for (const std::string& v : vars)
    if (v[0] == '%') return true;
  return false;
}

namespace {

bool is_arith(const std::string& op) {
  return op == "+" || op == "-" || op == "*" || op == "/" || op == "//" || op == "%";
}

std::string tensor_text(const Graph& g, NodeId n) {
  return std::string(dtype_name(g[n].dtype)) + shape_str(g[n].shape);
}

/** The error for compile-time arithmetic on an integer literal past int64. */
SpecError wide_literal_error(const Value& v, const SourceLoc& at) {
  return SpecError(at, "the integer literal " +
                           int_to_string(DType::u64, *v.integer.as_constant()) +
                           " (past 2^63 - 1) can only be used with a tensor, as a u64 value or "
                           "wrapped to another integer type; compile-time arithmetic on it is "
                           "not supported");
}

/** Compile-time arithmetic on two scalars; nullopt when it must be done on tensors. */
std::optional<Value> fold_scalars(const std::string& op, const Value& a, const Value& b,
                                  const SourceLoc& at) {
  using K = Value::Kind;
  for (const Value* v : {&a, &b})
    if (v->kind == K::wide) throw wide_literal_error(*v, at);
  if (a.kind == K::integer && b.kind == K::integer && is_arith(op)) {
    if ((op == "/" || op == "//" || op == "%") && b.integer == IntExpr(0))
      throw SpecError(at, "division by zero in a compile-time expression");
    if (op == "+") return Value::of_int(a.integer + b.integer);
    if (op == "-") return Value::of_int(a.integer - b.integer);
    if (op == "*") return Value::of_int(a.integer * b.integer);
    if (op == "%") return Value::of_int(mod(a.integer, b.integer));
    return Value::of_int(floordiv(a.integer, b.integer));
  }
  auto ca = a.kind == K::integer ? a.integer.as_constant() : std::optional<int64_t>{};
  auto cb = b.kind == K::integer ? b.integer.as_constant() : std::optional<int64_t>{};
  if ((a.kind == K::integer && !ca) || (b.kind == K::integer && !cb)) {
    if (a.kind == K::number || b.kind == K::number)
      throw SpecError(at,
                      "cannot mix an index or size with a float number at compile time; "
                      "convert it first, e.g. cast(i, T)");
    return std::nullopt;
  }
  double x = ca ? static_cast<double>(*ca) : a.number;
  double y = cb ? static_cast<double>(*cb) : b.number;
  if (op == "+") return Value::of_number(x + y);
  if (op == "-") return Value::of_number(x - y);
  if (op == "*") return Value::of_number(x * y);
  if (op == "/") return Value::of_number(x / y);
  if (op == "%") return Value::of_number(std::fmod(x, y));
  if (op == "<") return Value::of_bool(x < y);
  if (op == ">") return Value::of_bool(x > y);
  if (op == "<=") return Value::of_bool(x <= y);
  if (op == ">=") return Value::of_bool(x >= y);
  if (op == "==") return Value::of_bool(x == y);
  if (op == "!=") return Value::of_bool(x != y);
  if (op == "**") return Value::of_number(std::pow(x, y));
  if (a.kind == K::boolean && b.kind == K::boolean) {
    if (op == "&") return Value::of_bool(x != 0 && y != 0);
    if (op == "|") return Value::of_bool(x != 0 || y != 0);
    if (op == "^") return Value::of_bool((x != 0) != (y != 0));
  }
  throw SpecError(at, "operator '" + op + "' is not defined on compile-time numbers here");
}

}  // namespace

NodeId Lowerer::as_tensor(const Value& v, DType t, const Shape& shape, const SourceLoc& at) {
  switch (v.kind) {
    case Value::Kind::tensor:
      return v.node;
    case Value::Kind::number:
      if (!is_float(t))
        throw SpecError(at, "dtype mismatch: the float number " + number_text(v.number) +
                                " cannot become " + std::string(dtype_name(t)) +
                                "; expected an integer literal, or cast the tensor to a float");
      return g_.constant(t, shape, v.number);
    case Value::Kind::wide:
      if (t == DType::boolean)
        throw SpecError(at, "dtype mismatch: an integer cannot become bool; compare it instead");
      return is_float(t) ? g_.constant(t, shape, v.number)
                         : g_.constant_int(t, shape, *v.integer.as_constant());
    case Value::Kind::boolean:
      if (t != DType::boolean)
        throw SpecError(at, "dtype mismatch: a bool cannot become " + std::string(dtype_name(t)));
      return g_.constant_int(t, shape, v.number != 0);
    case Value::Kind::integer: {
      if (t == DType::boolean)
        throw SpecError(at, "dtype mismatch: an integer cannot become bool; compare it instead");
      if (!has_index_vars(v.integer)) return g_.constant_size(t, shape, v.integer);
      // an affine expression of index variables: a sum of index nodes times coefficients
      NodeId sum = -1;
      for (const IntExpr::Term& term : v.integer.terms()) {
        NodeId prod = term.coeff == 1 ? -1 : g_.constant_int(t, shape, term.coeff);
        for (const auto& f : term.factors) {
          IntExpr atom = IntExpr::var(f->name);
          if (f->kind != IntAtom::Kind::var)
            throw SpecError(at,
                            "an index inside '/' or '%' cannot be used as a value; compute "
                            "it on tensors instead");
          NodeId x = f->name[0] == '%' ? g_.index(t, shape, std::stoi(f->name.substr(1)))
                                       : g_.constant_size(t, shape, atom);
          prod = prod < 0 ? x : g_.binary(Op::mul, prod, x);
        }
        if (prod < 0) prod = g_.constant_int(t, shape, term.coeff);
        sum = sum < 0 ? prod : g_.binary(Op::add, sum, prod);
      }
      return sum < 0 ? g_.constant_int(t, shape, 0) : sum;
    }
    default:
      throw SpecError(at, "expected a tensor or a number, found " + v.describe(g_));
  }
}

NodeId Lowerer::require_tensor(const Value& v, const SourceLoc& at, const std::string& what) {
  if (v.is_tensor()) return v.node;
  throw SpecError(at, what + " needs a tensor, found " + v.describe(g_));
}

NodeId Lowerer::broadcast_to(NodeId x, const Shape& shape, const SourceLoc& at) {
  Shape src = g_[x].shape;
  if (same_shape(src, shape)) return x;
  if (src.size() < shape.size()) {
    Shape padded(shape.size() - src.size(), IntExpr(1));
    padded.insert(padded.end(), src.begin(), src.end());
    x = g_.view(x, views::reshape(src, padded));
    src = padded;
  }
  return g_.view(x, views::expand(src, shape));
}

std::vector<NodeId> Lowerer::broadcast(const std::vector<NodeId>& xs, const SourceLoc& at,
                                       const std::string& what) {
  size_t rank = 0;
  for (NodeId x : xs)
    rank = std::max(rank, g_[x].shape.size());
  Shape out(rank, IntExpr(1));
  for (NodeId x : xs) {
    const Shape& s = g_[x].shape;
    for (size_t k = 0; k < s.size(); ++k) {
      IntExpr& o = out[rank - s.size() + k];
      if (s[k] == o || s[k] == IntExpr(1)) continue;
      if (o == IntExpr(1)) {
        o = s[k];
        continue;
      }
      if (same_size(o, s[k], at,
                    "dimension " + std::to_string(k) + " of " + tensor_text(g_, x) +
                        " broadcast in " + what))
        continue;
      std::string shapes;
      for (NodeId y : xs)
        shapes += (shapes.empty() ? "" : " with ") + tensor_text(g_, y);
      throw SpecError(at, "shape mismatch in " + what + ": cannot broadcast " + shapes);
    }
  }
  std::vector<NodeId> res;
  for (NodeId x : xs)
    res.push_back(broadcast_to(x, out, at));
  return res;
}

std::vector<NodeId> Lowerer::unify(const std::vector<Value>& vs, const SourceLoc& at,
                                   const std::string& what) {
  std::optional<DType> t;
  const Value* first = nullptr;
  for (const Value& v : vs) {
    if (!v.is_tensor()) continue;
    DType d = g_[v.node].dtype;
    if (t && *t != d)
      throw SpecError(at, "dtype mismatch in " + what + ": " + first->describe(g_) + " and " +
                              v.describe(g_) + "; convert one with cast()");
    t = d;
    first = &v;
  }
  if (!t) t = DType::i64;  // only indices and sizes: compute in i64
  std::vector<NodeId> xs;
  for (const Value& v : vs)
    xs.push_back(as_tensor(v, *t, scalar_shape(v), at));
  return broadcast(xs, at, what);
}

Shape Lowerer::scalar_shape(const Value& v) const {
  Shape shape = space_ ? Shape(space_->names.size(), IntExpr(1)) : Shape{};
  if (v.kind != Value::Kind::integer || !space_) return shape;
  std::set<std::string> vars;
  v.integer.collect_vars(vars);
  for (const std::string& n : vars)
    if (n[0] == '%') {
      int axis = std::stoi(n.substr(1));
      shape[axis] = space_->ranges[axis];
    }
  return shape;
}

Value Lowerer::binary(const std::string& op, const Value& a, const Value& b, const SourceLoc& at) {
  if (a.is_scalar() && b.is_scalar())
    if (auto v = fold_scalars(op, a, b, at)) return *v;
  if (op == "**") {
    auto e = b.kind == Value::Kind::integer ? b.integer.as_constant() : std::nullopt;
    double y = e ? static_cast<double>(*e) : b.number;
    if (b.is_tensor()) return power(a, b, at);
    if (b.kind != Value::Kind::number && !e)
      throw SpecError(at, "'**' needs a constant or a tensor exponent, found " + b.describe(g_));
    if (y == 0.5) return unary("sqrt", a, at);
    if (y == -1) return unary("recip", a, at);
    if (y != std::floor(y) || y < 1 || y > 16)
      throw SpecError(at, "'**' supports the exponents 0.5, -1 and integers 1..16; use pow(x, y)");
    Value r = a;
    for (int k = 1; k < static_cast<int>(y); ++k)
      r = binary("*", r, a, at);
    return r;
  }
  for (const Value* v : {&a, &b})
    if (!v->is_tensor() && !v->is_scalar())
      throw SpecError(at,
                      "operator '" + op + "' needs tensors or numbers, found " + v->describe(g_));
  std::vector<NodeId> x = unify({a, b}, at, "'" + op + "'");
  DType t = g_[x[0]].dtype;
  auto need = [&](bool ok, const char* what) {
    if (!ok)
      throw SpecError(
          at, "operator '" + op + "' needs " + what + " operands, found " + tensor_text(g_, x[0]));
  };
  auto cmp = [&](Op o, NodeId l, NodeId r) { return g_.binary(o, l, r); };
  NodeId r;
  if (op == "+" || op == "-" || op == "*") {
    need(t != DType::boolean, "numeric");
    r = op == "+"   ? g_.binary(Op::add, x[0], x[1])
        : op == "*" ? g_.binary(Op::mul, x[0], x[1])
                    : g_.binary(Op::add, x[0], g_.unary(Op::neg, x[1]));
  } else if (op == "/") {
    need(t != DType::boolean, "numeric");
    r = is_float(t) ? g_.binary(Op::mul, x[0], g_.unary(Op::recip, x[1]))
                    : g_.binary(Op::idiv, x[0], x[1]);
  } else if (op == "//" || op == "%") {
    need(is_int(t) || (op == "%" && is_float(t)), "integer");
    r = g_.binary(op == "%" ? Op::mod : Op::idiv, x[0], x[1]);
  } else if (op == "<") {
    r = cmp(Op::cmplt, x[0], x[1]);
  } else if (op == ">") {
    r = cmp(Op::cmplt, x[1], x[0]);
  } else if (op == "<=" || op == ">=") {
    NodeId lt = op == "<=" ? cmp(Op::cmplt, x[0], x[1]) : cmp(Op::cmplt, x[1], x[0]);
    r = g_.binary(Op::bit_or, lt, cmp(Op::cmpeq, x[0], x[1]));
  } else if (op == "==") {
    r = cmp(Op::cmpeq, x[0], x[1]);
  } else if (op == "!=") {
    r = g_.unary(Op::logical_not, cmp(Op::cmpeq, x[0], x[1]));
  } else if (op == "&" || op == "|" || op == "^") {
    need(!is_float(t), "integer or bool");
    r = g_.binary(op == "&" ? Op::bit_and : op == "|" ? Op::bit_or : Op::bit_xor, x[0], x[1]);
  } else if (op == "<<" || op == ">>") {
    need(is_int(t), "integer");
    r = g_.binary(op == "<<" ? Op::shl : Op::shr, x[0], x[1]);
  } else {
    throw SpecError(at, "unknown operator '" + op + "'");
  }
  return Value::tensor(r);
}

Value Lowerer::power(const Value& a, const Value& b, const SourceLoc& at) {
  std::vector<NodeId> x = unify({a, b}, at, "'**'");
  const DType t = g_[x[0]].dtype;
  if (is_float(t))
    return Value::tensor(g_.unary(Op::exp2, g_.binary(Op::mul, x[1], g_.unary(Op::log2, x[0]))));
  if (!is_int(t))
    throw SpecError(at, "operator '**' needs numeric operands, found " + tensor_text(g_, x[0]));
  const Shape shape = g_[x[0]].shape;
  auto k = [&](int64_t v) { return g_.constant_int(t, shape, v); };
  auto is = [&](NodeId l, int64_t v) { return g_.binary(Op::cmpeq, l, k(v)); };
  auto pick = [&](NodeId cond, NodeId then, NodeId other) {
    return g_.ternary(Op::where, cond, then, other);
  };
  // result *= base where bit i of the exponent is set; base squares: a^(2^i). Every bit of a
  // non-negative exponent counts, because the products wrap.
  const NodeId e = x[1];
  NodeId base = x[0], result = k(1);
  const int bits = dtype_bits(t) - (is_signed_int(t) ? 1 : 0);
  for (int i = 0; i < bits; ++i) {
    NodeId bit = g_.binary(Op::bit_and, g_.binary(Op::shr, e, k(i)), k(1));
    result = pick(is(bit, 1), g_.binary(Op::mul, result, base), result);
    if (i + 1 < bits) base = g_.binary(Op::mul, base, base);
  }
  if (!is_signed_int(t)) return Value::tensor(result);
  // A negative exponent: 1 / a^-b in integers, 0 unless a is 1, or -1 (then the sign of b's
  // parity).
  NodeId odd = is(g_.binary(Op::bit_and, e, k(1)), 1);
  NodeId inverse = pick(is(x[0], 1), k(1), pick(is(x[0], -1), pick(odd, k(-1), k(1)), k(0)));
  return Value::tensor(pick(g_.binary(Op::cmplt, e, k(0)), inverse, result));
}

Value Lowerer::unary(const std::string& op, const Value& a, const SourceLoc& at) {
  using K = Value::Kind;
  if (a.kind == K::wide) throw wide_literal_error(a, at);
  if (op == "-" && a.kind == K::integer) return Value::of_int(-a.integer);
  if (op == "-" && a.kind == K::number) return Value::of_number(-a.number);
  if ((op == "!" || op == "~") && a.kind == K::boolean) return Value::of_bool(a.number == 0);
  NodeId x = a.is_tensor() ? a.node : unify({a}, at, "'" + op + "'")[0];
  DType t = g_[x].dtype;
  if (op == "-") {
    if (t == DType::boolean) throw SpecError(at, "cannot negate a bool tensor; use ! or ~");
    return Value::tensor(g_.unary(Op::neg, x));
  }
  if (op == "!" || op == "~") {
    if (is_float(t))
      throw SpecError(at,
                      "'" + op + "' needs an integer or bool operand, found " + tensor_text(g_, x));
    return Value::tensor(g_.unary(Op::logical_not, x));
  }
  // primitive unary ops called by name from builtins.cpp
  static const std::map<std::string, Op> kFloatOps = {{"recip", Op::recip},
                                                      {"sqrt", Op::sqrt},
                                                      {"exp2", Op::exp2},
                                                      {"log2", Op::log2},
                                                      {"sin", Op::sin}};
  auto it = kFloatOps.find(op);
  if (it == kFloatOps.end()) throw SpecError(at, "unknown unary operator '" + op + "'");
  if (!is_float(t))
    throw SpecError(at, "'" + op + "' needs a float operand, found " + tensor_text(g_, x) +
                            "; convert it with cast()");
  return Value::tensor(g_.unary(it->second, x));
}

}  // namespace kiln
