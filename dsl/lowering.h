/** \file
 * Internal to dsl/: the state of lowering one composite instantiation, shared by lower.cpp
 * (composites, statements, operators, broadcasting), builtins.cpp (builtin functions) and
 * index_notation.cpp (statements like `C[m, n] = sum(A[m, k] * B[k, n], k)`).
 */
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dsl/lower.h"

namespace kiln {

/** What a body expression evaluates to: a tensor in the graph or a compile-time value.
 *  Integers may be symbolic (sizes such as `N`, or index variables in index notation). */
struct Value {
  /** `wide`: an integer literal in [2^63, 2^64), a u64 value: `integer` holds its bits and
   *  `number` its value; it only becomes a tensor (no compile-time arithmetic). */
  enum class Kind { tensor, integer, number, boolean, string, list, dtype, wide };
  Kind kind = Kind::integer;
  NodeId node = -1;
  IntExpr integer;
  double number = 0;
  std::string string;
  std::vector<Value> list;
  DType dtype = DType::f32;

  static Value tensor(NodeId n);
  static Value of_int(IntExpr e);
  static Value of_number(double d);
  static Value of_bool(bool b);
  static Value of_dtype(DType t);
  static Value of_attr(const AttrValue& a);
  bool is_tensor() const { return kind == Kind::tensor; }
  bool is_scalar() const {
    return kind == Kind::integer || kind == Kind::number || kind == Kind::boolean ||
           kind == Kind::wide;
  }
  /** Short description for messages: "f32[M, N]", "the integer 3", ... */
  std::string describe(const Graph& g) const;
};

/** The iteration space of one index-notation statement: free indices, then reduced ones. */
struct IndexSpace {
  std::vector<std::string> names;
  Shape ranges;
  /** How many free indices a leading `...` on the left stands for (named `...0`, `...1`, ...,
   *  first among the names): the batch dimensions. */
  size_t batch = 0;
  bool ellipsis = false;  ///< the left side starts with `...`
  int axis_of(const std::string& name) const;
};

/** The index a reduction names: `k`, or `k < K` (k ranges over [0, K)); null when `e` is
 *  neither. `bound`, when given, gets K or null. */
const Expr* reduced_index(const Expr& e, const Expr** bound = nullptr);

/** One composite instantiation's names. */
struct Scope {
  const Composite* comp = nullptr;
  std::map<std::string, Value> vars;
  std::map<std::string, Value> attrs;
  std::map<std::string, IntExpr> sizes;
  std::map<std::string, DType> types;
  Shape batch;
  bool has_batch = false;
};

/** Lowers bodies into one graph. */
class Lowerer {
 public:
  Lowerer(const Library& lib, Graph& g) : lib_(lib), g_(g) {}

  /** Inlines composite `c` applied to `args`; returns its outputs in declaration order. */
  std::vector<NodeId> call(const Composite& c, const std::vector<Value>& args,
                           const std::vector<Arg>& kwargs, Scope* caller, const SourceLoc& at);
  /** Binds a composite's scope for the top-level graph and lowers it. */
  std::vector<NodeId> lower_top(const Composite& c, const LowerOptions& opt);

  Value eval(const Expr& e, Scope& s);
  /** Evaluates to a compile-time integer expression (sizes, axes, subscripts). */
  IntExpr eval_int(const Expr& e, Scope& s, const std::string& what);
  /** A tensor from `v`; scalars become constants of dtype `t` and shape `shape`. */
  NodeId as_tensor(const Value& v, DType t, const Shape& shape, const SourceLoc& at);
  /** The shape a scalar takes as a tensor: rank 0, or inside index notation size 1 on every
   *  axis except those of the index variables it uses. */
  Shape scalar_shape(const Value& v) const;
  /** A tensor operand; anything else is an error naming `what`. */
  NodeId require_tensor(const Value& v, const SourceLoc& at, const std::string& what);
  /** Broadcasts tensors to one shape (NumPy rules from the right). */
  std::vector<NodeId> broadcast(const std::vector<NodeId>& xs, const SourceLoc& at,
                                const std::string& what);
  NodeId broadcast_to(NodeId x, const Shape& shape, const SourceLoc& at);
  /** Applies a binary operator with weak scalar typing and broadcasting. */
  Value binary(const std::string& op, const Value& a, const Value& b, const SourceLoc& at);
  /** `a ** b` for a tensor exponent: integers by square and multiply over every bit of b (exact,
   *  wrapping like mul; b < 0 gives 1 / a^-b truncated: 0 unless |a| is 1); floats as
   *  exp2(b * log2(a)). */
  Value power(const Value& a, const Value& b, const SourceLoc& at);
  /** Converts scalars next to tensor operands; checks that the dtypes agree. */
  std::vector<NodeId> unify(const std::vector<Value>& vs, const SourceLoc& at,
                            const std::string& what);
  Value call_builtin(const Expr& call, Scope& s);
  void index_statement(const BodyStatement& st, Scope& s);
  Value index_access(const Expr& sub, Scope& s);
  /** A subscript's items, one per dimension of `base`: its `...` becomes the dimensions the
   *  other items leave, named after the left side's `...` (right-aligned). */
  std::vector<ExprPtr> subscript_items(const Expr& sub, NodeId base, const IndexSpace& space);
  /** The range [0, K) of an index bounded as `i < K`: K, which may use sizes and attributes but
   *  no index of `space`. */
  IntExpr index_bound(const std::string& index, const Expr& bound, const IndexSpace& space,
                      Scope& s);
  /** Resolves a dtype argument (a dtype name, a type variable or a string). */
  DType eval_dtype(const Expr& e, Scope& s);

  /** Unary operators and the float primitives by name: "-", "!", "sqrt", "exp2", ... */
  Value unary(const std::string& op, const Value& a, const SourceLoc& at);

  Graph& graph() { return g_; }
  /** The iteration space while an index-notation right side is evaluated, else nullptr. */
  const IndexSpace* space() const { return space_; }
  const Library& library() const { return lib_; }

 private:
  void run_body(const Composite& c, Scope& s);
  Value eval_name(const Expr& e, Scope& s);
  Value eval_call(const Expr& e, Scope& s);
  /** A size variable of the top composite: symbolic (a graph size variable) unless fixed. */
  IntExpr top_size(const std::string& name, const LowerOptions& opt);
  void bind_inputs(const Composite& c, const std::vector<Value>& args, Scope& s,
                   const SourceLoc& at);
  void check_outputs(const Composite& c, Scope& s);
  Shape declared_shape(const Param& p, Scope& s);

  const Library& lib_;
  Graph& g_;
  std::vector<const Composite*> active_;
  const IndexSpace* space_ = nullptr;
};

/** Reports a value where a tensor or number was needed. */
[[noreturn]] void type_error(const SourceLoc& at, const std::string& message);

/** A float as messages show it, in its shortest form: 0.5, 1e-06, inf. */
std::string number_text(double x);

}  // namespace kiln
