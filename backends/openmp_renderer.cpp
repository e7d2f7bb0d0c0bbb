#include "backends/openmp_renderer.h"

#include "scheduler/carry_scans.h"

namespace kiln {

std::string OpenMPRenderer::render_split_scan(const Context& c, const LoopNode& loop,
                                              int depth) const {
  struct Carry {
    const LoopNode* alloc;
    const ScalarExpr* before;
    const ScalarExpr* combine;
    DType dtype;
    std::string type, reg;
  };
  std::vector<Carry> carries;
  for (const LoopNode* a : c.carries) {
    const Statement& st = c.kernel.statements.at(a->statement);
    const ScalarExpr* before = carried_before(c, *a);
    const ScalarExpr* combine = carried_combine(*st.value, before);
    if (!combine) return "";
    DType t = c.plan.buffers[st.buffer].dtype;
    carries.push_back({a, before, combine, t, compute_type(t), a->name});
  }
  if (loop.cond->op != "lt") return "";  // carried loops are canonical (carry_scans.h)
  std::string pad(2 * depth, ' '), in = pad + "  ", in2 = in + "  ", in3 = in2 + "  ";
  // The parts' loops, from kiln_lo to kiln_hi: the carried statements alone, then all.
  LoopNode part(loop), totals(loop);
  part.init = totals.init = ast_iter("kiln_lo");
  part.cond = totals.cond = ast_op("lt", {ast_iter(loop.iter), ast_iter("kiln_hi")});
  totals.body.clear();
  for (const LoopNode* x : nodes_of(loop, LoopNode::Kind::stmt))
    for (const Carry& k : carries)
      if (x->statement == k.alloc->statement) totals.body.push_back(std::make_shared<LoopNode>(*x));
  auto parts = [&](bool store) {
    std::string s = in2 + "#pragma omp for schedule(static)\n" + in2 +
                    "for (int64_t kiln_p = 0; kiln_p < kiln_parts; kiln_p += 1) {\n";
    s += in3 + "const int64_t kiln_lo = kiln_first + kiln_count * kiln_p / kiln_parts;\n";
    s += in3 + "const int64_t kiln_hi = kiln_first + kiln_count * (kiln_p + 1) / kiln_parts;\n";
    for (const Carry& k : carries)
      s += in3 + k.type + " " + k.reg + " = kiln_p == 0 ? " + k.reg + "_in : " +
           (store ? k.reg + "_total[kiln_p - 1]" : combine_identity(k.combine->op, k.dtype)) +
           ";\n";
    c.carry_only = !store;
    s += render_node(c, store ? part : totals, depth + 3);
    c.carry_only = false;
    if (!store)
      for (const Carry& k : carries)
        s += in3 + k.reg + "_total[kiln_p] = " + k.reg + ";\n";
    return s + in2 + "}\n";
  };
  std::string s = pad + "const int64_t kiln_first = " + ast_expr_to_c(*loop.init) + ";\n";
  s +=
      pad + "const int64_t kiln_count = " + ast_expr_to_c(*loop.cond->args[1]) + " - kiln_first;\n";
  std::string part_size = std::to_string(kScanPart), most = std::to_string(kScanParts);
  s += pad + "const int64_t kiln_parts = kiln_count / " + part_size + " < " + most +
       " ? kiln_count / " + part_size + " : " + most + ";\n";
  s += pad + "if (kiln_parts < 2 || omp_in_parallel() || omp_get_max_threads() < 4) {\n" +
       render_node(c, loop, depth + 1) + pad + "} else {\n";
  for (const Carry& k : carries)
    s += in + "const " + k.type + " " + k.reg + "_in = " + k.reg + ";\n" + in + k.type + " " +
         k.reg + "_total[" + most + "];\n";
  s += in + "#pragma omp parallel\n" + in + "{\n" + parts(false);
  // The totals in order: each part's entry becomes the value after it.
  s += in2 + "#pragma omp single\n" + in2 +
       "for (int64_t kiln_p = 1; kiln_p < kiln_parts; kiln_p += 1) {\n";
  c.bound.clear();
  c.index_bound.clear();
  for (const Carry& k : carries) {
    const ScalarExpr* next = k.combine->args[1].get();
    c.preloaded[k.before] = k.reg + "_total[kiln_p - 1]";
    c.preloaded[next] = k.reg + "_total[kiln_p]";
    s += in3 + k.reg + "_total[kiln_p] = (" + k.type + ")" + render_value(c, *k.combine) + ";\n";
    c.preloaded.erase(next);
    c.preloaded[k.before] = k.reg;
  }
  s += in2 + "}\n" + parts(true);
  return s + in + "}\n" + pad + "}\n";
}

namespace {

/** The iterations of canonical loop `n` as C, or empty when its condition is no `<`. */
std::string trip_count(const LoopNode& n) {
  if (n.cond->kind != AstExpr::Kind::op || n.cond->op != "lt") return "";
  return "(" + ast_expr_to_c(*n.cond->args[1]) + ") - (" + ast_expr_to_c(*n.init) + ")";
}

/** Whether a scan below `n` may split across threads (scheduler/carry_scans.h). */
bool splits_below(const LoopNode& n) {
  for (const LoopNode* a : nodes_of(n, LoopNode::Kind::alloc))
    if (a->carried && a->mapping == Mapping::parallel) return true;
  return false;
}

}  // namespace

std::string OpenMPRenderer::plan_declarations(const KernelPlan& plan, const RenderOptions&) const {
  for (const Kernel& k : plan.kernels)
    if (has_scan(plan, k)) return "int omp_get_max_threads(void);\nint omp_in_parallel(void);\n";
  return "";
}

std::string OpenMPRenderer::loop_annotation(const LoopNode& loop, const LoopSite& site) const {
  if (loop.mapping == Mapping::parallel && !site.collapsed) {
    std::string s = "#pragma omp parallel for schedule(static)";
    if (site.collapse > 1) s += " collapse(" + std::to_string(site.collapse) + ")";
    // Fewer rows than threads run one after another, each scan split across the threads.
    if (std::string trips = trip_count(loop); !trips.empty() && splits_below(loop))
      s += " if(omp_get_max_threads() <= " + trips + ")";
    return s;
  }
  if (loop.mapping != Mapping::simd) return "";
  std::string s = "#pragma omp simd";
  if (loop.simd_lanes > 0) s += " simdlen(" + std::to_string(loop.simd_lanes) + ")";
  if (loop.reduction && site.accumulator) {
    ReduceKind r = site.kernel.statements.at(site.accumulator->statement).reduce;
    if (r == ReduceKind::sum) s += " reduction(+:" + site.accumulator->name + ")";
    if (r == ReduceKind::prod) s += " reduction(*:" + site.accumulator->name + ")";
    if (r == ReduceKind::sum || r == ReduceKind::prod) s += "\nKILN_INTERLEAVE";
  }
  return s;
}

bool OpenMPRenderer::outlines_parallel_bodies() const {
  return true;
}

}  // namespace kiln
