// Statements and scalar expressions of the C-style renderer: loads and stores with dtype
// conversion, the op -> text table, masks, casts and the reduction updates.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "backends/c_style.h"

namespace kiln {

std::string from_storage(DType t, const std::string& x) {
  if (t == DType::f16) return "kiln_f16_to_f32(" + x + ")";
  if (t == DType::bf16) return "kiln_bf16_to_f32(" + x + ")";
  return x;
}

std::string to_storage(DType t, const std::string& x) {
  if (t == DType::f16) return "kiln_f32_to_f16(" + x + ")";
  if (t == DType::bf16) return "kiln_f32_to_bf16(" + x + ")";
  return x;
}

namespace {

double int_min(DType t) {
  switch (t) {
    case DType::i64:
      return -9223372036854775808.0;
    case DType::i32:
      return -2147483648.0;
    case DType::i16:
      return -32768.0;
    case DType::i8:
      return -128.0;
    default:
      return 0;
  }
}

double int_max(DType t) {
  switch (t) {
    case DType::i64:
      return 9223372036854775808.0;
    case DType::i32:
      return 2147483647.0;
    case DType::i16:
      return 32767.0;
    case DType::i8:
      return 127.0;
    case DType::u8:
      return 255.0;
    case DType::u16:
      return 65535.0;
    case DType::u32:
      return 4294967295.0;
    case DType::u64:
      return 18446744073709551616.0;  // 2^64: kiln_f2u saturates from there
    default:
      return 1.0;
  }
}

/** The integer max function of the prelude for dtype `t`: u64 compares unsigned. */
std::string int_max_fn(DType t) {
  return t == DType::u64 ? "kiln_max_u64" : "kiln_max_int";
}

/** A cast that keeps a product of `t` out of C's promotion to int: u16 * u16 promotes to a
 *  signed int that 65535 * 65535 overflows (undefined), so u16 multiplies as unsigned. */
std::string widened(DType t) {
  return t == DType::u16 ? "(uint32_t)" : "";
}

/** An integer constant of dtype `t` and C type `type` (`v` as held: u64's bits): unsigned ones
 *  with the ULL suffix, so that 18446744073709551615 and 4294967295 are plain literals. */
std::string int_literal(const std::string& type, DType t, int64_t v) {
  if (is_signed_int(t) && v == std::numeric_limits<int64_t>::min())  // no literal spells it
    return "((" + type + ")KILN_INT64_MIN)";
  return "((" + type + ")" + int_to_string(t, v) + (is_unsigned_int(t) ? "ULL" : "LL") + ")";
}

}  // namespace

IntExpr CStyleRenderer::linear_index(const Context& c, int buffer,
                                     const std::vector<IntExpr>& index) const {
  const Shape& shape = c.plan.buffers[buffer].shape;
  IntExpr linear = 0;
  for (size_t k = 0; k < shape.size(); ++k)
    linear = linear * shape[k] + index[k];
  return linear;
}

std::string CStyleRenderer::render_index(const Context& c, int buffer,
                                         const std::vector<IntExpr>& index) const {
  return render_access(c, buffer, int_expr_to_c(linear_index(c, buffer, index), c.sizes));
}

std::string CStyleRenderer::render_prefetch(const Context& c, const LoopNode& n, int depth) const {
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  std::vector<std::pair<std::string, int>> lines;  // address, 1 for writing
  auto add = [&](int buffer, const std::vector<IntExpr>& index, int write) {
    std::string at = "b" + std::to_string(buffer) + " + (" +
                     int_expr_to_c(linear_index(c, buffer, index), c.sizes) + ")";
    for (auto& [a, w] : lines)
      if (a == at) {
        w |= write;
        return;
      }
    lines.emplace_back(at, write);
  };
  const std::vector<int>& only = n.prefetch_buffers;
  if (st.kind == Statement::Kind::assign && only.empty()) add(st.buffer, st.index, 1);
  std::vector<const ScalarExpr*> loads;
  if (st.value) collect_loads(*st.value, loads);
  for (const ScalarExpr* l : loads)
    if (l->mask.empty() && !is_gather(*l) &&
        (only.empty() || std::find(only.begin(), only.end(), l->buffer) != only.end()))
      add(l->buffer, l->index, 0);
  std::string s = pad + "{\n" + bind_iterators(n.args, pad + "  ");
  for (const auto& [at, write] : lines)
    s += pad + "  __builtin_prefetch(" + at + ", " + std::to_string(write) + ", 3);\n";
  return s + pad + "}\n";
}

std::string CStyleRenderer::render_access(const Context& c, int buffer,
                                          const std::string& offset) const {
  std::string b = std::to_string(buffer);
  if (!c.options.bounds_checks) return "b" + b + "[" + offset + "]";
  return "b" + b + "[kiln_check(" + offset + ", " + buffer_elements(c, buffer) + ", " + b + ")]";
}

std::string CStyleRenderer::buffer_elements(const Context& c, int buffer) const {
  IntExpr count = 1;
  for (const IntExpr& d : c.plan.buffers[buffer].shape)
    count = count * d;
  return int_expr_to_c(count, c.sizes);
}

std::string CStyleRenderer::combine_identity(Op op, DType t) const {
  std::string init = "0";
  if (op == Op::mul) init = "1";
  if (op == Op::bit_and) init = t == DType::boolean ? "1" : "~0";
  if (op == Op::max)
    init = is_float(t)       ? "-KILN_INF"
           : t == DType::i64 ? "KILN_INT64_MIN"
                             : std::to_string(static_cast<int64_t>(int_min(t)));
  return "(" + compute_type(t) + ")" + init;
}

std::string CStyleRenderer::render_statement(const Context& c, const Statement& st) const {
  if (st.kind == Statement::Kind::call) return extern_call(c.plan, st);
  const Buffer& b = c.plan.buffers[st.buffer];
  // A promoted accumulator (an alloc node above) stands for the element, in the compute type:
  // render_alloc converts from and to the storage type once, around the nest.
  auto promoted = c.promoted.find(&st);
  bool in_register = promoted != c.promoted.end();
  std::string target = in_register ? promoted->second : render_index(c, st.buffer, st.index);
  std::string t = compute_type(b.dtype);
  auto stored = [&](const std::string& x) { return in_register ? x : to_storage(b.dtype, x); };
  if (auto carry = c.carried.find(&st); carry != c.carried.end() && !in_register) {
    std::string set = carry->second + " = (" + t + ")" + render_value(c, *st.value) + ";";
    return c.carry_only ? set : set + "\n" + target + " = " + stored(carry->second) + ";";
  }
  if (st.kind == Statement::Kind::assign)
    return target + " = " + stored("(" + t + ")" + render_value(c, *st.value)) + ";";
  if (st.kind == Statement::Kind::reduce_init) {
    Op op = st.reduce == ReduceKind::sum    ? Op::add
            : st.reduce == ReduceKind::prod ? Op::mul
                                            : Op::max;
    return target + " = " + stored(combine_identity(op, b.dtype)) + ";";
  }
  if (st.kind == Statement::Kind::scatter) return render_scatter(c, st);
  std::string acc = in_register ? target : from_storage(b.dtype, target);
  std::string v = "(" + t + ")" + render_value(c, *st.value);
  bool wide_float = b.dtype == DType::f32 || b.dtype == DType::f64;
  if (wide_float && (st.reduce == ReduceKind::sum || st.reduce == ReduceKind::prod)) {
    // Only the accumulation may be reassociated, so that the compiler can vectorise the
    // reduction; the value is computed outside that scope, exactly (docs/decisions.md).
    std::string op = st.reduce == ReduceKind::sum ? " + " : " * ";
    return "const " + t + " kiln_v = " + v + ";\n{ KILN_REASSOC " + target + " = " + acc + op +
           "kiln_v; }";
  }
  if (in_register && c.keyed.count(&st)) {
    // An ordered integer key per value and an integer max, plus the NaN flag (render_alloc).
    std::string bits = b.dtype == DType::f64 ? "64" : "32";
    return "const " + t + " kiln_v = " + v + ";\nconst int" + bits + "_t kiln_k = kiln_key_f" +
           bits + "(kiln_v);\n" + target + " = " + target + " > kiln_k ? " + target +
           " : kiln_k;\n" + target + "_nan |= kiln_v != kiln_v;";
  }
  std::string r;
  if (st.reduce == ReduceKind::sum) r = acc + " + " + v;
  if (st.reduce == ReduceKind::prod) r = widened(b.dtype) + acc + " * " + v;
  if (st.reduce == ReduceKind::max)
    r = b.dtype == DType::f64 ? "kiln_max_f64(" + acc + ", " + v + ")"
        : is_float(b.dtype)   ? "kiln_max_f32(" + acc + ", " + v + ")"
                              : int_max_fn(b.dtype) + "(" + acc + ", " + v + ")";
  return target + " = " + stored("(" + t + ")(" + r + ")") + ";";
}

namespace {

/** How many parents each node of a DAG has (children are counted once per distinct parent). */
void count_uses(const ScalarExpr& e, std::map<const ScalarExpr*, int>& uses) {
  if (uses[&e]++ > 0) return;
  for (const ScalarExprPtr& a : e.args)
    count_uses(*a, uses);
}

}  // namespace

std::string CStyleRenderer::bind_shared(const Context& c, const ScalarExpr& root) const {
  std::map<const ScalarExpr*, int> uses;
  count_uses(root, uses);
  std::string out;
  std::set<const ScalarExpr*> visited;
  // `guarded`: below a masked node, whose value is computed only where its mask holds (a
  // padded view of a computed value, a slice past a tensor's end): its loads may lie outside
  // their buffers elsewhere, so nothing below it is computed ahead of the mask.
  std::function<void(const ScalarExpr&, bool)> visit = [&](const ScalarExpr& e, bool guarded) {
    if (!visited.insert(&e).second) return;
    guarded = guarded || !e.mask.empty();
    for (const ScalarExprPtr& a : e.args)
      visit(*a, guarded);
    if (e.kind == ScalarExpr::Kind::load && !is_gather(e)) {
      // An index that divides by a run-time value is computed here, unconditionally, not under
      // the mask or select that guards its load: LLVM 19's loop vectoriser miscompiles a
      // division predicated inside a vectorised loop when it feeds a masked load's address
      // (docs/decisions.md, "the masked-load crash"). kiln_fdiv_v cannot trap, so this is safe.
      IntExpr linear = linear_index(c, e.buffer, e.index);
      if (has_runtime_divisor(linear)) {
        std::string name = "k" + std::to_string(c.index_bound.size());
        out += "const int64_t " + name + " = " + int_expr_to_c(linear, c.sizes) + ";\n";
        c.index_bound.emplace(&e, name);
      }
    }
    bool worth = e.kind == ScalarExpr::Kind::op || e.kind == ScalarExpr::Kind::load;
    if (&e == &root || uses[&e] < 2 || !worth || guarded) return;
    std::string name = "v" + std::to_string(c.bound.size());
    std::string value = render_value(c, e);
    out += "const " + compute_type(e.dtype) + " " + name + " = " + value + ";\n";
    c.bound.emplace(&e, name);
  };
  visit(root, false);
  return out;
}

std::string CStyleRenderer::bind_shared_lanes(const Context& c, const ScalarExpr& root,
                                              const std::set<std::string>& lanes,
                                              DType vector_dtype,
                                              const std::string& vector_type) const {
  std::map<const ScalarExpr*, int> uses;
  count_uses(root, uses);
  std::string out;
  std::set<const ScalarExpr*> visited;
  // `guarded`: below a masked node (bind_shared).
  std::function<void(const ScalarExpr&, bool)> visit = [&](const ScalarExpr& e, bool guarded) {
    if (!visited.insert(&e).second) return;
    guarded = guarded || !e.mask.empty();
    for (const ScalarExprPtr& a : e.args)
      visit(*a, guarded);
    bool worth = (e.kind == ScalarExpr::Kind::op || e.kind == ScalarExpr::Kind::load) &&
                 !is_gather(e) && c.index_bound.find(&e) == c.index_bound.end();
    if (&e == &root || uses[&e] < 2 || !worth || guarded) return;
    if (!uses_vars(e, lanes)) {
      std::string name = "v" + std::to_string(c.bound.size());
      out += "const " + compute_type(e.dtype) + " " + name + " = " + render_value(c, e) + "; ";
      c.bound.emplace(&e, name);
    } else if (e.dtype == vector_dtype && e.mask.empty()) {
      std::string name = "w" + std::to_string(c.lane_bound.size());
      out += "const " + vector_type + " " + name + " = " + render_lanes(c, e, lanes) + "; ";
      c.lane_bound.emplace(&e, name);
    }
  };
  visit(root, false);
  return out;
}

std::string CStyleRenderer::render_value(const Context& c, const ScalarExpr& e) const {
  if (auto it = c.bound.find(&e); it != c.bound.end()) return it->second;
  if (auto it = c.preloaded.find(&e); it != c.preloaded.end()) return it->second;
  if (is_gather(e)) return render_gather(c, e);
  std::string v;
  switch (e.kind) {
    case ScalarExpr::Kind::load:
      if (e.buffer == c.sums_buffer)
        v = c.sums_element;
      else if (auto it = c.index_bound.find(&e); it != c.index_bound.end())
        v = from_storage(c.plan.buffers[e.buffer].dtype, render_access(c, e.buffer, it->second));
      else
        v = from_storage(c.plan.buffers[e.buffer].dtype, render_index(c, e.buffer, e.index));
      break;
    case ScalarExpr::Kind::constant:
      if (e.symbolic)
        v = "((" + compute_type(e.dtype) + ")" + int_expr_to_c(e.size_value, c.sizes) + ")";
      else if (is_float(e.dtype))
        v = float_literal(e.value, e.dtype);
      else
        v = int_literal(compute_type(e.dtype), e.dtype, e.int_value);
      break;
    case ScalarExpr::Kind::iterator:
      v = "((" + compute_type(e.dtype) + ")" + int_expr_to_c(e.index[0], c.sizes) + ")";
      break;
    case ScalarExpr::Kind::op:
      v = render_op(c, e);
      break;
  }
  if (e.mask.empty()) return v;
  std::string cond;
  for (const MaskBound& m : e.mask) {
    std::string x = int_expr_to_c(m.expr, c.sizes);
    cond += (cond.empty() ? "" : " && ") +
            ("0 <= " + x + " && " + x + " < " + int_expr_to_c(m.bound, c.sizes));
  }
  return "((" + cond + ") ? " + v + " : (" + compute_type(e.dtype) + ")0)";
}

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::string CStyleRenderer::render_gather(const Context& c, const ScalarExpr& e) const {
  const IntExpr g = IntExpr::var(kGatherVar);
  std::string at = "((int64_t)" + render_value(c, *e.args[0]) + ")";
  std::string cond, range;
  for (const MaskBound& m : e.mask) {
    std::string x = int_expr_to_c(m.expr, c.sizes), b = int_expr_to_c(m.bound, c.sizes);
    if (m.expr == g && c.options.bounds_checks)  // an error, not a 0 (driver/fault_guard.cpp)
      at = "kiln_check_index(" + at + ", " + b + ", " + std::to_string(e.buffer) + ", 2)";
    if (m.expr == g)
      range = "0 <= " + x + " && " + x + " < " + b;
    else
      cond += (cond.empty() ? "" : " && ") + ("0 <= " + x + " && " + x + " < " + b);
  }
  // The other masks first: where they fail, the position may not be there to read.
  cond += (cond.empty() || range.empty() ? "" : " && ") + range;
  std::string load =
      from_storage(c.plan.buffers[e.buffer].dtype, render_index(c, e.buffer, e.index));
  std::string v = "((" + cond + ") ? " + load + " : (" + compute_type(e.dtype) + ")0)";
  return replace_all(v, kGatherVar, at);
}

std::string CStyleRenderer::render_scatter(const Context& c, const Statement& st) const {
  const Buffer& b = c.plan.buffers[st.buffer];
  const ScalarExpr& self = *st.value->args.at(0);
  const std::string n = int_expr_to_c(self.mask.back().bound, c.sizes);
  std::string at = "(int64_t)(" + render_value(c, scatter_position(st)) + ")";
  if (c.options.bounds_checks)  // an error, not a dropped value (driver/fault_guard.cpp)
    at = "kiln_check_index(" + at + ", " + n + ", " + std::to_string(st.buffer) + ", 3)";
  const std::string target =
      replace_all(render_index(c, st.buffer, st.index), kGatherVar, "kiln_g");
  c.bound[&self] = from_storage(b.dtype, target);
  const std::string v = render_value(c, *st.value);
  c.bound.erase(&self);
  return "{\n  const int64_t kiln_g = " + at + ";\n  if (0 <= kiln_g && kiln_g < " + n + ") " +
         target + " = " + to_storage(b.dtype, "(" + compute_type(b.dtype) + ")" + v) + ";\n}";
}

std::string CStyleRenderer::render_vector_address(const Context& c, int buffer,
                                                  const std::string& offset, int lanes) const {
  std::string b = "b" + std::to_string(buffer);
  if (!c.options.bounds_checks) return "&" + b + "[" + offset + "]";
  std::string n = buffer_elements(c, buffer), id = std::to_string(buffer);
  std::string last = std::to_string(lanes - 1);
  return "&" + b + "[kiln_check(kiln_check(" + offset + ", " + n + ", " + id + ") + " + last +
         ", " + n + ", " + id + ") - " + last + "]";
}

std::string CStyleRenderer::render_masked_lanes(const Context& c, const ScalarExpr& e,
                                                const std::set<std::string>& lanes,
                                                const std::string& offset, int width) const {
  // Lane l holds the element of lane 0's iterators plus l along `lanes` (below c.lane_limit in
  // a partial tile); a mask bound 0 <= x < b with x = x0 + a * l (a = -1, 0 or 1; lane_value
  // checked) keeps one range of lanes.
  std::string lo = "0", hi = std::to_string(width), cond;
  for (const MaskBound& m : e.mask) {
    int64_t a = 0;
    for (const std::string& v : lanes)
      a += affine_coefficient(m.expr, v).value_or(0);
    std::string x = "(" + int_expr_to_c(m.expr, c.sizes) + ")",
                b = "(" + int_expr_to_c(m.bound, c.sizes) + ")";
    if (a == 0) {
      cond += (cond.empty() ? "" : " && ") + ("0 <= " + x + " && " + x + " < " + b);
    } else if (a == 1) {  // l >= -x0 and l < b - x0
      lo = "kiln_max_int(" + lo + ", -" + x + ")";
      hi = "kiln_min_int(" + hi + ", " + b + " - " + x + ")";
    } else {  // x0 - l >= 0 and x0 - l < b: l <= x0 and l > x0 - b
      lo = "kiln_max_int(" + lo + ", " + x + " - " + b + " + 1)";
      hi = "kiln_min_int(" + hi + ", " + x + " + 1)";
    }
  }
  if (!c.lane_limit.empty())
    hi = hi == std::to_string(width) ? c.lane_limit
                                     : "kiln_min_int(" + hi + ", " + c.lane_limit + ")";
  if (!cond.empty()) hi = "((" + cond + ") ? " + hi + " : 0)";
  return masked_vector(c, e.buffer, offset, lo, hi, "");
}

std::string CStyleRenderer::lane_by_lane(const Context& c, const ScalarExpr& e,
                                         const std::string& lane, const std::string& type,
                                         int width) const {
  std::string out = "((kiln_v" + type + "){";
  for (int l = 0; l < width; ++l) {
    ScalarExpr at = e;
    std::map<std::string, IntExpr> shift = {{lane, IntExpr::var(lane) + IntExpr(l)}};
    for (IntExpr& i : at.index)
      i = i.substitute(shift);
    std::string one = render_value(c, at);
    if (!c.lane_limit.empty())
      one = "(" + std::to_string(l) + " < " + c.lane_limit + " ? " + one + " : 0)";
    out += (l ? ", " : "") + one;
  }
  return out + "})";
}

std::string CStyleRenderer::render_lanes(const Context& c, const ScalarExpr& e,
                                         const std::set<std::string>& lanes) const {
  if (!uses_vars(e, lanes)) return render_value(c, e);
  if (auto it = c.lane_bound.find(&e); it != c.lane_bound.end()) return it->second;
  DType t = e.dtype;
  auto arg = [&](size_t k) { return render_lanes(c, *e.args[k], lanes); };
  if (e.kind == ScalarExpr::Kind::load && (t == DType::f16 || t == DType::bf16) && e.mask.empty()) {
    // f16 and bf16 lanes compute in f32. Neighbours in memory (every lane in) are widened as
    // one vector (kiln_vld_f16: vcvtph2ps with F16C; kiln_vld_bf16: a shift); otherwise each
    // lane's element is converted on its own.
    const int width = c.options.vector_bytes / 4;
    if (lanes.size() == 1 && c.lane_limit.empty() && !is_gather(e) &&
        c.plan.buffers[e.buffer].dtype == t) {
      const std::string& v = *lanes.begin();
      IntExpr linear = linear_index(c, e.buffer, e.index);
      std::map<std::string, IntExpr> next = {{v, IntExpr::var(v) + IntExpr(1)}};
      if (linear.substitute(next) - linear == IntExpr(1))
        return std::string(t == DType::f16 ? "kiln_vld_f16(" : "kiln_vld_bf16(") +
               render_vector_address(c, e.buffer, int_expr_to_c(linear, c.sizes), width) + ")";
    }
    return lane_by_lane(c, e, *lanes.begin(), "f32", width);
  }
  if (e.kind == ScalarExpr::Kind::load && (t == DType::f32 || t == DType::f64)) {
    IntExpr linear = linear_index(c, e.buffer, e.index);
    std::string offset = int_expr_to_c(linear, c.sizes);
    int width = c.options.vector_bytes / (dtype_bits(t) / 8);
    std::string type = t == DType::f64 ? "f64" : "f32";
    // Lanes that are not neighbours in memory (a packed panel's fill of an operand read across
    // its rows, `w[j, k]` of `x · wᵀ`; scheduler/register_tile.h): one scalar load per lane,
    // none past a partial tile's last lane.
    if (lanes.size() == 1 && e.mask.empty()) {
      const std::string& v = *lanes.begin();
      std::map<std::string, IntExpr> next = {{v, IntExpr::var(v) + IntExpr(1)}};
      IntExpr step = linear.substitute(next) - linear;
      if (step == IntExpr(2)) {
        // Every second element (a window of stride 2): two vectors and their even lanes. The
        // loads are masked to the elements the lanes need (the last lane's, or a partial
        // tile's last), so none reads past them (kiln_vldm loads whole vectors where the
        // buffer has room).
        std::string even;
        for (int l = 0; l < width; ++l)
          even += ", " + std::to_string(2 * l);
        std::string vt = "kiln_v" + type, w = std::to_string(width);
        std::string first = "kiln_vld_" + type + "(" +
                            render_vector_address(c, e.buffer, offset, width) + ")",
                    second_hi = std::to_string(width - 1);
        if (!c.lane_limit.empty()) {
          std::string need = "(2 * (" + c.lane_limit + ") - 1)";
          first =
              masked_vector(c, e.buffer, offset, "0", "kiln_min_int(" + w + ", " + need + ")", "");
          second_hi = "(" + need + " - " + w + ")";
        }
        return "({ " + vt + " kiln_e0 = " + first + "; " + vt + " kiln_e1 = " +
               masked_vector(c, e.buffer, "(" + offset + ") + " + w, "0", second_hi, "") +
               "; __builtin_shufflevector(kiln_e0, kiln_e1" + even + "); })";
      }
      if (step != IntExpr(1)) return lane_by_lane(c, e, v, type, width);
    }
    if (e.mask.empty() && c.lane_limit.empty())
      return "kiln_vld_" + type + "(" + render_vector_address(c, e.buffer, offset, width) + ")";
    return render_masked_lanes(c, e, lanes, offset, width);
  }
  if (e.kind == ScalarExpr::Kind::op && e.mask.empty()) {
    switch (e.op) {
      case Op::copy:
        return arg(0);
      case Op::neg:
        return "(-" + arg(0) + ")";
      case Op::add:
        return "(" + arg(0) + " + " + arg(1) + ")";
      case Op::mul:
        return "(" + arg(0) + " * " + arg(1) + ")";
      case Op::mulacc:
        return "(" + arg(0) + " * " + arg(1) + " + " + arg(2) + ")";
      case Op::where: {
        // One condition for every lane: either value, each made a vector (a scalar joins a
        // zero vector: C's ?: wants one type).
        const std::string v = t == DType::f64 ? "kiln_vf64" : "kiln_vf32";
        return "((" + render_value(c, *e.args[0]) + ") ? ((" + v + "){0} + " + arg(1) + ") : ((" +
               v + "){0} + " + arg(2) + "))";
      }
      default:
        break;
    }
  }
  throw std::runtime_error("a register tile cannot compute '" +
                           std::string(e.kind == ScalarExpr::Kind::op ? op_name(e.op) : "value") +
                           "' across vector lanes");
}

std::string CStyleRenderer::bitcast(const std::string& from, const std::string& to,
                                    const std::string& x) const {
  return "({ " + from + " kiln_a_ = " + x + "; " + to +
         " kiln_b_; memcpy(&kiln_b_, &kiln_a_, sizeof kiln_b_); kiln_b_; })";
}

std::string CStyleRenderer::render_op(const Context& c, const ScalarExpr& e) const {
  auto arg = [&](size_t k) { return render_value(c, *e.args[k]); };
  DType t = e.dtype, in = e.args.empty() ? t : e.args[0]->dtype;
  std::string ct = compute_type(t);
  auto wrap = [&](const std::string& x) {  // integer results wrap to their dtype
    return is_float(t) ? "(" + x + ")" : "((" + ct + ")(" + x + "))";
  };
  switch (e.op) {
    case Op::copy:
      return arg(0);
    case Op::neg:
      return wrap("-" + arg(0));
    case Op::recip:
      return "(" + float_literal(1.0, t) + " / " + arg(0) + ")";
    case Op::sqrt:
      return math_call("sqrt", t, arg(0));
    case Op::exp2:
      return math_call("exp2", t, arg(0));
    case Op::log2:
      return math_call("log2", t, arg(0));
    case Op::sin:
      return math_call("sin", t, arg(0));
    case Op::logical_not:
      return t == DType::boolean ? "((uint8_t)!" + arg(0) + ")" : wrap("~" + arg(0));
    case Op::add:
      return wrap(arg(0) + " + " + arg(1));
    case Op::mul:
      return wrap(widened(t) + arg(0) + " * " + arg(1));
    case Op::max:
      return t == DType::f64 ? "kiln_max_f64(" + arg(0) + ", " + arg(1) + ")"
             : is_float(t)   ? "kiln_max_f32(" + arg(0) + ", " + arg(1) + ")"
                             : wrap(int_max_fn(t) + "(" + arg(0) + ", " + arg(1) + ")");
    case Op::idiv:
      return wrap(arg(0) + " / " + arg(1));
    case Op::mod:
      return is_float(t) ? math_call("fmod", t, arg(0) + ", " + arg(1))
                         : wrap(arg(0) + " % " + arg(1));
    case Op::bit_and:
      return wrap(arg(0) + " & " + arg(1));
    case Op::bit_or:
      return wrap(arg(0) + " | " + arg(1));
    case Op::bit_xor:
      return wrap(arg(0) + " ^ " + arg(1));
    case Op::shl:
    case Op::shr: {
      int bits = dtype_bits(t);
      std::string amount = "(" + arg(1) + " & " + std::to_string(bits - 1) + ")";
      if (e.op == Op::shl) return wrap("(uint64_t)" + arg(0) + " << " + amount);
      return wrap(arg(0) + " >> " + amount);
    }
    case Op::cmplt:
      return "((uint8_t)(" + arg(0) + " < " + arg(1) + "))";
    case Op::cmpeq:
      return "((uint8_t)(" + arg(0) + " == " + arg(1) + "))";
    case Op::where:
      return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    case Op::mulacc:
      return wrap(widened(t) + arg(0) + " * " + arg(1) + " + " + arg(2));
    case Op::cast:
      if (t == DType::boolean) return "((uint8_t)(" + arg(0) + " != 0))";
      if (is_float(in) && t == DType::u64) return "kiln_f2u64(" + arg(0) + ")";
      if (is_float(in) && !is_float(t))
        return "((" + ct + ")kiln_f2i(" + arg(0) + ", " + std::to_string(int_min(t)) + ", " +
               std::to_string(int_max(t)) + "))";
      if (t == DType::f16) return "kiln_f16_to_f32(kiln_f32_to_f16((float)" + arg(0) + "))";
      if (t == DType::bf16) return "kiln_bf16_to_f32(kiln_f32_to_bf16((float)" + arg(0) + "))";
      return "((" + ct + ")" + arg(0) + ")";
    case Op::bitcast: {
      std::string from = compute_type(in), x = arg(0);
      if (in == DType::f16) x = "kiln_f32_to_f16(" + x + ")", from = "uint16_t";
      if (in == DType::bf16) x = "kiln_f32_to_bf16(" + x + ")", from = "uint16_t";
      std::string to = storage_type(t);
      return from_storage(t, bitcast(from, to, x));
    }
    default:
      throw std::runtime_error("the C renderer has no text for op '" + std::string(op_name(e.op)) +
                               "'");
  }
}

}  // namespace kiln
