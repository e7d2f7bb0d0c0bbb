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
  size_t free = 0;        ///< the first `free` names are the left side's (the free indices)
  int axis_of(const std::string& name) const;
};

/** What one argument of a reduction in index notation says, after the reduced expression:
 *  `k` names a reduced index; `k < K` names it with the range [0, K) when K uses no index of
 *  `space`; any other comparison (<, <=, >, >=) bounds the domain (`j <= i`), and names the
 *  index on its left — else on its right — when that side is a plain name that is not a free
 *  index. */
struct ReductionArg {
  const Expr* index = nullptr;  ///< the name of the index it names, or null
  const Expr* range = nullptr;  ///< K of `k < K`, or null
  const Expr* bound = nullptr;  ///< the comparison that bounds the domain, or null
};
ReductionArg reduction_arg(const Expr& e, const IndexSpace& space);

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
  /** A domain bound `a < b` (<=, >, >=) of index notation as `e >= 0`, affine in the
   *  indices, using at least one. */
  IntExpr domain_bound(const Expr& cmp, Scope& s);
  IntExpr index_bound(const std::string& index, const Expr& bound, const IndexSpace& space,
                      Scope& s);
  /** Resolves a dtype argument (a dtype name, a type variable or a string). */
  DType eval_dtype(const Expr& e, Scope& s);

  /** Whether sizes `a` and `b` can be equal: true when the shape facts prove it, or when they
   *  neither prove nor refute it: then the equality becomes a check of the graph at `at`, named
   *  "shape equality 'a == b' (WHAT)", and is assumed from here on. False when refuted. */
  bool same_size(const IntExpr& a, const IntExpr& b, const SourceLoc& at, const std::string& what);
  /** same_size for every dimension ("dimension k of WHAT"); false for another rank or a refuted
   *  dimension, and then nothing is deferred. */
  bool same_dims(const Shape& a, const Shape& b, const SourceLoc& at, const std::string& what);

  /** Unary operators and the float primitives by name: "-", "!", "sqrt", "exp2", ... */
  Value unary(const std::string& op, const Value& a, const SourceLoc& at);

  Graph& graph() { return g_; }
  /** The iteration space while an index-notation right side is evaluated, else nullptr. */
  const IndexSpace* space() const { return space_; }
  /** The operand of a bounded reduction: its subscripts may leave their tensor outside the
   *  domain, so each one that is not in range over the whole box gets a mask (zero there). */
  Value eval_bounded(const Expr& e, Scope& s);
  const Library& library() const { return lib_; }

 private:
  void run_body(const Composite& c, Scope& s);
  Value eval_name(const Expr& e, Scope& s);
  Value eval_call(const Expr& e, Scope& s);
  /** `repeat(block, n, carried..., stacked or shared...)`, unrolled (dsl/repeat.cpp). */
  Value eval_repeat(const Expr& e, Scope& s);
  /** A size variable of the top composite: symbolic (a graph size variable) unless fixed. */
  IntExpr top_size(const std::string& name, const LowerOptions& opt);
  void bind_inputs(const Composite& c, const std::vector<Value>& args, Scope& s,
                   const SourceLoc& at);
  void check_outputs(const Composite& c, Scope& s);
  /** Evaluates the shape facts of `c` in `s` (its sizes bound): a proved fact is dropped, a
   *  refuted one is an error at the fact, any other becomes a check of the graph. */
  void assume_facts(const Composite& c, Scope& s);
  /** Makes `r` a check of the graph at `at` with the call sites as its trace, and assumes it;
   *  `stated` for a fact of `where`. */
  void defer(const SizeRelation& r, const std::string& claim, const SourceLoc& at, bool stated);
  Shape declared_shape(const Param& p, Scope& s);

  const Library& lib_;
  Graph& g_;
  std::vector<const Composite*> active_;
  const IndexSpace* space_ = nullptr;
  int bounded_ = 0;  ///< how many bounded reductions enclose the expression evaluated
  SizeFacts facts_;  ///< every fact stated, proved or deferred so far
  std::vector<SourceLoc>
      sites_;  ///< the call sites of the composites being lowered, outermost first
};

/** True when `name` appears in a dimension of an input or output type of `c`. */
bool names_size_variable(const Composite& c, const std::string& name);

/** True when `e` uses an index variable `%k` (it is an index, not a size). */
bool has_index_vars(const IntExpr& e);

/** Reports a value where a tensor or number was needed. */
[[noreturn]] void type_error(const SourceLoc& at, const std::string& message);

/** A float as messages show it, in its shortest form: 0.5, 1e-06, inf. */
std::string number_text(double x);

}  // namespace kiln
