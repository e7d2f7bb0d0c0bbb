/** \file
 * The kernel IR: what the scheduler hands to isl and the backends render. A kernel is a list of
 * statements; each statement writes one element of a buffer at every point of its rectangular
 * domain `0 <= i_k < extents[k]` (iterators are the IntExpr variables "i0", "i1", ...; size
 * variables are parameters). Values are scalar expression trees whose leaves load buffers at
 * index expressions of the iterators. A `call` statement instead runs an extern routine
 * (ir/externs.h) once, on whole row-major buffers. Built from a graph by
 * scheduler/build_statements.h.
 */
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

/** Where a buffer's memory comes from. */
enum class BufferKind { input, output, temp };

/** A named region of memory: a graph input, a graph output, or an intermediate. */
struct Buffer {
  std::string name;  ///< a C identifier
  DType dtype = DType::f32;
  Shape shape;
  BufferKind kind = BufferKind::temp;
  int arg = -1;   ///< input/output: position in the kernel's buffer arguments
  int slot = -1;  ///< temp: the memory slot it shares (scheduler/plan_buffers.h)
  /** input: marked `const` in the spec (a weight): the same buffer holds the same values from
   *  call to call, so a kernel may keep a packed copy of it (backends/packed_weights.h). */
  bool constant = false;
  /** A window (scheduler/window_buffers.h): the elements of buffer `window_of` (an input or
   *  output) from `window_offset` on, as a kernel that reads them at one fixed leading index
   *  sees them; `arg` is that buffer's. The kernel takes a pointer to the window's first
   *  element, so kernels that differ only in that index run one code (share_kernels.h). */
  int window_of = -1;
  IntExpr window_offset;  ///< window: the first element's offset in `window_of`, in elements
};

/** Whether `b` is a caller's buffer (an input or output argument) and not a window of one. */
inline bool is_argument(const Buffer& b) {
  return b.kind != BufferKind::temp && b.window_of < 0;
}

struct ScalarExpr;
using ScalarExprPtr = std::shared_ptr<const ScalarExpr>;

/** A scalar computation at one domain point. Subexpressions may be shared (the value is a DAG);
 *  renderers bind a shared one to a local once. */
struct ScalarExpr {
  enum class Kind { load, constant, iterator, op } kind = Kind::constant;
  DType dtype = DType::f32;
  Op op = Op::add;                  ///< op: a unary, binary, ternary op, cast or bitcast
  std::vector<ScalarExprPtr> args;  ///< op: operands; gather load: [its position] (kGatherVar)
  int buffer = -1;                  ///< load: the buffer read
  std::vector<IntExpr> index;       ///< load: one index per buffer dimension; iterator: [expr]
  std::vector<MaskBound> mask;      ///< any kind: the value is 0 unless every bound holds
  double value = 0;                 ///< constant (floats)
  int64_t int_value = 0;            ///< constant (integers, bool; u64: its bits)
  bool symbolic = false;            ///< constant: the value is `size_value`
  IntExpr size_value;               ///< constant: a size expression
};

/** The variable that a gather load's index and mask may use: a load with one argument reads
 *  where `$g` is that argument's value (an integer), and its mask holds `0 <= $g < n`, so an
 *  index outside the gathered dimension reads 0. Nothing but a gather load binds it; isl sees
 *  an index that uses it as the whole dimension (scheduler/schedule_kernel.cpp). */
inline constexpr const char* kGatherVar = "$g";

/** Whether `e` is a gather load: a load whose position along one dimension is a value. */
inline bool is_gather(const ScalarExpr& e) {
  return e.kind == ScalarExpr::Kind::load && !e.args.empty();
}

/** Whether any load of `e` is a gather load. */
bool has_gather(const ScalarExpr& e);

struct Statement;
/** The position a scatter statement writes at (the argument of its value's first operand). */
const ScalarExpr& scatter_position(const Statement& s);

/** One statement: `buffer[index] = value`, or an accumulation into it; or, for `call`, the
 *  whole of `buffer` = routine(whole argument buffers), with a 0-dimensional domain.
 *
 *  A `scatter` statement (the scatter primitive) writes where its index uses kGatherVar, in
 *  one dimension: its value is `combine(self, v)` (add, mul or max), `self` a gather load of
 *  `buffer` at `index` whose one argument is the position, the value `$g` stands for, and
 *  whose mask holds `0 <= $g < n`. At a point whose position is outside `[0, n)` it writes
 *  nothing (under bounds checks it traps). Every pass that walks loads thus sees the position's
 *  loads and the read of the target; isl sees the write and that read as the whole scattered
 *  dimension, so loops that move the position run in order and the others stay parallel. */
struct Statement {
  enum class Kind { assign, reduce_init, reduce_update, call, scatter };
  std::string name;  ///< S0, S1, ... (isl statement names)
  Kind kind = Kind::assign;
  ReduceKind reduce = ReduceKind::sum;  ///< reduce_init / reduce_update
  std::vector<IntExpr> extents;         ///< the domain: 0 <= i_k < extents[k]
  /** More bounds of the domain (a bounded reduction's triangle or band): the points where
   *  every expression, affine in the iterators and sizes, is >= 0. */
  std::vector<IntExpr> domain;
  /** Bounds outside which no reader reads what the statement writes (scheduler/tile_bounded.h
   *  sets them on a sum it made rectangular): a transform may skip those points of the domain
   *  (register_tile.h narrows its lane tiles to them). Empty: every point is read. */
  std::vector<IntExpr> needed;
  int buffer = -1;             ///< the buffer written
  std::vector<IntExpr> index;  ///< where it writes, affine in the iterators
  ScalarExprPtr value;         ///< assign, reduce_update and scatter: the value (for update:
                               ///< the operand folded into the buffer element)
  std::string routine;         ///< call: the extern routine, e.g. "gemm"
  std::vector<int> args;       ///< call: the buffers it reads, contiguous row-major
};

/** One kernel: statements in a legal sequential order, and the buffers they use. */
struct Kernel {
  std::string name;
  std::vector<Statement> statements;
  /** Every buffer the statements touch, in increasing order: the kernel's parameters, in which
   *  order its code takes them (kernel_params). */
  std::vector<int> buffers;
  /** Another kernel, earlier in the plan, whose code this one runs with its own buffers
   *  (scheduler/share_kernels.h); -1: its own code. */
  int code_of = -1;
};

/** A graph lowered to kernels: the buffers and the kernels in execution order. */
struct KernelPlan {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<std::string> size_vars;  ///< the graph's size variables, in order
  int num_slots = 0;                   ///< temp memory slots after buffer planning
};

/** The kernel whose code kernel `k` runs (Kernel::code_of), `k` itself when its own. */
size_t code_kernel(const KernelPlan& plan, size_t k);

/** The most buffer parameters any kernel of `plan` takes (Kernel::buffers). A launch passes
 *  kernel k its buffers in that order, then (a CPU kernel that keeps packed panels) its
 *  workspace; a CUDA kernel's parameter struct holds this many (backends/cuda_renderer.h). */
size_t kernel_params(const KernelPlan& plan);

/** The name of iterator k: "i0", "i1", ... */
std::string iterator_name(int k);

/** Buffer reads of an expression tree: (buffer, index) for every load, in evaluation order. */
void collect_loads(const ScalarExpr& e, std::vector<const ScalarExpr*>& out);

/** Whether `e` reads any of the iterators `vars` (in an index, a mask or an iterator value). */
bool uses_vars(const ScalarExpr& e, const std::set<std::string>& vars);

/** Whether a load of `s`'s value is reused along an iterator of the element `s` writes (one of
 *  extent other than 1 that the load does not use): a matmul's a along j; not a row sum's or a
 *  pooling's input, each of whose elements is read once. */
bool reuses_a_load(const Statement& s);

/** `e` with its iterators replaced by `sub` wherever they appear (loads' indices, masks,
 *  iterator values); a load of `buffer` at `at` reads at `to` instead (where the substitution
 *  alone would leave a division the caller knows to be exact). Shared parts stay shared. */
ScalarExprPtr substitute_iterators(const ScalarExprPtr& e,
                                   const std::map<std::string, IntExpr>& sub, int buffer = -1,
                                   const std::vector<IntExpr>& at = {},
                                   const std::vector<IntExpr>& to = {});

/** Whether `e` reads memory or an iterator anywhere: not a constant of numbers and sizes. */
bool varies(const ScalarExpr& e);

/** The subexpression of `root` that `path` leads to (child indices, outermost first). */
const ScalarExpr& subexpression(const ScalarExpr& root, const std::vector<int>& path);

/** Whether `e` can be computed across vector lanes along the iterators `vars`, in dtype `t`:
 *  every subexpression that uses them is a load of a `t` buffer (whose mask bounds, if any,
 *  move by -1, 0 or +1 along each of `vars`), or `+`, `×`,
 *  negation, copy or multiply-add of such values, all of dtype `t`, or a `where` of two such
 *  values whose condition does not use them; the parts that do not use them are scalars,
 *  whatever they compute (scheduler/register_tile.h). */
bool lane_value(const KernelPlan& plan, const ScalarExpr& e, const std::set<std::string>& vars,
                DType t);

/** "input", "output", "temp". */
const char* buffer_kind_name(BufferKind k);

/** One statement as plan_to_text prints it: "S1 {i0 < N}: y[i0] = mul(x[i0], 2)". */
std::string statement_to_text(const KernelPlan& plan, const Statement& st);

/** Text of a plan for `kiln show --stage kernels`. */
std::string plan_to_text(const KernelPlan& plan);

}  // namespace kiln
