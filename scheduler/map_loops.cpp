#include "scheduler/map_loops.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace kiln {

bool unit_stride(const std::vector<IntExpr>& index, const Shape& shape, const std::string& var) {
  size_t last = index.size();
  while (last > 1 && shape.size() == index.size() && shape[last - 1] == IntExpr(1))
    --last;
  for (size_t d = 0; d < index.size(); ++d) {
    std::optional<int64_t> c = affine_coefficient(index[d], var);
    if (!c) return false;
    if (d + 1 != last ? *c != 0 : (*c != 0 && *c != 1)) return false;
  }
  return true;
}

namespace {

/** A copy of `n` with `f` applied to it, or `n` itself when f changed nothing. */
template <class F>
LoopNodePtr rebuild(const LoopNodePtr& n, F&& f) {
  auto copy = std::make_shared<LoopNode>(*n);
  if (!f(*copy)) return n;
  return copy;
}

/** The only child of `n` through single-child blocks, or null. */
const LoopNodePtr* only_child(const LoopNode& n) {
  if (n.body.size() != 1) return nullptr;
  const LoopNodePtr& c = n.body[0];
  if (c->kind == LoopNode::Kind::block) return only_child(*c);
  return &c;
}

bool has_loop(const LoopNode& n);
bool vectorizable(const KernelPlan& plan, const Kernel& k, const LoopNode& n,
                  const std::string& iter, int promoted);

/** What map_parallel leaves out of a collapse: with `kernel` set, an innermost loop whose
 *  statements run unit-stride along it, which map_simd takes across vector lanes. */
struct VectorLoops {
  const KernelPlan* plan = nullptr;
  const Kernel* kernel = nullptr;
  bool keeps(const LoopNode& inner) const {
    if (!plan || !kernel || has_loop(inner)) return false;
    for (const LoopNodePtr& c : inner.body)
      if (!vectorizable(*plan, *kernel, *c, inner.iter, -1)) return false;
    return true;
  }
};

/** Maps `loop` and up to `more` loops perfectly nested in it; returns the new node. */
LoopNodePtr map_collapsed(const LoopNodePtr& loop, int more, const std::vector<std::string>& outer,
                          const VectorLoops& vector) {
  auto copy = std::make_shared<LoopNode>(*loop);
  copy->mapping = Mapping::parallel;
  const LoopNodePtr* child = only_child(*loop);
  if (more <= 0 || !child || (*child)->kind != LoopNode::Kind::loop) return copy;
  const LoopNode& inner = **child;
  std::vector<std::string> iters = outer;
  iters.push_back(loop->iter);
  if (!inner.coincident || !canonical_loop(inner) || vector.keeps(inner)) return copy;
  for (const std::string& it : iters)
    if (uses_iterator(*inner.init, it) || uses_iterator(*inner.cond, it)) return copy;
  copy->body = {map_collapsed(*child, more - 1, iters, vector)};
  return copy;
}

LoopNodePtr map_parallel_node(const LoopNodePtr& n, int max_collapse, const VectorLoops& vector,
                              int& count) {
  if (n->kind == LoopNode::Kind::loop && !(n->tile && !n->coincident)) {
    if (!n->coincident || !canonical_loop(*n)) return n;
    ++count;
    return map_collapsed(n, max_collapse - 1, {}, vector);
  }
  if (n->kind == LoopNode::Kind::stmt) return n;
  return rebuild(n, [&](LoopNode& copy) {
    bool changed = false;
    for (LoopNodePtr& c : copy.body) {
      LoopNodePtr m = map_parallel_node(c, max_collapse, vector, count);
      changed |= m != c;
      c = m;
    }
    return changed;
  });
}

/** Whether every statement below `n` accesses memory unit-stride or invariantly in `iter`; the
 *  write of a promoted reduction goes to a register and does not count. */
bool vectorizable(const KernelPlan& plan, const Kernel& k, const LoopNode& n,
                  const std::string& iter, int promoted) {
  if (n.kind == LoopNode::Kind::loop || n.kind == LoopNode::Kind::alloc ||
      n.kind == LoopNode::Kind::barrier)
    return false;
  if (n.kind != LoopNode::Kind::stmt) {
    for (const LoopNodePtr& c : n.body)
      if (!vectorizable(plan, k, *c, iter, promoted)) return false;
    return true;
  }
  const Statement& s = k.statements.at(n.statement);
  if (s.kind == Statement::Kind::call) return false;
  std::string var;
  for (size_t a = 0; a < n.args.size(); ++a) {
    if (!uses_iterator(*n.args[a], iter)) continue;
    if (!var.empty() || !plus_iterator(*n.args[a], iter)) return false;
    var = iterator_name(static_cast<int>(a));
  }
  if (var.empty()) return true;
  if (n.statement != promoted && !unit_stride(s.index, plan.buffers.at(s.buffer).shape, var))
    return false;
  std::vector<const ScalarExpr*> loads;
  if (s.value) collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    if (!unit_stride(l->index, plan.buffers.at(l->buffer).shape, var)) return false;
  return true;
}

bool has_loop(const LoopNode& n) {
  for (const LoopNodePtr& c : n.body)
    if (c->kind == LoopNode::Kind::loop || has_loop(*c)) return true;
  return false;
}

/** The lanes a float loop runs at in vectors of `vector_bytes`: one lane per element of the
 *  widest buffer its statements write (f16 and bf16 compute in f32); 0 when one writes an
 *  integer or bool buffer (left to the compiler, which packs narrow integers tighter). */
int simd_lanes(const KernelPlan& plan, const Kernel& k, const LoopNode& n, int vector_bytes) {
  if (vector_bytes <= 0) return 0;
  int widest = 0;
  std::function<bool(const LoopNode&)> floats = [&](const LoopNode& m) {
    if (m.kind == LoopNode::Kind::stmt) {
      DType t = plan.buffers.at(k.statements.at(m.statement).buffer).dtype;
      widest = std::max(widest, std::max(4, dtype_bits(t) / 8));
      return is_float(t);
    }
    for (const LoopNodePtr& c : m.body)
      if (!floats(*c)) return false;
    return true;
  };
  return floats(n) && widest > 0 ? vector_bytes / widest : 0;
}

LoopNodePtr map_simd_node(const KernelPlan& plan, const Kernel& k, const LoopNodePtr& n,
                          const LoopNode* accumulator, int vector_bytes, int& count) {
  if (n->kind == LoopNode::Kind::stmt) return n;
  if (n->kind == LoopNode::Kind::loop && n->mapping == Mapping::serial && !has_loop(*n)) {
    bool reduction_ok = false;
    if (n->reduction && accumulator && n->only_reductions) {
      ReduceKind r = k.statements.at(accumulator->statement).reduce;
      reduction_ok = r == ReduceKind::sum || r == ReduceKind::prod;
    }
    bool unit = true;
    for (const LoopNodePtr& c : n->body)
      unit = unit && vectorizable(plan, k, *c, n->iter, accumulator ? accumulator->statement : -1);
    if (((n->coincident && !n->reduction) || reduction_ok) && canonical_loop(*n) && unit) {
      ++count;
      int lanes = simd_lanes(plan, k, *n, vector_bytes);
      return rebuild(n, [lanes](LoopNode& copy) {
        copy.mapping = Mapping::simd;
        copy.simd_lanes = lanes;
        return true;
      });
    }
    return n;
  }
  // Loops collapsed into a parallel loop keep that mapping; loops below may still be simd.
  const LoopNode* acc = n->kind == LoopNode::Kind::alloc ? n.get() : accumulator;
  return rebuild(n, [&](LoopNode& copy) {
    bool changed = false;
    for (LoopNodePtr& c : copy.body) {
      LoopNodePtr m = map_simd_node(plan, k, c, acc, vector_bytes, count);
      changed |= m != c;
      c = m;
    }
    return changed;
  });
}

}  // namespace

bool unit_stride_statement(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                           const std::string& iter) {
  return stmt.kind == LoopNode::Kind::stmt && vectorizable(plan, k, stmt, iter, -1);
}

/** For a reduction update node `stmt` of `k`: the one statement iterator loop `iter` drives by
 *  +1, when the element written moves unit-stride with it (a register tile's lanes); empty
 *  otherwise. */
std::string written_lanes(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                          const std::string& iter) {
  if (stmt.kind != LoopNode::Kind::stmt) return "";
  const Statement& s = k.statements.at(stmt.statement);
  if (s.kind != Statement::Kind::reduce_update || !s.value) return "";
  std::string var;
  for (size_t a = 0; a < stmt.args.size(); ++a) {
    if (!stmt.args[a] || !uses_iterator(*stmt.args[a], iter)) continue;
    if (!var.empty() || !plus_iterator(*stmt.args[a], iter)) return "";
    var = iterator_name(static_cast<int>(a));
  }
  if (var.empty() || !unit_stride(s.index, plan.buffers.at(s.buffer).shape, var)) return "";
  return var;
}

bool stride2_statement(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                       const std::string& iter) {
  const std::string var = written_lanes(plan, k, stmt, iter);
  if (var.empty()) return false;
  const Statement& s = k.statements.at(stmt.statement);
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  bool strided = false;
  for (const ScalarExpr* l : loads) {
    const Shape& shape = plan.buffers.at(l->buffer).shape;
    if (unit_stride(l->index, shape, var)) continue;
    // Every second element of the last dimension: 2 there, nothing elsewhere, no mask.
    if (!l->mask.empty() || l->index.size() != shape.size() || l->index.empty()) return false;
    for (size_t d = 0; d < l->index.size(); ++d) {
      std::optional<int64_t> c = affine_coefficient(l->index[d], var);
      if (!c || *c != (d + 1 == l->index.size() ? 2 : 0)) return false;
    }
    strided = true;
  }
  return strided;
}

bool packable_statement(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                        const std::string& iter, std::string row) {
  const std::string var = written_lanes(plan, k, stmt, iter);
  if (var.empty()) return false;
  const Statement& s = k.statements.at(stmt.statement);
  if (row.empty()) {  // the written index's moving dimension before the lane's
    std::string last;
    for (const IntExpr& e : s.index) {
      std::set<std::string> vars;
      e.collect_vars(vars);
      if (vars.count(var)) break;
      if (vars.size() == 1) last = *vars.begin();
    }
    row = last;
  }
  if (row.empty()) return false;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads) {
    if (unit_stride(l->index, plan.buffers.at(l->buffer).shape, var)) continue;
    if (!l->mask.empty() || uses_vars(*l, {row})) return false;
    for (const IntExpr& e : l->index)  // the gather's stride: affine in the lane
      if (!affine_coefficient(e, var)) return false;
  }
  return true;
}

bool canonical_loop(const LoopNode& loop) {
  const AstExpr& c = *loop.cond;
  if (loop.step <= 0 || uses_iterator(*loop.init, loop.iter)) return false;
  if (c.kind != AstExpr::Kind::op || (c.op != "lt" && c.op != "le") || c.args.size() != 2)
    return false;
  const AstExpr& lhs = *c.args[0];
  return lhs.kind == AstExpr::Kind::iterator && lhs.name == loop.iter &&
         !uses_iterator(*c.args[1], loop.iter);
}

int map_parallel(LoopNest& nest, int max_collapse, const KernelPlan* plan, const Kernel* k) {
  int count = 0;
  VectorLoops vector{plan, k};
  if (nest.root) nest.root = map_parallel_node(nest.root, max_collapse, vector, count);
  return count;
}

int map_simd(const KernelPlan& plan, const Kernel& k, LoopNest& nest, int vector_bytes) {
  int count = 0;
  if (nest.root) nest.root = map_simd_node(plan, k, nest.root, nullptr, vector_bytes, count);
  return count;
}

}  // namespace kiln
