#include "ir/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "ir/externs.h"

namespace kiln {

NodeId Graph::add(Node n) {
  nodes.push_back(std::move(n));
  return static_cast<NodeId>(nodes.size() - 1);
}

NodeId Graph::input(const std::string& input_name, DType t, const Shape& shape,
                    bool constant_input) {
  Node n;
  n.op = Op::input;
  n.dtype = t;
  n.shape = shape;
  n.name = input_name;
  n.constant_input = constant_input;
  NodeId id = add(std::move(n));
  inputs.push_back(id);
  return id;
}

NodeId Graph::constant(DType t, const Shape& shape, double value) {
  Node n;
  n.op = Op::constant;
  n.dtype = t;
  n.shape = shape;
  if (is_float(t)) {
    n.value = value;
  } else {
    // integers beyond int64 (u64: beyond its range) or NaN have no integer value: saturate (NaN
    // -> 0)
    double v =
        std::isnan(value) ? 0 : std::clamp(value, -9.2233720368547758e18, 9.2233720368547748e18);
    n.int_value = t == DType::u64 && value >= 0 ? float_to_int(t, value)
                                                : wrap_int(t, static_cast<int64_t>(v));
    n.value = int_to_double(t, n.int_value);
  }
  return add(std::move(n));
}

NodeId Graph::constant_int(DType t, const Shape& shape, int64_t value) {
  if (is_float(t)) return constant(t, shape, static_cast<double>(value));
  Node n;
  n.op = Op::constant;
  n.dtype = t;
  n.shape = shape;
  n.int_value = wrap_int(t, value);
  n.value = int_to_double(t, n.int_value);
  return add(std::move(n));
}

NodeId Graph::constant_size(DType t, const Shape& shape, const IntExpr& value) {
  if (auto c = value.as_constant()) return constant_int(t, shape, *c);
  Node n;
  n.op = Op::constant;
  n.dtype = t;
  n.shape = shape;
  n.symbolic = true;
  n.size_value = value;
  return add(std::move(n));
}

NodeId Graph::index(DType t, const Shape& shape, int axis) {
  Node n;
  n.op = Op::index;
  n.dtype = t;
  n.shape = shape;
  n.axis = axis;
  return add(std::move(n));
}

NodeId Graph::view(NodeId src, const View& v) {
  const Node& s = nodes[src];
  if (v.is_identity(s.shape)) return src;
  if (s.op == Op::view) return view(s.operands[0], View::compose(v, s.view));
  Node n;
  n.op = Op::view;
  n.dtype = s.dtype;
  n.shape = v.shape;
  n.operands = {src};
  n.view = v;
  return add(std::move(n));
}

NodeId Graph::unary(Op op, NodeId a) {
  Node n;
  n.op = op;
  n.dtype = nodes[a].dtype;
  n.shape = nodes[a].shape;
  n.operands = {a};
  return add(std::move(n));
}

NodeId Graph::binary(Op op, NodeId a, NodeId b) {
  Node n;
  n.op = op;
  n.dtype = (op == Op::cmplt || op == Op::cmpeq) ? DType::boolean : nodes[a].dtype;
  n.shape = nodes[a].shape;
  n.operands = {a, b};
  return add(std::move(n));
}

NodeId Graph::ternary(Op op, NodeId a, NodeId b, NodeId c) {
  Node n;
  n.op = op;
  n.dtype = op == Op::where ? nodes[b].dtype : nodes[a].dtype;
  n.shape = nodes[b].shape;
  n.operands = {a, b, c};
  return add(std::move(n));
}

NodeId Graph::cast(NodeId a, DType t, bool bitwise) {
  if (nodes[a].dtype == t) return a;
  Node n;
  n.op = bitwise ? Op::bitcast : Op::cast;
  n.dtype = t;
  n.shape = nodes[a].shape;
  n.operands = {a};
  return add(std::move(n));
}

NodeId Graph::reduce(ReduceKind kind, NodeId a, const std::vector<int>& axes,
                     const std::vector<IntExpr>& domain) {
  if (axes.empty()) return a;
  Node n;
  n.op = Op::reduce;
  n.dtype = nodes[a].dtype;
  n.shape = nodes[a].shape;
  for (int ax : axes)
    n.shape[ax] = 1;
  n.operands = {a};
  n.reduce_kind = kind;
  n.axes = axes;
  n.domain = domain;
  return add(std::move(n));
}

NodeId Graph::scan(Op combine, NodeId a, int axis) {
  Node n;
  n.op = Op::scan;
  n.dtype = nodes[a].dtype;
  n.shape = nodes[a].shape;
  n.operands = {a};
  n.combine = combine;
  n.axes = {axis};
  return add(std::move(n));
}

NodeId Graph::gather(NodeId src, NodeId index, int axis) {
  Node n;
  n.op = Op::gather;
  n.dtype = nodes[src].dtype;
  n.shape = nodes[index].shape;
  n.operands = {src, index};
  n.axis = axis;
  return add(std::move(n));
}

NodeId Graph::scatter(Op combine, NodeId base, NodeId index, NodeId src, int axis) {
  Node n;
  n.op = Op::scatter;
  n.dtype = nodes[base].dtype;
  n.shape = nodes[base].shape;
  n.operands = {base, index, src};
  n.axis = axis;
  n.combine = combine;
  return add(std::move(n));
}

NodeId Graph::extern_call(const std::string& routine, const std::vector<NodeId>& operands) {
  std::vector<ValueType> types;
  for (NodeId o : operands)
    types.push_back({nodes[o].dtype, nodes[o].shape});
  ExternResult r = extern_result_type(routine, types);
  if (!r.error.empty()) throw std::invalid_argument(r.error);
  Node n;
  n.op = Op::extern_call;
  n.dtype = r.type.dtype;
  n.shape = r.type.shape;
  n.operands = operands;
  n.name = routine;
  return add(std::move(n));
}

std::string constant_str(const Node& n) {
  if (n.symbolic) return n.size_value.str();
  if (n.dtype == DType::boolean) return n.int_value ? "true" : "false";
  if (!is_float(n.dtype)) return int_to_string(n.dtype, n.int_value);
  if (std::isnan(n.value)) return "nan";
  if (std::isinf(n.value)) return n.value > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", n.value);
  for (int p = 1; p <= 17; ++p) {  // shortest text that reads back exactly
    char s[32];
    std::snprintf(s, sizeof s, "%.*g", p, n.value);
    if (std::strtod(s, nullptr) == n.value) return s;
  }
  return buf;
}

std::string node_attributes(const Node& n) {
  switch (n.op) {
    case Op::input:
      return (n.constant_input ? "const " : "") + n.name;
    case Op::constant:
      return constant_str(n);
    case Op::index:
    case Op::gather:
      return "axis=" + std::to_string(n.axis);
    case Op::view:
      return n.view.str();
    case Op::reduce: {
      std::string s = std::string(reduce_kind_name(n.reduce_kind)) + " axes=[";
      for (size_t i = 0; i < n.axes.size(); ++i)
        s += (i ? "," : "") + std::to_string(n.axes[i]);
      s += "]";
      for (size_t i = 0; i < n.domain.size(); ++i)
        s += (i ? ", " : " where ") + n.domain[i].str() + " >= 0";
      return s;
    }
    case Op::scan:
      return std::string(op_name(n.combine)) + " axis=" + std::to_string(n.axes.at(0));
    case Op::scatter:
      return std::string(op_name(n.combine)) + " axis=" + std::to_string(n.axis);
    case Op::extern_call:
      return n.name;
    default:
      return "";
  }
}

std::string node_type(const Node& n) {
  return std::string(dtype_name(n.dtype)) + shape_str(n.shape);
}

std::string graph_to_text(const Graph& g) {
  std::string s = "graph " + g.name + "(";
  for (size_t i = 0; i < g.size_vars.size(); ++i)
    s += (i ? ", " : "") + g.size_vars[i];
  s += ")\n";
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    std::string line = "  %" + std::to_string(id) + " = " + std::string(op_name(n.op));
    std::string attrs = node_attributes(n);
    if (!attrs.empty()) line += " " + attrs;
    for (size_t k = 0; k < n.operands.size(); ++k)
      line += (k ? ", %" : " %") + std::to_string(n.operands[k]);
    s += line + " : " + node_type(n) + "\n";
  }
  for (const GraphOutput& o : g.outputs)
    s += "  return " + o.name + " = %" + std::to_string(o.node) + "\n";
  return s;
}

}  // namespace kiln
