/** \file
 * The primitive ops: the whole instruction set that composites lower to. The table in op.cpp
 * gives each op its spelling, arity and operand rules; passes ask it instead of switching on
 * ops themselves where they can. docs/primitives.md argues for every entry.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class Op : uint8_t {
  // data
  input,     ///< a composite's input tensor (not counted among the primitives)
  constant,  ///< every element the same scalar
  index,     ///< the position along one axis (iota)
  view,      ///< an index map over its operand (ir/view.h)
  copy,      ///< materialise the operand
  cast,      ///< value conversion to the node's dtype
  bitcast,   ///< reinterpret the bits as the node's dtype (same width)
  // unary
  neg,
  recip,
  sqrt,
  exp2,
  log2,
  sin,
  logical_not,
  // binary
  add,
  mul,
  max,
  idiv,
  mod,
  bit_and,
  bit_or,
  bit_xor,
  shl,
  shr,
  cmplt,
  cmpeq,
  // ternary
  where,   ///< cond ? a : b
  mulacc,  ///< a * b + c
  // reduce
  reduce,  ///< sum, max or prod over a set of axes; reduced axes keep size 1
  // scan
  scan,  ///< inclusive running combination along one axis (cumulative sum, max, ...)
  // data-dependent index
  gather,  ///< out[p] = src[p with p[axis] := index[p]]; 0 where index[p] is outside the axis
  /** out = base, then out[p with p[axis] := index[p]] combine= src[p] for every p of index in
   *  row-major order; a position outside the axis is dropped */
  scatter,
  // escape hatch
  extern_call,  ///< a call into a library routine, produced only by rewrite rules
};

/** How an op relates its operands to its result. */
enum class OpClass : uint8_t { data, unary, binary, ternary, reduce, scan, extern_call };

/** The kind of a `reduce`. */
enum class ReduceKind : uint8_t { sum, max, prod };

/** Static facts about one op. */
struct OpInfo {
  std::string_view name;  ///< spelling in printouts and rules: "add", "reduce", ...
  OpClass cls;
  int arity;  ///< operand count; -1 for variadic (extern)
};

const OpInfo& op_info(Op op);
/** Whether `op` computes each element from its operands' elements at the same position:
 *  unary, binary and ternary ops, casts and bitcasts. */
bool is_pointwise(Op op);
std::string_view op_name(Op op);
/** Finds an op by its spelling. */
std::optional<Op> parse_op(std::string_view name);
/** Number of entries in Op. */
constexpr int kNumOps = static_cast<int>(Op::extern_call) + 1;

std::string_view reduce_kind_name(ReduceKind k);

/** True for ops applied element by element with operands of the result's shape. */
bool is_elementwise(Op op);

/** Whether `op` may combine the elements of a scan: add, mul, max, and, or, xor. */
bool is_scan_combiner(Op op);

/** Whether `op` may combine a scatter's values into its target: add, mul, max. */
bool is_scatter_combiner(Op op);

}  // namespace kiln
