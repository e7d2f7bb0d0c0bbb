#include "dsl/lower.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "dsl/builtins.h"
#include "dsl/lowering.h"
#include "ir/limits.h"
#include "ir/suggest.h"

namespace kiln {

// ---- values ---------------------------------------------------------------------------------

Value Value::tensor(NodeId n) {
  Value v;
  v.kind = Kind::tensor;
  v.node = n;
  return v;
}
Value Value::of_int(IntExpr e) {
  Value v;
  v.kind = Kind::integer;
  v.integer = std::move(e);
  return v;
}
Value Value::of_number(double d) {
  Value v;
  v.kind = Kind::number;
  v.number = d;
  return v;
}
Value Value::of_bool(bool b) {
  Value v;
  v.kind = Kind::boolean;
  v.number = b;
  return v;
}
Value Value::of_dtype(DType t) {
  Value v;
  v.kind = Kind::dtype;
  v.dtype = t;
  return v;
}
Value Value::of_attr(const AttrValue& a) {
  switch (a.kind) {
    case AttrValue::Kind::integer:
      return of_int(a.integer);
    case AttrValue::Kind::number:
      return of_number(a.number);
    case AttrValue::Kind::boolean:
      return of_bool(a.boolean);
    case AttrValue::Kind::string: {
      Value v;
      v.kind = Kind::string;
      v.string = a.string;
      return v;
    }
    case AttrValue::Kind::list: {
      Value v;
      v.kind = Kind::list;
      for (const AttrValue& x : a.list)
        v.list.push_back(of_attr(x));
      return v;
    }
  }
  return {};
}

std::string Value::describe(const Graph& g) const {
  switch (kind) {
    case Kind::tensor:
      return "a tensor " + std::string(dtype_name(g[node].dtype)) + shape_str(g[node].shape);
    case Kind::integer:
      return "the integer " + integer.str();
    case Kind::number:
      return "the number " + number_text(number);
    case Kind::boolean:
      return number ? "true" : "false";
    case Kind::string:
      return "the string \"" + string + "\"";
    case Kind::list:
      return "a list";
    case Kind::dtype:
      return "the dtype " + std::string(dtype_name(dtype));
    case Kind::wide:
      return "the integer " + int_to_string(DType::u64, *integer.as_constant());
  }
  return "?";
}

int IndexSpace::axis_of(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

void type_error(const SourceLoc& at, const std::string& message) {
  throw SpecError(at, message);
}

std::string number_text(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

// ---- composites -----------------------------------------------------------------------------

std::map<std::string, DType> resolve_type_vars(const Composite& c, const LowerOptions& opt) {
  std::map<std::string, DType> out;
  for (const TypeVar& t : c.types)
    out[t.name] = t.allowed.front();
  for (const auto* list : {&c.inputs, &c.outputs})
    for (const Param& p : *list)
      if (!parse_dtype(p.type.dtype) && !out.count(p.type.dtype)) out[p.type.dtype] = DType::f32;
  for (const auto& [k, v] : opt.dtypes)
    if (out.count(k)) out[k] = v;
  return out;
}

namespace {
Graph remove_dead_nodes(const Graph& g);

bool expr_names(const Expr& e, const std::string& name) {
  if (e.kind == Expr::Kind::name && e.text == name) return true;
  for (const ExprPtr& x : e.items)
    if (expr_names(*x, name)) return true;
  return false;
}
}  // namespace

bool names_size_variable(const Composite& c, const std::string& name) {
  for (const auto* list : {&c.inputs, &c.outputs})
    for (const Param& p : *list)
      for (const ExprPtr& d : p.type.dims)
        if (expr_names(*d, name)) return true;
  return false;
}

namespace {
void collect_names(const Expr& e, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::name) out.insert(e.text);
  for (const ExprPtr& x : e.items)
    collect_names(*x, out);
}
}  // namespace

std::vector<std::string> size_variables(const Composite& c) {
  std::set<std::string> names;
  for (const auto* list : {&c.inputs, &c.outputs})
    for (const Param& p : *list)
      for (const ExprPtr& d : p.type.dims)
        collect_names(*d, names);
  std::vector<std::string> out;
  for (const std::string& n : names)
    if (!c.attr(n)) out.push_back(n);
  return out;
}

Graph lower_composite(const Library& lib, const Composite& c, const LowerOptions& opt) {
  Graph g;
  g.name = c.name;
  Lowerer l(lib, g);
  std::vector<NodeId> outs = l.lower_top(c, opt);
  for (size_t i = 0; i < outs.size(); ++i)
    g.outputs.push_back({c.outputs[i].name, outs[i]});
  return remove_dead_nodes(g);
}

namespace {

/** Drops nodes that no output needs (lowering leaves some, e.g. views made while binding index
 *  ranges); inputs always stay. */
Graph remove_dead_nodes(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (NodeId i : g.inputs)
    live[i] = true;
  for (const GraphOutput& o : g.outputs)
    live[o.node] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (NodeId o : g[static_cast<NodeId>(i)].operands)
        live[o] = true;
  Graph out;
  out.name = g.name;
  out.size_vars = g.size_vars;
  out.checks = g.checks;
  std::vector<NodeId> remap(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!live[i]) continue;
    Node n = g.nodes[i];
    for (NodeId& o : n.operands)
      o = remap[o];
    remap[i] = out.add(std::move(n));
  }
  for (NodeId i : g.inputs)
    out.inputs.push_back(remap[i]);
  for (const GraphOutput& o : g.outputs)
    out.outputs.push_back({o.name, remap[o.node]});
  return out;
}

std::string type_text(const Param& p) {
  return p.type.text;
}

bool is_plain_size_name(const Expr& e, const Composite& c) {
  return e.kind == Expr::Kind::name && !c.attr(e.text);
}

AttrValue attr_from_value(const Value& v, const AttrDecl& decl, const SourceLoc& at,
                          const Graph& g) {
  AttrValue a;
  auto bad = [&] {
    throw SpecError(at, "attribute '" + decl.name + "' expects a value like its default " +
                            decl.value.str() + ", found " + v.describe(g));
  };
  switch (v.kind) {
    case Value::Kind::integer: {
      auto c = v.integer.as_constant();
      if (!c) bad();
      if (decl.value.kind == AttrValue::Kind::number) {
        a.kind = AttrValue::Kind::number;
        a.number = static_cast<double>(*c);
      } else if (decl.value.kind == AttrValue::Kind::integer ||
                 decl.value.kind == AttrValue::Kind::list) {
        a.kind = AttrValue::Kind::integer;
        a.integer = *c;
      } else {
        bad();
      }
      return a;
    }
    case Value::Kind::number:
      if (decl.value.kind != AttrValue::Kind::number) bad();
      a.kind = AttrValue::Kind::number;
      a.number = v.number;
      return a;
    case Value::Kind::boolean:
      if (decl.value.kind != AttrValue::Kind::boolean) bad();
      a.kind = AttrValue::Kind::boolean;
      a.boolean = v.number != 0;
      return a;
    case Value::Kind::string:
      if (decl.value.kind != AttrValue::Kind::string) bad();
      a.kind = AttrValue::Kind::string;
      a.string = v.string;
      return a;
    case Value::Kind::list: {
      if (decl.value.kind != AttrValue::Kind::list) bad();
      a.kind = AttrValue::Kind::list;
      AttrDecl item{decl.name, decl.value.list.empty() ? AttrValue{} : decl.value.list[0], {}};
      for (const Value& x : v.list)
        a.list.push_back(attr_from_value(x, item, at, g));
      return a;
    }
    default:
      bad();
  }
  return a;
}

}  // namespace

Shape Lowerer::declared_shape(const Param& p, Scope& s) {
  Shape shape = p.type.batch ? s.batch : Shape{};
  if (shape.size() + p.type.dims.size() > static_cast<size_t>(kMaxRank))
    throw SpecError(p.type.loc,
                    "'" + p.name + "' has " + std::to_string(shape.size() + p.type.dims.size()) +
                        " dimensions (" + std::to_string(shape.size()) +
                        " of them from '...'), above the limit of " + std::to_string(kMaxRank));
  for (const ExprPtr& d : p.type.dims)
    shape.push_back(eval_int(*d, s, "a dimension"));
  return shape;
}

IntExpr Lowerer::top_size(const std::string& name, const LowerOptions& opt) {
  if (auto it = opt.fixed_sizes.find(name); it != opt.fixed_sizes.end()) return it->second;
  g_.size_vars.push_back(name);
  return IntExpr::var(name);
}

std::vector<NodeId> Lowerer::lower_top(const Composite& c, const LowerOptions& opt) {
  Scope s;
  s.comp = &c;
  s.types = resolve_type_vars(c, opt);
  for (const AttrDecl& a : c.attrs) {
    auto it = opt.attrs.find(a.name);
    s.attrs[a.name] = Value::of_attr(it == opt.attrs.end() ? a.value : it->second);
  }
  for (const auto& [name, d] : opt.dtypes) {
    const TypeVar* tv = c.type_var(name);
    bool allowed = tv ? std::find(tv->allowed.begin(), tv->allowed.end(), d) != tv->allowed.end()
                      : is_float(d);
    if (!allowed)
      throw SpecError(tv ? tv->loc : c.loc, "type variable " + name + " of '" + c.name +
                                                "' does not allow " + std::string(dtype_name(d)));
  }
  for (const auto& [name, v] : opt.attrs)
    if (!c.attr(name))
      throw SpecError(c.loc, "composite '" + c.name + "' has no attribute '" + name + "'");
  bool any_batch = false;
  for (const Param& p : c.inputs)
    any_batch |= p.type.batch;
  for (const Param& p : c.outputs)
    any_batch |= p.type.batch;
  if (any_batch) {
    s.has_batch = true;
    for (int k = 0; k < opt.batch_rank; ++k)
      s.batch.push_back(top_size("batch" + std::to_string(k), opt));
  }
  // Outputs bind sizes too, so that a source such as `arange` (no inputs) declares T[N].
  for (const auto* list : {&c.inputs, &c.outputs})
    for (const Param& p : *list)
      for (const ExprPtr& d : p.type.dims)
        if (is_plain_size_name(*d, c) && !s.sizes.count(d->text))
          s.sizes[d->text] = top_size(d->text, opt);
  std::vector<Value> args;
  for (const Param& p : c.inputs) {
    auto dt = parse_dtype(p.type.dtype);
    DType t = dt ? *dt : s.types.at(p.type.dtype);
    if (!p.type.has_shape)
      throw SpecError(p.type.loc, "input '" + p.name + "' needs a shape, such as " + p.type.dtype +
                                      "[N] or " + p.type.dtype + "[] for a scalar");
    args.push_back(Value::tensor(g_.input(p.name, t, declared_shape(p, s), p.type.is_const)));
  }
  active_.push_back(&c);
  bind_inputs(c, args, s, c.loc);
  run_body(c, s);
  check_outputs(c, s);
  active_.pop_back();
  std::vector<NodeId> outs;
  for (const Param& p : c.outputs)
    outs.push_back(s.vars.at(p.name).node);
  return outs;
}

std::vector<NodeId> Lowerer::call(const Composite& c, const std::vector<Value>& args,
                                  const std::vector<Arg>& kwargs, Scope* caller,
                                  const SourceLoc& at) {
  if (args.size() != c.inputs.size()) {
    std::string names;
    for (const Param& p : c.inputs)
      names += (names.empty() ? "" : ", ") + p.name;
    throw SpecError(at, "wrong number of arguments: '" + c.name + "' takes " +
                            std::to_string(c.inputs.size()) + " input" +
                            (c.inputs.size() == 1 ? "" : "s") + " (" + names + "), given " +
                            std::to_string(args.size()));
  }
  Scope s;
  s.comp = &c;
  for (const AttrDecl& a : c.attrs)
    s.attrs[a.name] = Value::of_attr(a.value);
  for (const Arg& kw : kwargs) {
    Value v = eval(*kw.value, *caller);
    if (const AttrDecl* decl = c.attr(kw.name)) {
      s.attrs[kw.name] = Value::of_attr(attr_from_value(v, *decl, kw.loc, g_));
    } else if (c.type_var(kw.name) && v.kind == Value::Kind::dtype) {
      s.types[kw.name] = v.dtype;
    } else {
      std::string names;
      std::vector<std::string> known;
      for (const AttrDecl& a : c.attrs) {
        names += (names.empty() ? "" : ", ") + a.name;
        known.push_back(a.name);
      }
      throw SpecError(kw.loc, "unknown attribute '" + kw.name + "' of composite '" + c.name + "'" +
                                  did_you_mean(kw.name, known) + "; expected " +
                                  (names.empty() ? "none" : "one of " + names));
    }
  }
  try {
    sites_.push_back(at);
    bind_inputs(c, args, s, at);
    for (const TypeVar& t : c.types)
      if (!s.types.count(t.name)) s.types[t.name] = t.allowed.front();
    active_.push_back(&c);
    run_body(c, s);
    check_outputs(c, s);
    active_.pop_back();
    sites_.pop_back();
  } catch (SpecError& e) {
    const SourceLoc& l = e.loc();
    if (l.file != at.file || l.line != at.line || l.col != at.col) e.trace.push_back(at);
    throw;
  }
  std::vector<NodeId> outs;
  for (const Param& p : c.outputs)
    outs.push_back(s.vars.at(p.name).node);
  return outs;
}

void Lowerer::bind_inputs(const Composite& c, const std::vector<Value>& args, Scope& s,
                          const SourceLoc& at) {
  const std::string* batch_from = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = c.inputs[i];
    if (!args[i].is_tensor())
      throw SpecError(at, "input '" + p.name + "' of '" + c.name + "' needs a tensor, found " +
                              args[i].describe(g_));
    const Node& n = g_[args[i].node];
    if (auto dt = parse_dtype(p.type.dtype)) {
      if (*dt != n.dtype)
        throw SpecError(at, "dtype mismatch: input '" + p.name + "' of '" + c.name +
                                "' is declared " + type_text(p) + " but the argument is " +
                                std::string(dtype_name(n.dtype)) + shape_str(n.shape));
    } else if (auto it = s.types.find(p.type.dtype); it != s.types.end()) {
      if (it->second != n.dtype)
        throw SpecError(at, "dtype mismatch: input '" + p.name + "' of '" + c.name + "' is " +
                                std::string(dtype_name(n.dtype)) + " but type variable " +
                                p.type.dtype + " is already " +
                                std::string(dtype_name(it->second)));
    } else {
      const TypeVar* tv = c.type_var(p.type.dtype);
      if (tv && std::find(tv->allowed.begin(), tv->allowed.end(), n.dtype) == tv->allowed.end()) {
        std::string allowed;
        for (DType d : tv->allowed)
          allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(d));
        throw SpecError(at, "dtype mismatch: input '" + p.name + "' of '" + c.name + "' is " +
                                std::string(dtype_name(n.dtype)) + " but " + p.type.dtype +
                                " allows only " + allowed);
      }
      if (!tv && !is_float(n.dtype))
        throw SpecError(at, "dtype mismatch: input '" + p.name + "' of '" + c.name + "' is " +
                                std::string(dtype_name(n.dtype)) + " but " + p.type.dtype +
                                " is a float type variable");
      s.types[p.type.dtype] = n.dtype;
    }
    if (!p.type.has_shape) throw SpecError(p.type.loc, "input '" + p.name + "' needs a shape");
    size_t fixed = p.type.dims.size();
    if (n.shape.size() < fixed || (!p.type.batch && n.shape.size() != fixed))
      throw SpecError(at, "shape mismatch: input '" + p.name + "' of '" + c.name + "' expects " +
                              type_text(p) + " but the argument is " +
                              std::string(dtype_name(n.dtype)) + shape_str(n.shape));
    size_t nb = n.shape.size() - fixed;
    if (p.type.batch) {
      Shape b(n.shape.begin(), n.shape.begin() + nb);
      if (batch_from && !same_dims(b, s.batch, at, "the batch dimensions of '" + p.name + "'"))
        throw SpecError(at, "shape mismatch: the batch dimensions of '" + p.name + "' " +
                                shape_str(b) + " differ from those of '" + *batch_from + "' " +
                                shape_str(s.batch));
      s.batch = b;
      s.has_batch = true;
      batch_from = &p.name;
    }
    for (size_t k = 0; k < fixed; ++k) {
      const Expr& d = *p.type.dims[k];
      if (is_plain_size_name(d, c) && !s.sizes.count(d.text)) s.sizes[d.text] = n.shape[nb + k];
    }
  }
  assume_facts(c, s);
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = c.inputs[i];
    const Node& n = g_[args[i].node];
    Shape want = declared_shape(p, s);
    if (!same_dims(want, n.shape, at, "input '" + p.name + "' of '" + c.name + "'"))
      throw SpecError(at, "shape mismatch: input '" + p.name + "' of '" + c.name + "' expects " +
                              type_text(p) + " = " + shape_str(want) + " but the argument is " +
                              std::string(dtype_name(n.dtype)) + shape_str(n.shape));
    s.vars[p.name] = args[i];
  }
  bool any_batch = false;
  for (const Param& p : c.outputs)
    any_batch |= p.type.batch;
  if (any_batch && !s.has_batch)
    throw SpecError(c.loc, "output of '" + c.name + "' uses '...' but no input does");
}

void Lowerer::run_body(const Composite& c, Scope& s) {
  for (const BodyStatement& st : c.body) {
    if (st.targets.size() == 1 && st.targets[0].indexed) {
      index_statement(st, s);
      continue;
    }
    for (const Target& t : st.targets)
      if (t.indexed) throw SpecError(t.loc, "index notation assigns one target at a time");
    Value v = eval(*st.value, s);
    if (st.targets.size() == 1) {
      s.vars[st.targets[0].name] = v;
      continue;
    }
    if (v.kind != Value::Kind::list || v.list.size() != st.targets.size())
      throw SpecError(st.loc, "cannot assign " +
                                  std::string(v.kind == Value::Kind::list
                                                  ? std::to_string(v.list.size()) + " values"
                                                  : v.describe(g_)) +
                                  " to " + std::to_string(st.targets.size()) + " names");
    for (size_t i = 0; i < st.targets.size(); ++i)
      s.vars[st.targets[i].name] = v.list[i];
  }
}

void Lowerer::check_outputs(const Composite& c, Scope& s) {
  for (const Param& p : c.outputs) {
    auto it = s.vars.find(p.name);
    if (it == s.vars.end())
      throw SpecError(p.loc, "output '" + p.name + "' of '" + c.name +
                                 "' is never assigned; expected a statement such as " + p.name +
                                 " = ... in the body");
    auto dt = parse_dtype(p.type.dtype);
    DType want;
    if (dt) {
      want = *dt;
    } else if (auto t = s.types.find(p.type.dtype); t != s.types.end()) {
      want = t->second;
    } else {
      const TypeVar* tv = c.type_var(p.type.dtype);
      want = tv ? tv->allowed.front() : DType::f32;
      s.types[p.type.dtype] = want;
    }
    Shape shape;
    if (p.type.has_shape) shape = declared_shape(p, s);
    Value v = it->second;
    NodeId n = as_tensor(v, want, shape, p.loc);
    if (g_[n].dtype != want)
      throw SpecError(p.loc, "dtype mismatch: output '" + p.name + "' is declared " + type_text(p) +
                                 " (" + std::string(dtype_name(want)) + ") but the body computes " +
                                 std::string(dtype_name(g_[n].dtype)) + shape_str(g_[n].shape));
    if (p.type.has_shape &&
        !same_dims(shape, g_[n].shape, p.loc, "output '" + p.name + "' of '" + c.name + "'"))
      throw SpecError(p.loc, "shape mismatch: output '" + p.name + "' is declared " + type_text(p) +
                                 " = " + shape_str(shape) + " but the body computes " +
                                 std::string(dtype_name(g_[n].dtype)) + shape_str(g_[n].shape));
    it->second = Value::tensor(n);
  }
}

// ---- expressions ----------------------------------------------------------------------------

Value Lowerer::eval(const Expr& e, Scope& s) {
  switch (e.kind) {
    case Expr::Kind::number:
      if (e.wide) {
        Value v = Value::of_number(e.number);
        v.kind = Value::Kind::wide;
        v.integer = IntExpr(e.integer);
        return v;
      }
      return e.is_integer ? Value::of_int(e.integer) : Value::of_number(e.number);
    case Expr::Kind::boolean:
      return Value::of_bool(e.number != 0);
    case Expr::Kind::string: {
      Value v;
      v.kind = Value::Kind::string;
      v.string = e.text;
      return v;
    }
    case Expr::Kind::name:
      return eval_name(e, s);
    case Expr::Kind::unary:
      return unary(e.text, eval(*e.items[0], s), e.loc);
    case Expr::Kind::binary:
      return binary(e.text, eval(*e.items[0], s), eval(*e.items[1], s), e.loc);
    case Expr::Kind::call:
      return eval_call(e, s);
    case Expr::Kind::subscript:
      if (!space_)
        throw SpecError(e.loc,
                        "subscripts are index notation: write the target with indices, "
                        "such as y[i, j] = x[j, i]");
      return index_access(e, s);
    case Expr::Kind::list: {
      Value v;
      v.kind = Value::Kind::list;
      for (const ExprPtr& x : e.items)
        v.list.push_back(eval(*x, s));
      return v;
    }
    case Expr::Kind::ellipsis:
      throw SpecError(e.loc, "'...' may only start a shape in a type");
  }
  return {};
}

Value Lowerer::eval_name(const Expr& e, Scope& s) {
  if (space_) {
    int axis = space_->axis_of(e.text);
    if (axis >= 0) return Value::of_int(IntExpr::index(axis));
  }
  if (auto it = s.vars.find(e.text); it != s.vars.end()) {
    if (space_ && it->second.is_tensor() && !g_[it->second.node].shape.empty())
      throw SpecError(e.loc, "tensor '" + e.text +
                                 "' needs subscripts in index notation, such as " + e.text +
                                 "[i, j]");
    return it->second;
  }
  if (auto it = s.attrs.find(e.text); it != s.attrs.end()) return it->second;
  if (auto it = s.sizes.find(e.text); it != s.sizes.end()) return Value::of_int(it->second);
  if (auto it = s.types.find(e.text); it != s.types.end()) return Value::of_dtype(it->second);
  if (auto d = parse_dtype(e.text)) return Value::of_dtype(*d);
  if (e.text == "inf") return Value::of_number(INFINITY);
  if (e.text == "nan") return Value::of_number(NAN);
  if (e.text == "pi") return Value::of_number(std::numbers::pi);
  if (names_size_variable(*s.comp, e.text))
    throw SpecError(e.loc, "size variable '" + e.text + "' is not bound by any input of '" +
                               s.comp->name +
                               "'; expected it as a whole dimension of an input, "
                               "such as \"T[" +
                               e.text + "]\"");
  throw SpecError(e.loc, "unknown name '" + e.text +
                             "'; expected an input, an assigned name, an attribute, a size "
                             "variable bound by an input" +
                             (space_ ? ", an index" : "") + " or a dtype");
}

Value Lowerer::eval_call(const Expr& e, Scope& s) {
  if (is_builtin(e.text)) return call_builtin(e, s);
  if (e.text == "repeat") return eval_repeat(e, s);
  const Composite* c = lib_.resolve(*s.comp->file, e.text);
  if (!c) {
    std::vector<std::string> known = builtin_names();
    known.push_back("repeat");
    std::vector<const SpecFile*> files = s.comp->file->used;
    files.push_back(s.comp->file);
    for (const SpecFile* f : files)
      for (const auto& other : f->composites)
        known.push_back(other->name);
    throw SpecError(e.loc, "unknown op or composite '" + e.text + "'" +
                               did_you_mean(e.text, known) +
                               "; expected a builtin (see docs/spec-language.md) or a composite "
                               "of this file or of a file in [meta] use");
  }
  if (space_)
    throw SpecError(e.loc, "composite calls are not allowed inside index notation; assign '" +
                               e.text + "(...)' to a name first");
  std::vector<Value> args;
  std::vector<Arg> kwargs;
  for (const Arg& a : e.args) {
    if (a.name.empty())
      args.push_back(eval(*a.value, s));
    else
      kwargs.push_back(a);
  }
  std::vector<NodeId> outs = call(*c, args, kwargs, &s, e.loc);
  if (outs.size() == 1) return Value::tensor(outs[0]);
  Value v;
  v.kind = Value::Kind::list;
  for (NodeId n : outs)
    v.list.push_back(Value::tensor(n));
  return v;
}

IntExpr Lowerer::eval_int(const Expr& e, Scope& s, const std::string& what) {
  Value v = eval(e, s);
  if (v.kind != Value::Kind::integer)
    throw SpecError(e.loc, what + " must be an integer expression of sizes and attributes, found " +
                               v.describe(g_));
  return v.integer;
}

DType Lowerer::eval_dtype(const Expr& e, Scope& s) {
  Value v = eval(e, s);
  if (v.kind == Value::Kind::dtype) return v.dtype;
  if (v.kind == Value::Kind::string)
    if (auto d = parse_dtype(v.string)) return *d;
  throw SpecError(e.loc,
                  "expected a dtype such as f32 or a type variable, found " + v.describe(g_));
}

}  // namespace kiln
