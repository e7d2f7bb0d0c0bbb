/** \file
 * The graph IR: an SSA DAG of primitive-op nodes. Operands always precede their users, so the
 * node vector is a topological order. Every node carries its dtype and symbolic shape. The
 * builder methods do no checking — the spec front end checks user input with locations, and
 * ir/verifier.h checks graphs that passes produce.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/int_expr.h"
#include "ir/op.h"
#include "ir/size_facts.h"
#include "ir/view.h"

namespace kiln {

using NodeId = int32_t;

/** One node. Fields past `operands` are used by the ops named in their comments. */
struct Node {
  Op op = Op::constant;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<NodeId> operands;
  double value = 0;       ///< constant: the scalar, exact for integers up to 2^53
  int64_t int_value = 0;  ///< constant: the scalar of an integer or bool constant (u64: its bits)
  bool symbolic = false;  ///< constant: the value is `size_value`, known at run time
  IntExpr size_value;     ///< constant: a size expression such as `N` (when symbolic)
  int axis = 0;  ///< index: the axis whose position is the value; gather, scatter: the indexed one
  View view;     ///< view
  ReduceKind reduce_kind = ReduceKind::sum;  ///< reduce
  std::vector<int> axes;  ///< reduce: the reduced axes, ascending; scan: its axis
  /** reduce: the operand's points that take part, where every expression (affine in the axis
   *  variables %0, %1, ...) is >= 0; empty: all of them (a rectangular domain). */
  std::vector<IntExpr> domain;
  Op combine =
      Op::add;       ///< scan: the associative op (is_scan_combiner); scatter: is_scatter_combiner
  std::string name;  ///< input: its name; extern: the routine
  bool constant_input = false;  ///< input: marked `const` (weights) in the spec
};

/** A named result of the graph. */
struct GraphOutput {
  std::string name;
  NodeId node;
};

/** A whole composite after lowering: primitive nodes, inputs, outputs and free size variables. */
class Graph {
 public:
  std::string name;
  std::vector<Node> nodes;
  std::vector<NodeId> inputs;          ///< in declaration order
  std::vector<GraphOutput> outputs;    ///< in declaration order
  std::vector<std::string> size_vars;  ///< size variables the caller binds, in declaration order
  /** Relations of the size variables that must hold when they are bound: shape facts and shape
   *  equalities lowering could not prove (ir/size_facts.h). */
  std::vector<SizeCheck> checks;

  const Node& operator[](NodeId id) const { return nodes[id]; }
  size_t size() const { return nodes.size(); }

  NodeId add(Node n);
  NodeId input(const std::string& name, DType t, const Shape& shape, bool constant_input);
  NodeId constant(DType t, const Shape& shape, double value);
  NodeId constant_int(DType t, const Shape& shape, int64_t value);
  /** A constant whose value is a size expression, evaluated once the sizes are bound. */
  NodeId constant_size(DType t, const Shape& shape, const IntExpr& value);
  NodeId index(DType t, const Shape& shape, int axis);
  /** A view of `src`; folds into `src`'s own view, and returns `src` for an identity view. */
  NodeId view(NodeId src, const View& v);
  NodeId unary(Op op, NodeId a);
  /** Result dtype is bool for comparisons, else `a`'s. */
  NodeId binary(Op op, NodeId a, NodeId b);
  /** where: dtype of `b`; mulacc: dtype of `a`. */
  NodeId ternary(Op op, NodeId a, NodeId b, NodeId c);
  NodeId cast(NodeId a, DType t, bool bitwise = false);
  /** Reduces `axes` (ascending), which keep size 1; over the points of `a` where every
   *  expression of `domain` (in %0, %1, ...) is >= 0, or all of them. */
  NodeId reduce(ReduceKind kind, NodeId a, const std::vector<int>& axes,
                const std::vector<IntExpr>& domain = {});
  /** The inclusive scan of `a` along `axis` with `combine` (is_scan_combiner): element k is
   *  a[0] combine ... combine a[k]. */
  NodeId scan(Op combine, NodeId a, int axis);
  /** `src` read along `axis` at the positions `index` holds (any integer dtype; same rank as
   *  `src`, equal to it in every other dimension): the result has index's shape and src's dtype,
   *  and is 0 where an index lies outside `[0, src.shape[axis])`. */
  NodeId gather(NodeId src, NodeId index, int axis);
  /** `base` with `src` combined into it by `combine` (is_scatter_combiner) along `axis` at the
   *  positions `index` holds (an integer tensor of src's shape, equal to base but along `axis`),
   *  in row-major order of index; positions outside `[0, base.shape[axis])` are dropped. The
   *  result has base's shape and dtype. */
  NodeId scatter(Op combine, NodeId base, NodeId index, NodeId src, int axis);
  /** A call of the extern routine `routine` (ir/externs.h) on `operands`; the routine's rule
   *  gives the result's dtype and shape. Unlike the other builders this one checks: it throws
   *  std::invalid_argument with the rule's message for an unknown routine or bad operands (a
   *  rewrite rule's guard can ask extern_result_type first and decline). */
  NodeId extern_call(const std::string& routine, const std::vector<NodeId>& operands);
};

/** Text form, one node per line: `%3 = add %1, %2 : f32[M, N]`. */
std::string graph_to_text(const Graph& g);

/** The attributes graph_to_text prints after a node's op name: an input's name, a constant's
 *  value, a view's index map, a reduction's kind and axes, an extern's routine; empty for
 *  others. */
std::string node_attributes(const Node& n);

/** "f32[M, N]": a node's dtype and shape. */
std::string node_type(const Node& n);

/** The scalar of a constant node as text: exact for integers, shortest round trip for floats. */
std::string constant_str(const Node& n);

}  // namespace kiln
