#include "ir/op.h"

#include <array>

namespace kiln {

namespace {

using enum OpClass;

constexpr std::array<OpInfo, kNumOps> kOps = {{
    {"input", data, 0},     {"const", data, 0},    {"index", data, 0},
    {"view", data, 1},      {"copy", data, 1},     {"cast", data, 1},
    {"bitcast", data, 1},   {"neg", unary, 1},     {"recip", unary, 1},
    {"sqrt", unary, 1},     {"exp2", unary, 1},    {"log2", unary, 1},
    {"sin", unary, 1},      {"not", unary, 1},     {"add", binary, 2},
    {"mul", binary, 2},     {"max", binary, 2},    {"idiv", binary, 2},
    {"mod", binary, 2},     {"and", binary, 2},    {"or", binary, 2},
    {"xor", binary, 2},     {"shl", binary, 2},    {"shr", binary, 2},
    {"cmplt", binary, 2},   {"cmpeq", binary, 2},  {"where", ternary, 3},
    {"mulacc", ternary, 3}, {"reduce", reduce, 1}, {"scan", scan, 1},
    {"gather", data, 2},    {"scatter", data, 3},  {"extern", extern_call, -1},
}};

}  // namespace

const OpInfo& op_info(Op op) {
  return kOps[static_cast<int>(op)];
}

bool is_pointwise(Op op) {
  OpClass c = op_info(op).cls;
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::ternary || op == Op::cast ||
         op == Op::bitcast;
}

std::string_view op_name(Op op) {
  return op_info(op).name;
}

std::optional<Op> parse_op(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (kOps[i].name == name) return static_cast<Op>(i);
  return std::nullopt;
}

std::string_view reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::sum:
      return "sum";
    case ReduceKind::max:
      return "max";
    case ReduceKind::prod:
      return "prod";
  }
  return "?";
}

bool is_elementwise(Op op) {
  OpClass c = op_info(op).cls;
  return c == unary || c == binary || c == ternary || op == Op::cast || op == Op::bitcast ||
         op == Op::copy;
}

bool is_scan_combiner(Op op) {
  return op == Op::add || op == Op::mul || op == Op::max || op == Op::bit_and || op == Op::bit_or ||
         op == Op::bit_xor;
}

bool is_scatter_combiner(Op op) {
  return op == Op::add || op == Op::mul || op == Op::max;
}

}  // namespace kiln
