#include "simplifier/pattern.h"

#include <cctype>
#include <cmath>
#include <map>

#include "dsl/parser.h"

namespace kiln {

namespace {

/** Binary operators of the body language that are one primitive. */
const std::map<std::string, Op>& binary_ops() {
  static const std::map<std::string, Op> ops = {
      {"+", Op::add},     {"*", Op::mul},    {"//", Op::idiv},   {"%", Op::mod},
      {"&", Op::bit_and}, {"|", Op::bit_or}, {"^", Op::bit_xor}, {"<<", Op::shl},
      {">>", Op::shr},    {"<", Op::cmplt},  {"==", Op::cmpeq},
  };
  return ops;
}

class PatternParser {
 public:
  explicit PatternParser(bool replacement) : replacement_(replacement) {}

  PatternPtr convert(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::number:
      case Expr::Kind::boolean:
        return literal(e, e.number, e.is_integer || e.kind == Expr::Kind::boolean,
                       e.kind == Expr::Kind::boolean);
      case Expr::Kind::name:
        return variable(e);
      case Expr::Kind::unary:
        return unary(e);
      case Expr::Kind::binary:
        return binary(e);
      case Expr::Kind::call:
        return call(e);
      default:
        throw SpecError(e.loc, "'" + expr_str(e) +
                                   "' cannot appear in a rule; expected "
                                   "variables, constants, operators and primitive calls");
    }
  }

 private:
  bool replacement_;

  static PatternPtr make(Pattern p) { return std::make_shared<const Pattern>(std::move(p)); }

  PatternPtr literal(const Expr& e, double value, bool integer, bool boolean) {
    Pattern p;
    p.kind = Pattern::Kind::literal;
    p.value = value;
    p.is_integer = integer;
    p.is_bool = boolean;
    p.loc = e.loc;
    return make(std::move(p));
  }

  PatternPtr variable(const Expr& e) {
    Pattern p;
    p.kind = is_constant_matcher(e.text) ? Pattern::Kind::constant : Pattern::Kind::any;
    p.name = e.text;
    p.loc = e.loc;
    return make(std::move(p));
  }

  PatternPtr op(Op o, std::vector<PatternPtr> args, const SourceLoc& at) {
    Pattern p;
    p.kind = Pattern::Kind::op;
    p.op = o;
    p.args = std::move(args);
    p.loc = at;
    return make(std::move(p));
  }

  PatternPtr unary(const Expr& e) {
    const Expr& x = *e.items[0];
    if (e.text == "-" && x.kind == Expr::Kind::number)
      return literal(e, -x.number, x.is_integer, false);  // -0.0 is negative zero
    if (e.text == "-") return op(Op::neg, {convert(x)}, e.loc);
    if (e.text == "!") return op(Op::logical_not, {convert(x)}, e.loc);
    throw SpecError(e.loc, "operator '" + e.text + "' has no primitive; write the ops instead");
  }

  PatternPtr binary(const Expr& e) {
    PatternPtr a = convert(*e.items[0]), b = convert(*e.items[1]);
    auto it = binary_ops().find(e.text);
    if (it != binary_ops().end()) return op(it->second, {a, b}, e.loc);
    if (e.text == "-") return op(Op::add, {a, op(Op::neg, {b}, e.loc)}, e.loc);
    if (e.text == ">") return op(Op::cmplt, {b, a}, e.loc);
    if (e.text == "/") return op(Op::mul, {a, op(Op::recip, {b}, e.loc)}, e.loc);
    throw SpecError(e.loc, "operator '" + e.text +
                               "' has no single primitive in rules; write "
                               "the primitive ops instead (docs/rules.md)");
  }

  PatternPtr call(const Expr& e) {
    std::vector<PatternPtr> args;
    for (const Arg& a : e.args) {
      if (!a.name.empty())
        throw SpecError(a.loc, "rules take positional operands only, found '" + a.name + "='");
      args.push_back(convert(*a.value));
    }
    if (e.text == "fold") {
      if (!replacement_)
        throw SpecError(e.loc, "fold() belongs in a replacement, not in a pattern");
      if (args.size() != 1) throw SpecError(e.loc, "fold() takes one expression");
      Pattern p;
      p.kind = Pattern::Kind::fold;
      p.args = std::move(args);
      p.loc = e.loc;
      return make(std::move(p));
    }
    std::optional<Op> o = parse_op(e.text);
    if (!o || *o == Op::input || op_info(*o).cls == OpClass::data ||
        op_info(*o).cls == OpClass::reduce || op_info(*o).cls == OpClass::scan ||
        op_info(*o).cls == OpClass::extern_call)
      throw SpecError(e.loc, "'" + e.text +
                                 "' is not an elementwise primitive; rules in files "
                                 "match unary, binary and ternary ops (docs/primitives.md), and "
                                 "fold() in replacements");
    if (static_cast<int>(args.size()) != op_info(*o).arity)
      throw SpecError(e.loc, "'" + e.text + "' takes " + std::to_string(op_info(*o).arity) +
                                 " operands, found " + std::to_string(args.size()));
    return op(*o, std::move(args), e.loc);
  }
};

std::string number_text(double v, bool integer) {
  if (integer) return std::to_string(static_cast<int64_t>(v));
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

PatternPtr parse_pattern(const SourceText& text, bool replacement) {
  ExprPtr e = parse_expression(text);
  return PatternParser(replacement).convert(*e);
}

std::string pattern_str(const Pattern& p) {
  switch (p.kind) {
    case Pattern::Kind::any:
    case Pattern::Kind::constant:
      return p.name;
    case Pattern::Kind::literal:
      return p.is_bool ? (p.value != 0 ? "true" : "false") : number_text(p.value, p.is_integer);
    case Pattern::Kind::op:
    case Pattern::Kind::fold: {
      std::string s = p.kind == Pattern::Kind::fold ? "fold" : std::string(op_name(p.op));
      s += "(";
      for (size_t k = 0; k < p.args.size(); ++k)
        s += (k ? ", " : "") + pattern_str(*p.args[k]);
      return s + ")";
    }
  }
  return "";
}

void pattern_variables(const Pattern& p, std::set<std::string>& out) {
  if (p.kind == Pattern::Kind::any || p.kind == Pattern::Kind::constant) out.insert(p.name);
  for (const PatternPtr& a : p.args)
    pattern_variables(*a, out);
}

bool is_constant_matcher(const std::string& name) {
  if (name.size() < 2 || name[0] != 'c') return false;
  for (size_t k = 1; k < name.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(name[k]))) return false;
  return true;
}

bool is_commutative(Op op) {
  switch (op) {
    case Op::add:
    case Op::mul:
    case Op::max:
    case Op::bit_and:
    case Op::bit_or:
    case Op::bit_xor:
    case Op::cmpeq:
      return true;
    default:
      return false;
  }
}

}  // namespace kiln
