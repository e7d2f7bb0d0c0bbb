/* Semantics of the reference interpreter.
 *
 * - Nodes are evaluated in order (operands precede users). A node's concrete dims are
 *   eval_shape(node.shape, sizes). Every input tensor must match its input node's dtype and dims.
 * - Float dtypes compute in double and are not rounded after each op; only `cast` (and constants
 *   and `index`, which are values of their dtype) round to the node's float dtype. Integer and bool
 *   dtypes compute exactly in int64 and wrap to the node's dtype after each op; bool is 0/1.
 * - constant: every element the scalar (a symbolic one evaluates its size expression). index: the
 * element's coordinate along `axis`.
 * - view: for each output multi-index bind %0..%r-1, evaluate the mask bounds (an element failing
 *   `0 <= expr < bound` reads 0) and the source index; a source index out of range is an error.
 * - copy: identity. cast: float->float rounds to nearest even; float->int truncates toward zero,
 *   NaN gives 0 and values outside the target's range saturate to its min or max; int->float is
 *   exact then rounded (to f32 in one step, as C converts); ->bool is (v != 0); int->int
 *   wraps.
 * - bitcast: reinterprets the bits between types of equal width (f32 values are first rounded to
 *   f32, f16/bf16 to their format); different widths are an error.
 * - unary: neg, recip (1/x), sqrt, exp2, log2, sin (floats only but neg), not (bool: logical,
 *   integers: bitwise ~).
 * - binary on integers: add, mul wrap; max; idiv truncates toward zero and mod has the sign of the
 *   dividend (C semantics), both raise on a zero divisor; and, or, xor bitwise; shl, shr take the
 *   shift amount modulo the bit width, shr is arithmetic for signed types and logical for unsigned
 * ones. Unsigned types compute modulo 2^bits: u64 values above 2^63 - 1 are held as their bits and
 *   compared, divided, shifted and converted to float as unsigned (ir/dtype.h).
 * - binary on floats: add, mul, max (NaN if either operand is NaN), mod (std::fmod); idiv and the
 *   bitwise ops are errors. cmplt, cmpeq give bool for any operand dtype; NaN compares false.
 * - where(cond, a, b) = cond != 0 ? a : b. mulacc(a, b, c) = a*b + c, fused (std::fma) for floats.
 * - reduce: sum (from 0), prod (from 1) and max (from -inf, NaN propagates; integers from the
 *   dtype's minimum) over the listed axes in row-major order; reduced axes keep size 1. A
 *   reduce with a domain combines only the operand's points where every bound is >= 0.
 * - scan: element k along the axis is the operand's element 0 combined with elements 1 .. k in
 *   order by add, mul, max (as the binary ops) or and, or, xor.
 * - gather(src, index) along `axis`: out[p] = src[p with p[axis] := index[p]] for an index in
 *   [0, src dims[axis]); an index outside that range (negative ones included: no wrapping) reads 0,
 *   or is an error when checked (--config CHECK=1).
 * - scatter(base, index, src) along `axis`: out = base, then for every position p of index in
 *   row-major order out[p with p[axis] := index[p]] = out[..] combine src[p] (add, mul or max, as
 *   the binary ops); a position outside [0, base dims[axis]) is dropped, or is an error when
 *   checked.
 * - extern: the routine's reference evaluation from ir/externs.h, in double (gemm: the naive
 *   triple loop summing over k in order, as a reduce sum of products does); an unknown routine or
 *   operands its rule rejects are errors.
 */
#include "ir/interpreter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>

#include "ir/externs.h"
#include "ir/sizes.h"

namespace kiln {

namespace {

using Env = std::map<std::string, int64_t>;

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t k = 0; k < d.size(); ++k)
    s += (k ? ", " : "") + std::to_string(d[k]);
  return s + "]";
}

std::string dtype_str(DType t) {
  return std::string(dtype_name(t));
}

[[noreturn]] void fail(NodeId id, const Node& n, const std::string& what) {
  throw std::runtime_error("%" + std::to_string(id) + " (" + std::string(op_name(n.op)) +
                           "): " + what);
}

int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

int64_t int_at(const Tensor& t, size_t k) {
  return is_float(t.dtype) ? float_to_int(DType::i64, t.f[k]) : t.i[k];
}

/** Stores a double result into `out`, converting like `cast` if `out` is not a float tensor. */
void put_float(Tensor& out, size_t k, double v) {
  if (is_float(out.dtype))
    out.f[k] = v;
  else
    out.i[k] = float_to_int(out.dtype, v);
}

/** Stores an exact integer result of dtype `from` into `out`, wrapping it to out's dtype. */
void put_int(Tensor& out, size_t k, int64_t v, DType from) {
  if (is_float(out.dtype))
    out.f[k] = int_to_double(from, v);
  else
    out.i[k] = wrap_int(out.dtype, v);
}

/** Stores element `j` of `src` as element `k` of `out`, converting like `cast` (no rounding). */
void put_element(Tensor& out, size_t k, const Tensor& src, size_t j) {
  if (is_float(src.dtype))
    put_float(out, k, src.f[j]);
  else
    put_int(out, k, src.i[j], src.dtype);
}

double float_unary(Op op, double v) {
  if (op == Op::neg) return -v;
  if (op == Op::recip) return 1 / v;
  if (op == Op::sqrt) return std::sqrt(v);
  if (op == Op::exp2) return std::exp2(v);
  if (op == Op::log2) return std::log2(v);
  return std::sin(v);
}

int64_t int_unary(Op op, DType t, int64_t v) {
  if (op == Op::neg) return wrapping_mul(v, -1);
  return t == DType::boolean ? !v : ~v;  // not
}

bool defined_on_floats(Op op) {
  return op == Op::add || op == Op::mul || op == Op::max || op == Op::mod || op == Op::cmplt ||
         op == Op::cmpeq;
}

double float_binary(Op op, double a, double b) {
  if (op == Op::add) return a + b;
  if (op == Op::mul) return a * b;
  if (op == Op::max) return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  if (op == Op::mod) return std::fmod(a, b);
  if (op == Op::cmplt) return a < b;
  return a == b;  // cmpeq
}

/** idiv, mod, max, shr and cmplt on two u64 values held as their bits. */
int64_t u64_binary(Op op, uint64_t a, uint64_t b, int shift) {
  if (op == Op::idiv) return static_cast<int64_t>(a / b);
  if (op == Op::mod) return static_cast<int64_t>(a % b);
  if (op == Op::max) return static_cast<int64_t>(std::max(a, b));
  if (op == Op::shr) return static_cast<int64_t>(a >> shift);
  return a < b;  // cmplt
}

/** `op` on two integers of dtype `t`; the caller wraps the result to the node's dtype. */
int64_t int_binary(NodeId id, Op op, DType t, int64_t a, int64_t b) {
  int bits = dtype_bits(t);
  int shift = static_cast<int>(((b % bits) + bits) % bits);
  if ((op == Op::idiv || op == Op::mod) && b == 0)
    throw std::runtime_error("integer division by zero in node %" + std::to_string(id));
  if (t == DType::u64 &&
      (op == Op::idiv || op == Op::mod || op == Op::max || op == Op::shr || op == Op::cmplt))
    return u64_binary(op, static_cast<uint64_t>(a), static_cast<uint64_t>(b), shift);
  if (op == Op::add) return wrapping_add(a, b);
  if (op == Op::mul) return wrapping_mul(a, b);
  if (op == Op::max) return std::max(a, b);
  if (op == Op::idiv) return b == -1 ? wrapping_mul(a, -1) : a / b;  // INT64_MIN / -1 wraps
  if (op == Op::mod) return b == -1 ? 0 : a % b;
  if (op == Op::bit_and) return a & b;
  if (op == Op::bit_or) return a | b;
  if (op == Op::bit_xor) return a ^ b;
  if (op == Op::shl) return static_cast<int64_t>(static_cast<uint64_t>(a) << shift);
  if (op == Op::shr) return a >> shift;  // sign-extended for signed types, logical for unsigned
  if (op == Op::cmplt) return a < b;
  return a == b;  // cmpeq
}

/** One index expression of a view with the sizes substituted. Affine ones (most views) are
 *  evaluated from coefficients; the others through IntExpr::eval with %k bound in `env`. */
struct IndexFn {
  IntExpr expr;
  bool affine = false;
  int64_t constant = 0;
  std::vector<int64_t> coeff;

  int64_t operator()(const std::vector<int64_t>& idx, const Env& env) const {
    if (!affine) return expr.eval(env);
    int64_t v = constant, term = 0;
    for (size_t k = 0; k < idx.size(); ++k)
      if (__builtin_mul_overflow(coeff[k], idx[k], &term) || __builtin_add_overflow(v, term, &v))
        throw std::overflow_error("the view's index " + expr.str() + " overflows int64");
    return v;
  }
};

/** Compiles `e`; finds an affine expression's coefficients by evaluating it at unit vectors.
 *  `slots` point at the %k entries of `env`, all zero. */
IndexFn compile_index(const IntExpr& e, const std::map<std::string, IntExpr>& sizes, Env& env,
                      const std::vector<int64_t*>& slots) {
  IndexFn f;
  f.expr = e.substitute(sizes);
  f.affine = f.expr.is_affine();
  if (!f.affine) return f;
  f.constant = f.expr.eval(env);
  for (int64_t* slot : slots) {
    *slot = 1;
    f.coeff.push_back(f.expr.eval(env) - f.constant);
    *slot = 0;
  }
  return f;
}

/** The bound sizes as IntExpr constants, to substitute into index expressions. */
std::map<std::string, IntExpr> size_substitution(const SizeBindings& sizes) {
  std::map<std::string, IntExpr> out;
  for (const auto& [name, value] : sizes)
    out[name] = value;
  return out;
}

/** The entries %0 .. %(rank - 1) of `env`, all zero, for compile_index. */
std::vector<int64_t*> index_slots(Env& env, size_t rank) {
  std::vector<int64_t*> slots;
  for (size_t d = 0; d < rank; ++d)
    slots.push_back(&env["%" + std::to_string(d)]);
  return slots;
}

/** Advances a row-major multi-index. */
void next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t d = idx.size(); d-- > 0;) {
    idx[d] = idx[d] + 1 < dims[d] ? idx[d] + 1 : 0;
    if (idx[d] != 0) return;
  }
}

/** Whether `op` computes each element from its operands' elements at the same position alone
 *  (eval_elementwise's ops), so that it may be computed where read. */
bool lazy_op(Op op) {
  return op != Op::input && op != Op::constant && op != Op::index && op != Op::view &&
         op != Op::reduce && op != Op::scan && op != Op::extern_call && op != Op::gather &&
         op != Op::scatter;
}

/** A node's elements computed where they are read instead of stored: a large view or
 *  elementwise value that only reductions, views and other such values read. The product
 *  `a[m, k] * b[k, n]` a matmul sums is M · N · K elements, 8 GiB at 1024³ for each of its two
 *  broadcasts and for itself; read where the reduction reads it, it takes none. */
class Lazy {
 public:
  Lazy(DType dtype, std::vector<int64_t> dims) : dtype(dtype), dims(std::move(dims)) {}
  virtual ~Lazy() = default;
  /** Sets element 0 of `out` (one element of this node's dtype) to the element at `idx`. */
  virtual void element(const std::vector<int64_t>& idx, Tensor& out) const = 0;
  const DType dtype;
  const std::vector<int64_t> dims;
};

/** A one-element tensor of `t`, for a Lazy's element. */
Tensor scalar_tensor(DType t) {
  return Tensor(t, {1});
}

/** The row-major offset of `idx` in `dims`. */
size_t offset_of(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  size_t o = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    o = o * static_cast<size_t>(dims[d]) + static_cast<size_t>(idx[d]);
  return o;
}

/** A node's value: a tensor, or its elements computed where read. */
struct Value {
  Tensor t;
  std::unique_ptr<Lazy> lazy;
};

/** Element `idx` of `v` into one-element `scratch` (v's dtype); returns where to read it. */
std::pair<const Tensor*, size_t> element_of(const Value& v, const std::vector<int64_t>& idx,
                                            Tensor& scratch) {
  if (!v.lazy) return {&v.t, offset_of(idx, v.t.dims)};
  v.lazy->element(idx, scratch);
  return {&scratch, 0};
}

/** The view's index and mask maps, compiled for the bound sizes. */
struct ViewMaps {
  Env env;  // the %k bindings
  std::vector<int64_t*> slots;
  std::vector<IndexFn> index, mask;
  std::vector<int64_t> bound;  // mask bounds are size expressions

  ViewMaps(const Node& n, size_t rank, const SizeBindings& sizes) {
    const std::map<std::string, IntExpr> size_sub = size_substitution(sizes);
    slots = index_slots(env, rank);
    for (const IntExpr& e : n.view.index)
      index.push_back(compile_index(e, size_sub, env, slots));
    for (const MaskBound& m : n.view.mask) {
      mask.push_back(compile_index(m.expr, size_sub, env, slots));
      bound.push_back(m.bound.eval(sizes));
    }
  }

  /** Whether output element `idx` reads its source (its mask holds), and where, into `at`. */
  bool source(NodeId id, const std::vector<int64_t>& idx, const std::vector<int64_t>& src_dims,
              std::vector<int64_t>& at) {
    for (size_t d = 0; d < slots.size(); ++d)
      *slots[d] = idx[d];
    for (size_t m = 0; m < mask.size(); ++m) {
      int64_t v = mask[m](idx, env);
      if (v < 0 || v >= bound[m]) return false;
    }
    for (size_t d = 0; d < at.size(); ++d) {
      at[d] = index[d](idx, env);
      if (at[d] < 0 || at[d] >= src_dims[d])
        throw std::runtime_error("view reads outside its source: %" + std::to_string(id) + " at " +
                                 dims_str(idx) + " reads " + dims_str(at) +
                                 " of a source with dims " + dims_str(src_dims));
    }
    return true;
  }
};

Tensor eval_view(NodeId id, const Node& n, const Value& src, const std::vector<int64_t>& dims,
                 const SizeBindings& sizes) {
  const std::vector<int64_t>& src_dims = src.lazy ? src.lazy->dims : src.t.dims;
  if (n.view.index.size() != src_dims.size())
    fail(id, n, "the view's rank does not match its source's");
  // An empty view reads nothing: its index maps may divide by a size that is 0.
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return Tensor(n.dtype, dims);
  ViewMaps maps(n, dims.size(), sizes);
  std::vector<int64_t> idx(dims.size(), 0), at(src_dims.size());
  Tensor out(n.dtype, dims);
  Tensor scratch = scalar_tensor(src.lazy ? src.lazy->dtype : src.t.dtype);
  for (size_t k = 0; k < out.numel(); ++k, next_index(idx, dims)) {
    if (!maps.source(id, idx, src_dims, at)) continue;  // out is zero-initialised
    auto [from, j] = element_of(src, at, scratch);
    put_element(out, k, *from, j);
  }
  return out;
}

/** A view read where its user reads it. */
class LazyView : public Lazy {
 public:
  LazyView(NodeId id, const Node& n, const Value& src, const std::vector<int64_t>& dims,
           const SizeBindings& sizes)
      : Lazy(n.dtype, dims),
        id_(id),
        src_(src),
        src_dims_(src.lazy ? src.lazy->dims : src.t.dims),
        maps_(n, dims.size(), sizes),
        at_(src_dims_.size()),
        scratch_(scalar_tensor(src.lazy ? src.lazy->dtype : src.t.dtype)) {
    if (n.view.index.size() != src_dims_.size())
      fail(id, n, "the view's rank does not match its source's");
  }
  void element(const std::vector<int64_t>& idx, Tensor& out) const override {
    if (!maps_.source(id_, idx, src_dims_, at_)) {
      if (is_float(out.dtype))
        out.f[0] = 0;
      else
        out.i[0] = 0;
      return;
    }
    auto [from, j] = element_of(src_, at_, scratch_);
    put_element(out, 0, *from, j);
  }

 private:
  NodeId id_;
  const Value& src_;
  std::vector<int64_t> src_dims_;
  mutable ViewMaps maps_;
  mutable std::vector<int64_t> at_;
  mutable Tensor scratch_;
};

Tensor eval_reduce(NodeId id, const Node& n, const Value& operand, const std::vector<int64_t>& dims,
                   const SizeBindings& sizes) {
  const std::vector<int64_t>& a_dims = operand.lazy ? operand.lazy->dims : operand.t.dims;
  std::vector<size_t> out_stride(a_dims.size(), 0);  // 0 along reduced axes
  bool ok = a_dims.size() == dims.size();
  size_t stride = 1;
  for (size_t d = a_dims.size(); ok && d-- > 0;) {
    bool reduced = std::find(n.axes.begin(), n.axes.end(), int(d)) != n.axes.end();
    ok = dims[d] == (reduced ? 1 : a_dims[d]);
    if (!reduced) out_stride[d] = stride;
    stride *= static_cast<size_t>(dims[d]);
  }
  if (!ok) fail(id, n, "operand dims " + dims_str(a_dims) + " do not reduce to " + dims_str(dims));
  Op op = n.reduce_kind == ReduceKind::sum    ? Op::add
          : n.reduce_kind == ReduceKind::prod ? Op::mul
                                              : Op::max;
  Tensor out(n.dtype, dims);
  std::fill(out.f.begin(), out.f.end(), op == Op::add ? 0 : op == Op::mul ? 1 : -INFINITY);
  std::fill(out.i.begin(), out.i.end(),
            op == Op::add   ? 0
            : op == Op::mul ? 1
                            : int_min_of(n.dtype));
  // A bounded domain: the operand's points where every bound is >= 0 take part.
  const std::map<std::string, IntExpr> size_sub = size_substitution(sizes);
  Env env;
  const std::vector<int64_t*> slots = index_slots(env, a_dims.size());
  std::vector<IndexFn> domain;
  for (const IntExpr& e : n.domain)
    domain.push_back(compile_index(e, size_sub, env, slots));
  std::vector<int64_t> idx(a_dims.size(), 0);
  std::optional<int64_t> count = checked_product(a_dims);
  if (!count || *count < 0) fail(id, n, "the operand's element count overflows");
  Tensor scratch = scalar_tensor(operand.lazy ? operand.lazy->dtype : operand.t.dtype);
  for (size_t k = 0; k < static_cast<size_t>(*count); ++k, next_index(idx, a_dims)) {
    if (!domain.empty()) {
      for (size_t d = 0; d < slots.size(); ++d)
        *slots[d] = idx[d];
      bool inside = true;
      for (size_t c = 0; c < domain.size() && inside; ++c)
        inside = domain[c](idx, env) >= 0;
      if (!inside) continue;
    }
    size_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      o += out_stride[d] * static_cast<size_t>(idx[d]);
    const Tensor* a = &operand.t;
    size_t j = k;
    if (operand.lazy) {
      operand.lazy->element(idx, scratch);
      a = &scratch, j = 0;
    }
    if (is_float(n.dtype))
      out.f[o] = float_binary(op, out.f[o], a->at(j));
    else
      put_int(out, o, int_binary(id, op, n.dtype, out.i[o], int_at(*a, j)), n.dtype);
  }
  return out;
}

/** The inclusive scan along n.axes[0]: each element combines the one before it with its own
 *  operand element, in order (in double for floats, as the other ops). */
Tensor eval_scan(NodeId id, const Node& n, const Tensor& a, const std::vector<int64_t>& dims) {
  if (a.dims != dims)
    fail(id, n, "operand dims " + dims_str(a.dims) + " differ from " + dims_str(dims));
  const size_t axis = static_cast<size_t>(n.axes.at(0));
  size_t inner = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d)
    inner *= static_cast<size_t>(dims[d]);
  const size_t len = static_cast<size_t>(dims[axis]);
  Tensor out(n.dtype, dims);
  for (size_t k = 0; k < a.numel(); ++k) {
    const bool first = (k / inner) % len == 0;
    if (is_float(n.dtype)) {
      double v = a.at(k);
      put_float(out, k, first ? v : float_binary(n.combine, out.f[k - inner], v));
    } else {
      int64_t v = int_at(a, k);
      put_int(out, k, first ? v : int_binary(id, n.combine, n.dtype, out.i[k - inner], v), n.dtype);
    }
  }
  return out;
}

void check_elementwise(NodeId id, const Node& n, const std::vector<const Tensor*>& args,
                       const std::vector<int64_t>& dims) {
  for (const Tensor* a : args)
    if (a->dims != dims)
      fail(id, n, "operand dims " + dims_str(a->dims) + " differ from " + dims_str(dims));
  DType t = args[0]->dtype;
  OpClass cls = op_info(n.op).cls;
  bool float_only = cls == OpClass::unary && n.op != Op::neg && n.op != Op::logical_not;
  if (float_only && !is_float(t)) fail(id, n, "needs a float operand, got " + dtype_str(t));
  if (n.op == Op::logical_not && is_float(t)) fail(id, n, "needs an integer or bool operand");
  if (cls == OpClass::binary && is_float(t) && !defined_on_floats(n.op))
    fail(id, n, "is not defined for float operands (" + dtype_str(t) + ")");
  if (cls == OpClass::binary && args[1]->dtype != t) fail(id, n, "operand dtypes differ");
  if (n.op == Op::bitcast && dtype_bits(t) != dtype_bits(n.dtype))
    fail(id, n, "bitcast between types of different widths");
}

/** Element `k` of elementwise node `n` from element `k` of each of `args`, into `out`; a cast
 *  to a float is not rounded yet (eval_elementwise rounds the whole tensor). */
void elementwise_element(NodeId id, const Node& n, const std::vector<const Tensor*>& args,
                         Tensor& out, size_t k) {
  const Tensor& a = *args[0];
  bool fl = is_float(a.dtype);
  OpClass cls = op_info(n.op).cls;
  {
    if (n.op == Op::cast && n.dtype == DType::f32 && !fl)  // one rounding, as C converts
      out.f[k] = a.dtype == DType::u64 ? static_cast<float>(static_cast<uint64_t>(a.i[k]))
                                       : static_cast<float>(a.i[k]);
    else if (n.op == Op::copy || n.op == Op::cast)
      put_element(out, k, a, k);
    else if (n.op == Op::bitcast)
      set_element_bits(out, k, element_bits(a, k));
    else if (n.op == Op::where)
      put_element(out, k, *args[a.at(k) != 0 ? 1 : 2], k);
    else if (n.op == Op::mulacc && fl)
      put_float(out, k, std::fma(a.f[k], args[1]->at(k), args[2]->at(k)));
    else if (n.op == Op::mulacc)
      put_int(out, k, wrapping_add(wrapping_mul(a.i[k], int_at(*args[1], k)), int_at(*args[2], k)),
              a.dtype);
    else if (cls == OpClass::unary && fl)
      put_float(out, k, float_unary(n.op, a.f[k]));
    else if (cls == OpClass::unary)
      put_int(out, k, int_unary(n.op, a.dtype, a.i[k]), a.dtype);
    else if (fl)
      put_float(out, k, float_binary(n.op, a.f[k], args[1]->f[k]));
    else
      put_int(out, k, int_binary(id, n.op, a.dtype, a.i[k], args[1]->i[k]), a.dtype);
  }
}

Tensor eval_elementwise(NodeId id, const Node& n, const std::vector<const Tensor*>& args,
                        const std::vector<int64_t>& dims) {
  check_elementwise(id, n, args, dims);
  Tensor out(n.dtype, dims);
  for (size_t k = 0; k < out.numel(); ++k)
    elementwise_element(id, n, args, out, k);
  if (n.op == Op::cast && is_float(n.dtype))  // the one place where float values are rounded
    for (double& v : out.f)
      v = round_to_float(n.dtype, v);
  return out;
}

/** An elementwise node computed where its user reads it. */
class LazyElementwise : public Lazy {
 public:
  LazyElementwise(NodeId id, const Node& n, std::vector<const Value*> args,
                  const std::vector<int64_t>& dims)
      : Lazy(n.dtype, dims), id_(id), n_(n), args_(std::move(args)) {
    std::vector<Tensor> shapes;  // dtypes and dims alone, for check_elementwise
    for (const Value* a : args_) {
      Tensor t;
      t.dtype = a->lazy ? a->lazy->dtype : a->t.dtype;
      t.dims = a->lazy ? a->lazy->dims : a->t.dims;
      shapes.push_back(std::move(t));
      scratch_.push_back(scalar_tensor(shapes.back().dtype));
    }
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : shapes)
      ptrs.push_back(&t);
    check_elementwise(id, n, ptrs, dims);
    for (Tensor& t : scratch_)
      read_.push_back(&t);
  }
  void element(const std::vector<int64_t>& idx, Tensor& out) const override {
    for (size_t a = 0; a < args_.size(); ++a) {
      auto [from, j] = element_of(*args_[a], idx, scratch_[a]);
      if (from != &scratch_[a]) put_element(scratch_[a], 0, *from, j);
    }
    elementwise_element(id_, n_, read_, out, 0);
    if (n_.op == Op::cast && is_float(n_.dtype)) out.f[0] = round_to_float(n_.dtype, out.f[0]);
  }

 private:
  NodeId id_;
  const Node& n_;
  std::vector<const Value*> args_;
  mutable std::vector<Tensor> scratch_;
  std::vector<const Tensor*> read_;
};

Tensor eval_source(NodeId id, const Node& n, const std::vector<int64_t>& dims,
                   const SizeBindings& sizes) {
  Tensor out(n.dtype, dims);
  int64_t size_value = n.symbolic ? n.size_value.eval(sizes) : 0;
  if (n.op == Op::constant && is_float(n.dtype))
    std::fill(out.f.begin(), out.f.end(),
              round_to_float(n.dtype, n.symbolic ? static_cast<double>(size_value) : n.value));
  if (n.op == Op::constant && !is_float(n.dtype))
    std::fill(out.i.begin(), out.i.end(), wrap_int(n.dtype, n.symbolic ? size_value : n.int_value));
  if (n.op == Op::constant) return out;
  if (n.axis < 0 || n.axis >= static_cast<int>(dims.size()))
    fail(id, n, "axis " + std::to_string(n.axis) + " is out of range");
  size_t stride = 1;
  for (size_t d = n.axis + 1; d < dims.size(); ++d)
    stride *= static_cast<size_t>(dims[d]);
  for (size_t k = 0; k < out.numel(); ++k)
    out.set_int(k, static_cast<int64_t>((k / stride) % static_cast<size_t>(dims[n.axis])));
  return out;
}

Shape constant_shape(const std::vector<int64_t>& dims) {
  return Shape(dims.begin(), dims.end());
}

Tensor eval_extern(NodeId id, const Node& n, const std::vector<const Tensor*>& args,
                   const std::vector<int64_t>& dims) {
  std::vector<ValueType> types;
  for (const Tensor* a : args)
    types.push_back({a->dtype, constant_shape(a->dims)});
  ExternResult r = extern_result_type(n.name, types);
  if (!r.error.empty()) fail(id, n, r.error);
  if (r.type.dtype != n.dtype) fail(id, n, "result dtype should be " + dtype_str(r.type.dtype));
  Tensor out = find_extern(n.name)->evaluate(args, n.dtype);
  if (out.dims != dims)
    fail(id, n, "result dims " + dims_str(out.dims) + " differ from the node's");
  return out;
}

Tensor eval_gather(NodeId id, const Node& n, const Tensor& src, const Tensor& index,
                   const std::vector<int64_t>& dims, bool checked) {
  if (is_float(index.dtype)) fail(id, n, "needs an integer index, got " + dtype_str(index.dtype));
  size_t axis = static_cast<size_t>(n.axis);
  if (axis >= src.dims.size() || index.dims != dims || dims.size() != src.dims.size())
    fail(id, n,
         "index dims " + dims_str(index.dims) + " do not fit source " + dims_str(src.dims) +
             " along axis " + std::to_string(n.axis));
  for (size_t d = 0; d < dims.size(); ++d)
    if (d != axis && dims[d] != src.dims[d])
      fail(id, n, "index dims " + dims_str(dims) + " differ from source " + dims_str(src.dims));
  // Row-major strides: k = (outer * dims[axis] + i) * inner + rest.
  size_t inner = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d)
    inner *= static_cast<size_t>(dims[d]);
  size_t n_out = static_cast<size_t>(dims[axis]), n_src = static_cast<size_t>(src.dims[axis]);
  Tensor out(n.dtype, dims);
  for (size_t k = 0; k < out.numel(); ++k) {
    int64_t at = index.i[k];
    bool outside = at < 0 || static_cast<size_t>(at) >= n_src;
    if (outside && checked)
      fail(id, n,
           "gathered index " + std::to_string(at) + " is outside the " + std::to_string(n_src) +
               " elements of axis " + std::to_string(n.axis) + " of its source (--config CHECK=1)");
    if (outside) continue;  // zero-filled
    size_t outer = k / inner / n_out, rest = k % inner;
    put_element(out, k, src, (outer * n_src + static_cast<size_t>(at)) * inner + rest);
  }
  return out;
}

Tensor eval_scatter(NodeId id, const Node& n, const Tensor& base, const Tensor& index,
                    const Tensor& src, bool checked) {
  if (is_float(index.dtype)) fail(id, n, "needs an integer index, got " + dtype_str(index.dtype));
  const size_t axis = static_cast<size_t>(n.axis);
  bool fits =
      axis < base.dims.size() && index.dims == src.dims && index.dims.size() == base.dims.size();
  for (size_t d = 0; fits && d < base.dims.size(); ++d)
    fits = d == axis || index.dims[d] == base.dims[d];
  if (!fits)
    fail(id, n,
         "index dims " + dims_str(index.dims) + " and src dims " + dims_str(src.dims) +
             " do not fit base " + dims_str(base.dims) + " along axis " + std::to_string(n.axis));
  // Row-major strides: k = (outer * index dims[axis] + i) * inner + rest.
  size_t inner = 1;
  for (size_t d = axis + 1; d < base.dims.size(); ++d)
    inner *= static_cast<size_t>(base.dims[d]);
  const size_t n_in = static_cast<size_t>(index.dims[axis]);
  const size_t n_out = static_cast<size_t>(base.dims[axis]);
  Tensor out = base;
  for (size_t k = 0; k < index.numel(); ++k) {
    int64_t at = index.i[k];
    bool outside = at < 0 || static_cast<size_t>(at) >= n_out;
    if (outside && checked)
      fail(id, n,
           "scattered index " + std::to_string(at) + " is outside the " + std::to_string(n_out) +
               " elements of axis " + std::to_string(n.axis) + " of its base (--config CHECK=1)");
    if (outside) continue;  // dropped
    size_t outer = k / inner / n_in, rest = k % inner;
    size_t o = (outer * n_out + static_cast<size_t>(at)) * inner + rest;
    if (is_float(n.dtype))
      out.f[o] = float_binary(n.combine, out.f[o], src.f[k]);
    else
      put_int(out, o, int_binary(id, n.combine, n.dtype, out.i[o], src.i[k]), n.dtype);
  }
  return out;
}

/** The caller's tensor for input node `id`, checked against the node. */
const Tensor& input_value(const Graph& g, NodeId id, const std::vector<int64_t>& dims,
                          const std::vector<Tensor>& inputs) {
  const Node& n = g[id];
  auto it = std::find(g.inputs.begin(), g.inputs.end(), id);
  if (it == g.inputs.end()) fail(id, n, "the input is not listed among the graph's inputs");
  const Tensor& t = inputs[it - g.inputs.begin()];
  size_t have = is_float(t.dtype) ? t.f.size() : t.i.size();
  if (t.dtype != n.dtype || t.dims != dims || have != t.numel())
    throw std::runtime_error("input '" + n.name + "': expected " + dtype_str(n.dtype) +
                             dims_str(dims) + ", got " + tensor_type_str(t) + " with " +
                             std::to_string(have) + " elements");
  return t;
}

}  // namespace

std::vector<Tensor> interpret(const Graph& g, const SizeBindings& sizes,
                              const std::vector<Tensor>& inputs, bool checked, int64_t lazy_from) {
  for (const std::string& v : g.size_vars)
    if (!sizes.count(v)) throw std::runtime_error("size variable '" + v + "' is not bound");
  check_size_facts(g.checks, sizes);
  if (inputs.size() != g.inputs.size())
    throw std::runtime_error("expected " + std::to_string(g.inputs.size()) + " inputs, got " +
                             std::to_string(inputs.size()));
  // Large views and elementwise values that only reductions, views and other such values read
  // are computed where they are read (Lazy), not stored.
  std::vector<bool> stored(g.size(), false);  // an output, or read by an op that needs a tensor
  for (const GraphOutput& o : g.outputs)
    if (o.node >= 0 && o.node < static_cast<NodeId>(g.size())) stored[o.node] = true;
  auto reads_lazily = [](const Node& user, size_t operand) {
    return ((user.op == Op::reduce || user.op == Op::view) && operand == 0) || lazy_op(user.op);
  };
  // A value read more than once is stored: computed where read, each reader would compute it
  // again, and a chain of such values (x * x of x * x ...) would be computed exponentially often.
  std::vector<int> readers(g.size(), 0);
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    for (size_t k = 0; k < g[id].operands.size(); ++k) {
      NodeId o = g[id].operands[k];
      if (o < 0 || o >= id) continue;
      if (!reads_lazily(g[id], k) || ++readers[o] > 1) stored[o] = true;
    }
  std::vector<Value> values(g.size());
  // The value of operand `o` as a tensor, computing a lazy one's elements now.
  auto tensor_of = [&](NodeId o) -> const Tensor& {
    Value& v = values[o];
    if (v.lazy) {
      Tensor t(v.lazy->dtype, v.lazy->dims);
      std::vector<int64_t> idx(t.dims.size(), 0);
      Tensor scratch = scalar_tensor(t.dtype);
      for (size_t k = 0; k < t.numel(); ++k, next_index(idx, t.dims)) {
        v.lazy->element(idx, scratch);
        put_element(t, k, scratch, 0);
      }
      v.t = std::move(t);
      v.lazy.reset();
    }
    return v.t;
  };
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Node& n = g[id];
    std::string what = n.op == Op::input
                           ? "input '" + n.name + "'"
                           : "%" + std::to_string(id) + " (" + std::string(op_name(n.op)) + ")";
    what += " of '" + g.name + "'";
    std::vector<int64_t> dims = eval_checked_shape(what, n.dtype, n.shape, sizes);
    for (NodeId o : n.operands)
      if (o < 0 || o >= id) fail(id, n, "operand %" + std::to_string(o) + " is not evaluated yet");
    if (op_info(n.op).arity >= 0 && n.operands.size() != static_cast<size_t>(op_info(n.op).arity))
      fail(id, n, "wrong number of operands");
    const bool lazy = !stored[id] && (n.op == Op::view || lazy_op(n.op)) &&
                      checked_product(dims).value_or(0) >= lazy_from;
    std::vector<const Tensor*> args;
    std::vector<const Value*> vals;
    for (size_t k = 0; k < n.operands.size(); ++k) {
      NodeId o = n.operands[k];
      // A lazy node, a reduction and a view read a lazy operand where they need its elements.
      bool where_read = lazy || ((n.op == Op::reduce || n.op == Op::view) && k == 0);
      if (!where_read || !values[o].lazy) args.push_back(&tensor_of(o));
      vals.push_back(&values[o]);
    }
    try {
      Value& v = values[id];
      if (n.op == Op::input)
        v.t = input_value(g, id, dims, inputs);
      else if (n.op == Op::constant || n.op == Op::index)
        v.t = eval_source(id, n, dims, sizes);
      else if (n.op == Op::view && lazy)
        v.lazy = std::make_unique<LazyView>(id, n, *vals[0], dims, sizes);
      else if (n.op == Op::view)
        v.t = eval_view(id, n, *vals[0], dims, sizes);
      else if (n.op == Op::reduce)
        v.t = eval_reduce(id, n, *vals[0], dims, sizes);
      else if (n.op == Op::scan)
        v.t = eval_scan(id, n, *args[0], dims);
      else if (n.op == Op::extern_call)
        v.t = eval_extern(id, n, args, dims);
      else if (n.op == Op::gather)
        v.t = eval_gather(id, n, *args[0], *args[1], dims, checked);
      else if (n.op == Op::scatter)
        v.t = eval_scatter(id, n, *args[0], *args[1], *args[2], checked);
      else if (lazy)
        v.lazy = std::make_unique<LazyElementwise>(id, n, vals, dims);
      else
        v.t = eval_elementwise(id, n, args, dims);
    } catch (const TensorAllocError& e) {
      throw TensorAllocError(what + ": " + e.what());
    } catch (const std::overflow_error& e) {
      throw std::overflow_error(what + ": " + e.what());
    }
  }
  std::vector<Tensor> out;
  for (const GraphOutput& o : g.outputs) {
    if (o.node < 0 || o.node >= static_cast<NodeId>(g.size()))
      throw std::runtime_error("output '" + o.name + "' refers to a missing node");
    out.push_back(tensor_of(o.node));
  }
  return out;
}

}  // namespace kiln
