#include "ir/kernel_ir.h"

#include <algorithm>
#include <set>

namespace kiln {

std::string iterator_name(int k) {
  return "i" + std::to_string(k);
}

namespace {

void collect_loads(const ScalarExpr& e, std::vector<const ScalarExpr*>& out,
                   std::set<const ScalarExpr*>& seen) {
  if (!seen.insert(&e).second) return;
  if (e.kind == ScalarExpr::Kind::load) out.push_back(&e);
  for (const ScalarExprPtr& a : e.args)
    collect_loads(*a, out, seen);
}

}  // namespace

void collect_loads(const ScalarExpr& e, std::vector<const ScalarExpr*>& out) {
  std::set<const ScalarExpr*> seen;
  collect_loads(e, out, seen);
}

bool has_gather(const ScalarExpr& e) {
  std::vector<const ScalarExpr*> loads;
  collect_loads(e, loads);
  for (const ScalarExpr* l : loads)
    if (is_gather(*l)) return true;
  return false;
}

const ScalarExpr& scatter_position(const Statement& s) {
  return *s.value->args.at(0)->args.at(0);
}

const ScalarExpr& subexpression(const ScalarExpr& root, const std::vector<int>& path) {
  const ScalarExpr* e = &root;
  for (int c : path)
    e = e->args.at(static_cast<size_t>(c)).get();
  return *e;
}

bool varies(const ScalarExpr& e) {
  if (e.kind == ScalarExpr::Kind::load || e.kind == ScalarExpr::Kind::iterator) return true;
  for (const ScalarExprPtr& a : e.args)
    if (varies(*a)) return true;
  return false;
}

namespace {

ScalarExprPtr substitute_in(const ScalarExprPtr& e, const std::map<std::string, IntExpr>& sub,
                            int buffer, const std::vector<IntExpr>& at,
                            const std::vector<IntExpr>& to,
                            std::map<const ScalarExpr*, ScalarExprPtr>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  auto out = std::make_shared<ScalarExpr>(*e);
  if (out->kind == ScalarExpr::Kind::load && out->buffer == buffer && out->index == at)
    out->index = to;
  else
    for (IntExpr& i : out->index)
      i = i.substitute(sub);
  for (MaskBound& m : out->mask)
    m = {m.expr.substitute(sub), m.bound.substitute(sub)};
  for (ScalarExprPtr& a : out->args)
    a = substitute_in(a, sub, buffer, at, to, memo);
  memo[e.get()] = out;
  return out;
}

}  // namespace

ScalarExprPtr substitute_iterators(const ScalarExprPtr& e,
                                   const std::map<std::string, IntExpr>& sub, int buffer,
                                   const std::vector<IntExpr>& at, const std::vector<IntExpr>& to) {
  std::map<const ScalarExpr*, ScalarExprPtr> memo;
  return substitute_in(e, sub, buffer, at, to, memo);
}

bool reuses_a_load(const Statement& s) {
  if (!s.value) return false;
  std::set<std::string> element;
  for (const IntExpr& e : s.index)
    for (size_t d = 0; d < s.extents.size(); ++d) {
      std::string it = iterator_name(static_cast<int>(d));
      if (s.extents[d] != IntExpr(1) && e.key() == IntExpr::var(it).key()) element.insert(it);
    }
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    for (const std::string& it : element)
      if (!uses_vars(*l, {it})) return true;
  return false;
}

bool uses_vars(const ScalarExpr& e, const std::set<std::string>& vars) {
  auto uses = [&](const IntExpr& x) {
    std::set<std::string> found;
    x.collect_vars(found);
    for (const std::string& v : found)
      if (vars.count(v)) return true;
    return false;
  };
  for (const IntExpr& x : e.index)
    if (uses(x)) return true;
  for (const MaskBound& m : e.mask)
    if (uses(m.expr) || uses(m.bound)) return true;
  for (const ScalarExprPtr& a : e.args)
    if (uses_vars(*a, vars)) return true;
  return false;
}

bool lane_value(const KernelPlan& plan, const ScalarExpr& e, const std::set<std::string>& vars,
                DType t) {
  if (!uses_vars(e, vars)) return true;
  // f16 and bf16 values compute in f32 (the C renderers convert at loads and round at stores).
  auto narrow = [](DType d) { return d == DType::f16 || d == DType::bf16; };
  auto fits = [&](DType d) { return d == t || (t == DType::f32 && narrow(d)); };
  if (!fits(e.dtype)) return false;
  if (is_gather(e)) return false;
  if (e.kind == ScalarExpr::Kind::load) {
    // A mask moves by -1, 0 or +1 per lane: the lanes it keeps are one range (rendered as a
    // load of those lanes, zeros elsewhere).
    for (const MaskBound& m : e.mask)
      for (const std::string& v : vars) {
        std::optional<int64_t> a = affine_coefficient(m.expr, v);
        if (!a || *a < -1 || *a > 1 || affine_coefficient(m.bound, v) != 0) return false;
      }
    return fits(plan.buffers.at(e.buffer).dtype);
  }
  if (e.kind != ScalarExpr::Kind::op || !e.mask.empty()) return false;
  // A select whose condition is one scalar for all the lanes (a bound of the rows and the
  // reduction, tile_bounded.h): either value across the lanes.
  if (e.op == Op::where)
    return e.args.size() == 3 && !uses_vars(*e.args[0], vars) &&
           lane_value(plan, *e.args[1], vars, t) && lane_value(plan, *e.args[2], vars, t);
  if (e.op != Op::add && e.op != Op::mul && e.op != Op::neg && e.op != Op::copy &&
      e.op != Op::mulacc)
    return false;
  for (const ScalarExprPtr& a : e.args)
    if (!lane_value(plan, *a, vars, t)) return false;
  return true;
}

namespace {

std::string index_str(const std::vector<IntExpr>& index) {
  std::string s = "[";
  for (size_t k = 0; k < index.size(); ++k)
    s += (k ? ", " : "") + index[k].str();
  return s + "]";
}

/** Text of a value; shared subexpressions print again where used, so the text of a deep DAG is
 *  cut at `budget` characters instead of growing exponentially. */
std::string expr_str(const KernelPlan& plan, const ScalarExpr& e, int& budget) {
  if (budget <= 0) return "...";
  std::string s;
  switch (e.kind) {
    case ScalarExpr::Kind::load:
      s = plan.buffers[e.buffer].name + index_str(e.index);
      if (is_gather(e))
        s += " with " + std::string(kGatherVar) + " = " + expr_str(plan, *e.args[0], budget);
      break;
    case ScalarExpr::Kind::constant: {
      Node n;
      n.dtype = e.dtype;
      n.value = e.value;
      n.int_value = e.int_value;
      n.symbolic = e.symbolic;
      n.size_value = e.size_value;
      s = constant_str(n);
      break;
    }
    case ScalarExpr::Kind::iterator:
      s = e.index[0].str();
      break;
    case ScalarExpr::Kind::op: {
      s = std::string(op_name(e.op)) + "(";
      for (size_t k = 0; k < e.args.size(); ++k)
        s += (k ? ", " : "") + expr_str(plan, *e.args[k], budget);
      s += ")";
      break;
    }
  }
  for (const MaskBound& m : e.mask)
    s += " if 0 <= " + m.expr.str() + " < " + m.bound.str();
  budget -= static_cast<int>(s.size());
  return s;
}

std::string expr_str(const KernelPlan& plan, const ScalarExpr& e) {
  int budget = 4000;
  return expr_str(plan, e, budget);
}

/** "gemm(a, t3)": a call statement's routine and whole argument buffers. */
std::string call_str(const KernelPlan& plan, const Statement& st) {
  std::string s = st.routine + "(";
  for (size_t k = 0; k < st.args.size(); ++k)
    s += (k ? ", " : "") + plan.buffers[st.args[k]].name;
  return s + ")";
}

}  // namespace

std::string statement_to_text(const KernelPlan& plan, const Statement& st) {
  std::string dom;
  for (size_t d = 0; d < st.extents.size(); ++d)
    dom += (d ? ", " : "") + iterator_name(static_cast<int>(d)) + " < " + st.extents[d].str();
  for (const IntExpr& e : st.domain)
    dom += ", " + e.str() + " >= 0";
  for (const IntExpr& e : st.needed)
    dom += ", read where " + e.str() + " >= 0";
  std::string target = plan.buffers[st.buffer].name;
  if (st.kind != Statement::Kind::call) target += index_str(st.index);
  std::string s = st.name + " {" + dom + "}: " + target;
  if (st.kind == Statement::Kind::call)
    s += " = extern " + call_str(plan, st);
  else if (st.kind == Statement::Kind::assign)
    s += " = " + expr_str(plan, *st.value);
  else if (st.kind == Statement::Kind::scatter)
    s += " = scatter " + expr_str(plan, *st.value);
  else if (st.kind == Statement::Kind::reduce_init)
    s += " = init " + std::string(reduce_kind_name(st.reduce));
  else
    s += " " + std::string(reduce_kind_name(st.reduce)) + "= " + expr_str(plan, *st.value);
  return s;
}

size_t code_kernel(const KernelPlan& plan, size_t k) {
  int of = plan.kernels.at(k).code_of;
  return of >= 0 ? static_cast<size_t>(of) : k;
}

size_t kernel_params(const KernelPlan& plan) {
  size_t n = 0;
  for (const Kernel& k : plan.kernels)
    n = std::max(n, k.buffers.size());
  return n;
}

const char* buffer_kind_name(BufferKind k) {
  return k == BufferKind::input ? "input" : k == BufferKind::output ? "output" : "temp";
}

std::string plan_to_text(const KernelPlan& plan) {
  std::string s = "buffers:\n";
  for (const Buffer& b : plan.buffers) {
    s += "  " + b.name + " : " + std::string(dtype_name(b.dtype)) + shape_str(b.shape) + "  " +
         buffer_kind_name(b.kind);
    s += b.kind == BufferKind::temp ? " slot " + std::to_string(b.slot)
                                    : " arg " + std::to_string(b.arg);
    if (b.window_of >= 0)
      s += " window of " + plan.buffers[b.window_of].name + " from " + b.window_offset.str();
    s += "\n";
  }
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const Kernel& k = plan.kernels[i];
    s += "kernel " + k.name;
    if (k.code_of >= 0) {
      s += " (runs the code of kernel " + std::to_string(k.code_of) + " on";
      for (int b : k.buffers)
        s += " " + plan.buffers[b].name;
      s += ")";
    }
    s += ":\n";
    for (const Statement& st : k.statements)
      s += "  " + statement_to_text(plan, st) + "\n";
  }
  return s;
}

}  // namespace kiln
