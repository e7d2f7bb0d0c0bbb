#include "scheduler/store_shared.h"

#include <cstring>
#include <map>
#include <set>

namespace kiln {

namespace {

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

/** Structural equality of two values (shared subexpressions compared once per pair). */
bool same_value(const ScalarExpr& a, const ScalarExpr& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.dtype != b.dtype || a.op != b.op || a.buffer != b.buffer ||
      !same_bits(a.value, b.value) || a.int_value != b.int_value || a.symbolic != b.symbolic ||
      a.index != b.index || a.mask.size() != b.mask.size() || a.args.size() != b.args.size())
    return false;
  if (a.symbolic && !(a.size_value == b.size_value)) return false;
  for (size_t k = 0; k < a.mask.size(); ++k)
    if (!(a.mask[k].expr == b.mask[k].expr) || !(a.mask[k].bound == b.mask[k].bound)) return false;
  for (size_t k = 0; k < a.args.size(); ++k)
    if (!same_value(*a.args[k], *b.args[k])) return false;
  return true;
}

/** Whether `e` has an op that costs far more than a load, a transcendental or a square root,
 *  on a value that varies (ir/kernel_ir.h: `recip(sqrt(D))` is computed once). */
bool costly(const ScalarExpr& e) {
  if (e.kind == ScalarExpr::Kind::op &&
      (e.op == Op::exp2 || e.op == Op::log2 || e.op == Op::sin || e.op == Op::sqrt) && varies(e))
    return true;
  for (const ScalarExprPtr& a : e.args)
    if (costly(*a)) return true;
  return false;
}

void buffers_read(const ScalarExpr& e, std::set<int>& out) {
  if (e.kind == ScalarExpr::Kind::load) out.insert(e.buffer);
  for (const ScalarExprPtr& a : e.args)
    buffers_read(*a, out);
}

bool contains(const ScalarExpr& e, const ScalarExpr& part) {
  if (same_value(e, part)) return true;
  for (const ScalarExprPtr& a : e.args)
    if (contains(*a, part)) return true;
  return false;
}

/** The subexpressions of `e`, larger before the ones inside them. */
void subexpressions(const ScalarExprPtr& e, std::vector<ScalarExprPtr>& out) {
  out.push_back(e);
  for (const ScalarExprPtr& a : e->args)
    subexpressions(a, out);
}

/** `e` with every part equal to `part` replaced by `by`. */
ScalarExprPtr replace(const ScalarExprPtr& e, const ScalarExpr& part, const ScalarExprPtr& by,
                      std::map<const ScalarExpr*, ScalarExprPtr>& done) {
  if (auto it = done.find(e.get()); it != done.end()) return it->second;
  ScalarExprPtr out = e;
  if (same_value(*e, part)) {
    out = by;
  } else {
    std::vector<ScalarExprPtr> args;
    bool changed = false;
    for (const ScalarExprPtr& a : e->args) {
      args.push_back(replace(a, part, by, done));
      changed |= args.back() != a;
    }
    if (changed) {
      auto copy = std::make_shared<ScalarExpr>(*e);
      copy->args = std::move(args);
      out = copy;
    }
  }
  done[e.get()] = out;
  return out;
}

/** Whether `index` names each iterator of a `rank`-dimensional domain once (other entries 0):
 *  every domain point writes its own element. */
bool one_element_per_point(const std::vector<IntExpr>& index, size_t rank) {
  std::set<std::string> seen;
  for (const IntExpr& e : index) {
    if (e == IntExpr(0)) continue;
    std::string s = e.str();
    bool iterator = false;
    for (size_t k = 0; k < rank; ++k)
      iterator |= s == iterator_name(static_cast<int>(k));
    if (!iterator || !seen.insert(s).second) return false;
  }
  return seen.size() == rank;
}

/** The subexpression that reduction `u` and statement `o` of `k` share and may store once in
 *  o's output (see the file comment), or null. */
ScalarExprPtr shared_value(const KernelPlan& plan, const Kernel& k, size_t u, size_t o) {
  const Statement &su = k.statements[u], &so = k.statements[o];
  if (su.kind != Statement::Kind::reduce_update || so.kind != Statement::Kind::assign ||
      !su.value || !so.value || su.extents != so.extents || !su.domain.empty() ||
      !so.domain.empty())
    return nullptr;
  const Buffer& y = plan.buffers.at(so.buffer);
  if (y.kind == BufferKind::input || (y.dtype != DType::f32 && y.dtype != DType::f64) ||
      !one_element_per_point(so.index, so.extents.size()))
    return nullptr;
  for (size_t s = 0; s < k.statements.size(); ++s) {
    const Statement& st = k.statements[s];
    std::set<int> read;
    if (st.value) buffers_read(*st.value, read);
    if (read.count(so.buffer) || (s != o && st.buffer == so.buffer)) return nullptr;
    if (st.kind == Statement::Kind::call) return nullptr;
  }
  std::vector<ScalarExprPtr> parts;
  subexpressions(su.value, parts);
  for (const ScalarExprPtr& part : parts) {
    if (part->kind != ScalarExpr::Kind::op || part->dtype != y.dtype || !costly(*part) ||
        !contains(*so.value, *part))
      continue;
    std::set<int> read;
    buffers_read(*part, read);
    bool stable = !read.count(so.buffer);
    for (size_t s = u; s <= o && stable; ++s)
      stable = !read.count(k.statements[s].buffer);
    if (stable) return part;
  }
  return nullptr;
}

bool store_one(const KernelPlan& plan, Kernel& k) {
  for (size_t u = 0; u < k.statements.size(); ++u)
    for (size_t o = u + 1; o < k.statements.size(); ++o) {
      ScalarExprPtr part = shared_value(plan, k, u, o);
      if (!part) continue;
      Statement& so = k.statements[o];
      auto load = std::make_shared<ScalarExpr>();
      load->kind = ScalarExpr::Kind::load;
      load->dtype = part->dtype;
      load->buffer = so.buffer;
      load->index = so.index;
      std::map<const ScalarExpr*, ScalarExprPtr> in_u, in_o;
      Statement store;
      store.kind = Statement::Kind::assign;
      store.extents = so.extents;
      store.buffer = so.buffer;
      store.index = so.index;
      store.value = part;
      k.statements[u].value = replace(k.statements[u].value, *part, load, in_u);
      so.value = replace(so.value, *part, load, in_o);
      k.statements.insert(k.statements.begin() + static_cast<std::ptrdiff_t>(u), store);
      for (size_t s = 0; s < k.statements.size(); ++s)
        k.statements[s].name = "S" + std::to_string(s);
      return true;
    }
  return false;
}

}  // namespace

int store_shared_values(KernelPlan& plan) {
  int n = 0;
  for (Kernel& k : plan.kernels)
    while (store_one(plan, k))
      ++n;
  return n;
}

}  // namespace kiln
