#include "ir/graph_spec.h"

#include <algorithm>
#include <set>

namespace kiln {

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string expr_text(const IntExpr& e, const std::vector<std::string>& vars);

/** IntExpr's floor division or modulus of `a` by `b` (a positive size in a view) from the body's
 *  truncating `//` and `%`: m = ((a % b) + b) % b, and (a - m) // b, where `a` has an index. */
std::string floor_text(const IntAtom& atom, const std::vector<std::string>& vars) {
  auto operand = [&](const IntExpr& e) {  // `a % b * c` would read as `(a % b) * c`
    std::string t = expr_text(e, vars);
    return t.find(' ') == std::string::npos ? t : "(" + t + ")";
  };
  std::string a = operand(atom.a), b = operand(atom.b);
  std::set<std::string> used;
  atom.a.collect_vars(used);
  bool sizes_only = std::none_of(used.begin(), used.end(),
                                 [](const std::string& v) { return v.starts_with("%"); });
  if (sizes_only)  // sizes are never negative: the truncating forms agree
    return "(" + a + (atom.kind == IntAtom::Kind::mod ? " % " : " // ") + b + ")";
  std::string m = "((" + a + " % " + b + " + " + b + ") % " + b + ")";
  return atom.kind == IntAtom::Kind::mod ? m : "((" + a + " - " + m + ") // " + b + ")";
}

/** `e` in body syntax, index variable %k spelled `vars[k]`. */
std::string expr_text(const IntExpr& e, const std::vector<std::string>& vars) {
  std::string out;
  for (const IntExpr::Term& t : e.terms()) {
    std::string term;
    for (const auto& atom : t.factors) {
      std::string f;
      if (atom->kind == IntAtom::Kind::var)
        f = atom->name.starts_with("%") ? vars.at(std::stoi(atom->name.substr(1))) : atom->name;
      else
        f = floor_text(*atom, vars);
      term += (term.empty() ? "" : " * ") + f;
    }
    int64_t c = t.coeff < 0 ? -t.coeff : t.coeff;
    if (term.empty())
      term = std::to_string(c);
    else if (c != 1)
      term = std::to_string(c) + " * " + term;
    out += out.empty() ? (t.coeff < 0 ? "-" : "") + term : (t.coeff < 0 ? " - " : " + ") + term;
  }
  if (out.empty()) return "0";
  return e.terms().size() == 1 && e.terms()[0].coeff > 0 ? out : "(" + out + ")";
}

std::string dims_text(const Shape& s) {
  std::vector<std::string> parts;
  for (const IntExpr& d : s)
    parts.push_back(d.str());
  return "[" + join(parts) + "]";
}

std::string type_text(const Node& n) {
  return (n.constant_input ? "const " : "") + std::string(dtype_name(n.dtype)) + dims_text(n.shape);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s)
    out += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return out + "\"";
}

class Printer {
 public:
  explicit Printer(const Graph& g) : g_(g), name_(g.size()) {
    for (const std::string& v : g.size_vars)
      taken_.insert(v);
    for (NodeId id : g.inputs)
      taken_.insert(name_[id] = g[id].name);
    for (const GraphOutput& o : g.outputs)
      taken_.insert(o.name);
  }

  std::string body() {
    std::string out;
    for (NodeId id = 0; id < NodeId(g_.size()); ++id)
      if (g_[id].op != Op::input) out += statement(id) + "\n";
    for (const GraphOutput& o : g_.outputs)
      out += o.name + " = " + name_[o.node] + "\n";
    return out;
  }

 private:
  std::string fresh(const std::string& base) {
    std::string s = base;
    while (taken_.count(s))
      s += "_";
    taken_.insert(s);
    return s;
  }
  /** Index names for a tensor of rank `rank`: `prefix0`, `prefix1`, ... */
  std::vector<std::string> indices(size_t rank, const std::string& prefix) {
    std::vector<std::string> out;
    for (size_t k = 0; k < rank; ++k) {
      std::string s = prefix + std::to_string(k);
      while (taken_.count(s))
        s += "_";
      out.push_back(s);
    }
    return out;
  }
  /** `name[i0 < D0, ...]`: a left side whose indices take their ranges from the shape. */
  std::string left(const std::string& name, const std::vector<std::string>& idx, const Shape& s) {
    std::vector<std::string> parts;
    for (size_t k = 0; k < idx.size(); ++k)
      parts.push_back(idx[k] + " < " + s[k].str());
    return name + "[" + join(parts) + "]";
  }
  std::string read(NodeId src, const std::vector<std::string>& subscripts) {
    return g_[src].shape.empty() ? name_[src] : name_[src] + "[" + join(subscripts) + "]";
  }

  std::string statement(NodeId id);
  std::string view_statement(const std::string& name, const Node& n);
  std::string reduce_statement(const std::string& name, const Node& n);

  const Graph& g_;
  std::vector<std::string> name_;
  std::set<std::string> taken_;
};

std::string Printer::view_statement(const std::string& name, const Node& n) {
  const Node& src = g_[n.operands[0]];
  std::vector<std::string> idx = indices(n.shape.size(), "i");
  bool affine = n.view.mask.empty();
  for (const IntExpr& e : n.view.index)
    affine = affine && e.is_affine();
  std::vector<std::string> subs;
  if (affine) {  // subscripts
    for (const IntExpr& e : n.view.index)
      subs.push_back(expr_text(e, idx));
    return left(name, idx, n.shape) + " = " + read(n.operands[0], subs);
  }
  View reshape = views::reshape(src.shape, n.shape);
  if (n.view.mask.empty() && reshape.index == n.view.index)
    return name + " = reshape(" + name_[n.operands[0]] + ", " + dims_text(n.shape) + ")";
  // any other view: the flattened source read at each element's offset, -1 (a 0) where masked
  IntExpr offset = 0, count = 1;
  for (int j = int(src.shape.size()) - 1; j >= 0; --j) {
    offset = offset + n.view.index[j] * count;
    count = count * src.shape[j];
  }
  std::string pre;
  std::vector<std::string> iotas;
  for (size_t k = 0; k < n.shape.size(); ++k) {
    iotas.push_back(fresh(name + "_i" + std::to_string(k)));
    pre += iotas.back() + " = iota(" + dims_text(n.shape) + ", " + std::to_string(k) + ", i64)\n";
  }
  std::string at = "full(0, " + dims_text(n.shape) + ", i64) + " + expr_text(offset, iotas);
  std::string cond;
  for (const MaskBound& m : n.view.mask) {
    std::string e = expr_text(m.expr, iotas);
    cond += (cond.empty() ? "" : " & ") +
            ("(" + e + " >= 0) & (" + e + " < " + expr_text(m.bound, iotas) + ")");
  }
  if (!cond.empty()) at = "where(" + cond + ", " + at + ", -1)";
  std::string at_name = fresh(name + "_at");
  pre += at_name + " = " + at + "\n";
  std::string at_read = n.shape.empty() ? at_name : at_name + "[" + join(idx) + "]";
  return pre + left(name, idx, n.shape) + " = reshape(" + name_[n.operands[0]] + ", [" +
         count.str() + "])[" + at_read + "]";
}

std::string Printer::reduce_statement(const std::string& name, const Node& n) {
  std::string kind(reduce_kind_name(n.reduce_kind));
  const std::string& src = name_[n.operands[0]];
  std::vector<std::string> axes;
  for (int a : n.axes)
    axes.push_back(std::to_string(a));
  if (n.domain.empty())
    return name + " = " + kind + "(" + src + ", axis=[" + join(axes) + "], keepdim=true)";
  // a bounded domain: index notation over the kept axes, then the reduced axes put back as 1
  const Shape& in = g_[n.operands[0]].shape;
  std::vector<std::string> vars = indices(in.size(), "i"), sums = indices(in.size(), "r"), kept,
                           reduced;
  Shape kept_shape;
  for (size_t k = 0; k < in.size(); ++k) {
    bool r = std::find(n.axes.begin(), n.axes.end(), int(k)) != n.axes.end();
    if (r) vars[k] = sums[k];
    (r ? reduced : kept).push_back(vars[k]);
    if (!r) kept_shape.push_back(in[k]);
  }
  std::vector<std::string> args = {read(n.operands[0], vars)};
  args.insert(args.end(), reduced.begin(), reduced.end());
  for (const IntExpr& e : n.domain) {
    std::string bound;
    std::vector<int> order = n.axes;  // a reduced index first; else it bounds the kept ones
    for (int k = 0; k < int(in.size()); ++k)
      if (std::find(n.axes.begin(), n.axes.end(), k) == n.axes.end()) order.push_back(k);
    for (int a : order) {
      std::optional<int64_t> c = affine_coefficient(e, "%" + std::to_string(a));
      if (!c || (*c != 1 && *c != -1)) continue;
      IntExpr rest = e - *c * IntExpr::index(a);
      bound =
          vars[a] + (*c == 1 ? " >= " + expr_text(-rest, vars) : " <= " + expr_text(rest, vars));
      break;
    }
    if (bound.empty())
      throw SpecPrintError("cannot print the bounded reduction '" + name + "': its bound " +
                           e.str() + " >= 0 names no index with coefficient 1 or -1");
    args.push_back(bound);
  }
  std::vector<std::string> kept_idx(kept.begin(), kept.end());
  std::string tmp = fresh(name + "_bounded");
  return left(tmp, kept_idx, kept_shape) + " = " + kind + "(" + join(args) + ")\n" + name +
         " = reshape(" + tmp + ", " + dims_text(n.shape) + ")";
}

std::string Printer::statement(NodeId id) {
  const Node& n = g_[id];
  std::string name = name_[id] = fresh("t" + std::to_string(id));
  std::vector<std::string> a;
  for (NodeId o : n.operands)
    a.push_back(name_[o]);
  std::string dt(dtype_name(n.dtype));
  auto call = [&](const std::string& f) { return name + " = " + f + "(" + join(a) + ")"; };
  auto infix = [&](const std::string& op) { return name + " = " + a[0] + " " + op + " " + a[1]; };
  switch (n.op) {
    case Op::constant:
      return name + " = full(" + constant_str(n) + ", " + dims_text(n.shape) + ", " + dt + ")";
    case Op::index:
      return name + " = iota(" + dims_text(n.shape) + ", " + std::to_string(n.axis) + ", " + dt +
             ")";
    case Op::view:
      return view_statement(name, n);
    case Op::cast:
    case Op::bitcast:
      return name + " = " + std::string(op_name(n.op)) + "(" + a[0] + ", " + dt + ")";
    case Op::copy:
    case Op::neg:
    case Op::recip:
    case Op::sqrt:
    case Op::exp2:
    case Op::log2:
    case Op::sin:
    case Op::logical_not:
    case Op::where:
    case Op::mulacc:
      return call(std::string(op_name(n.op)));
    case Op::max:
      return call("maximum");
    case Op::add:
      return infix("+");
    case Op::mul:
      return infix("*");
    case Op::idiv:
      return infix("//");
    case Op::mod:
      return infix("%");
    case Op::bit_and:
      return infix("&");
    case Op::bit_or:
      return infix("|");
    case Op::bit_xor:
      return infix("^");
    case Op::shl:
      return infix("<<");
    case Op::shr:
      return infix(">>");
    case Op::cmplt:
      return infix("<");
    case Op::cmpeq:
      return infix("==");
    case Op::reduce:
      return reduce_statement(name, n);
    case Op::scan:
      return name + " = scan(" + a[0] + ", \"" + std::string(op_name(n.combine)) +
             "\", axis=" + std::to_string(n.axes.at(0)) + ")";
    case Op::gather:
      return name + " = take_along(" + a[0] + ", " + a[1] + ", " + std::to_string(n.axis) + ")";
    case Op::scatter:
      return name + " = scatter(" + join(a) + ", \"" + std::string(op_name(n.combine)) + "\", " +
             std::to_string(n.axis) + ")";
    case Op::input:
      return "";
    case Op::extern_call:
      break;
  }
  throw SpecPrintError("cannot print %" + std::to_string(id) + " = " + std::string(op_name(n.op)) +
                       " as a spec: the spec language has no " + std::string(op_name(n.op)));
}

}  // namespace

std::string graph_to_spec(const Graph& g, const SpecPrintOptions& opt) {
  Printer p(g);
  std::string body = p.body();
  std::vector<std::string> ins, outs;
  for (NodeId id : g.inputs)
    ins.push_back(g[id].name + " = " + quoted(type_text(g[id])));
  for (const GraphOutput& o : g.outputs)
    outs.push_back(o.name + " = " +
                   quoted(std::string(dtype_name(g[o.node].dtype)) + dims_text(g[o.node].shape)));
  std::string out = "[" + g.name + "]\n";
  if (!opt.doc.empty()) out += "doc  = " + quoted(opt.doc) + "\n";
  out += "in   = { " + join(ins) + " }\n";
  out += "out  = { " + join(outs) + " }\n";
  std::vector<std::string> facts;  // the checks the sizes must pass, kept as shape facts
  for (const SizeCheck& c : g.checks)
    if (std::string f = quoted(c.relation.str());
        std::find(facts.begin(), facts.end(), f) == facts.end())
      facts.push_back(f);
  if (!facts.empty()) out += "where = [" + join(facts) + "]\n";
  out += "body = \"\"\"\n" + body + "\"\"\"\n";
  if (!opt.test.empty()) out += "test = " + opt.test + "\n";
  return out;
}

}  // namespace kiln
