/** \file
 * CUDA: thread loops over contiguous elements in 16-byte vectors. A memory-bound row or
 * elementwise kernel waits on its loads; one 16-byte load moves four floats where four scalar
 * loads would need four instructions and four slots in flight. Each thread takes W consecutive
 * iterations at a time (W × the widest element = 16 bytes): the loads and stores that step one
 * element per iteration become one vector access each, the rest of the body runs per lane as
 * it is. The addresses are tested at run time: the iterations before the first access's first
 * aligned vector and those after the last vector run one by one, and all of them where the
 * accesses are not aligned alike.
 */
#include <algorithm>
#include <map>
#include <set>

#include "backends/cuda_renderer.h"

namespace kiln {

namespace {

/** One access the vector loop makes a vector: a load (`load` set) or a statement's store. */
struct VectorAccess {
  const LoopNode* stmt = nullptr;
  const Statement* statement = nullptr;
  const ScalarExpr* load = nullptr;  ///< null: the statement's store
  int buffer = -1;
  int64_t element_bytes = 0;
};

/** Loads of `e` that every evaluation of it performs: not below a mask or a select's arms,
 *  which C evaluates only when their condition holds. Each node once: `e` is a DAG. */
void unconditional_loads(const ScalarExpr& e, std::vector<const ScalarExpr*>& out,
                         std::set<const ScalarExpr*>& seen) {
  if (!e.mask.empty() || !seen.insert(&e).second) return;
  if (e.kind == ScalarExpr::Kind::load) out.push_back(&e);
  size_t args = e.kind == ScalarExpr::Kind::op && e.op == Op::where ? 1 : e.args.size();
  for (size_t k = 0; k < args; ++k)
    unconditional_loads(*e.args[k], out, seen);
}

/** The C type of `bytes` bytes moved in one access. */
const char* vector_type(int64_t bytes) {
  return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned int";
}

}  // namespace

std::string CudaRenderer::render_vector_loop(const Context& c, const LoopNode& n, int depth) const {
  // (A row's lanes, LoopNode::lanes_apart, walk it a lane at a time, the rows across the warp.)
  if (n.mapping != Mapping::thread_x || n.step != 1 || c.options.bounds_checks || lanes_loop(c))
    return "";
  // `iter < end` or `iter <= end - 1`, end free of the iterator.
  const AstExpr& cond = *n.cond;
  if (cond.kind != AstExpr::Kind::op || (cond.op != "lt" && cond.op != "le") ||
      cond.args.size() != 2 || cond.args[0]->kind != AstExpr::Kind::iterator ||
      cond.args[0]->name != n.iter || uses_iterator(*cond.args[1], n.iter))
    return "";
  AstExprPtr end = cond.op == "lt" ? cond.args[1] : ast_op("add", {cond.args[1], ast_int(1)});
  std::vector<LoopNodePtr> body;
  flatten_blocks(n.body, body);
  std::map<int, int> writes;  // buffers the body stores to in memory: how many statements
  std::set<int> reads;
  for (const LoopNodePtr& s : body) {
    if (s->kind != LoopNode::Kind::stmt) return "";
    const Statement& st = c.kernel.statements.at(s->statement);
    if (st.kind == Statement::Kind::call || st.kind == Statement::Kind::scatter) return "";
    if (!c.promoted.count(&st)) ++writes[st.buffer];
    std::vector<const ScalarExpr*> loads;
    if (st.value) collect_loads(*st.value, loads);
    for (const ScalarExpr* l : loads)
      reads.insert(l->buffer);
  }
  // An access steps one element per iteration when the one statement iterator the loop drives
  // is the loop's iterator plus a constant of it, and the element offset's coefficient in it
  // is 1.
  auto contiguous = [&](const LoopNode& s, int buffer, const std::vector<IntExpr>& index) {
    std::set<std::string> along = driven_iterators(s, n.iter);
    if (along.size() != 1) return false;
    const std::string& i = *along.begin();
    for (size_t k = 0; k < s.args.size(); ++k)
      if (s.args[k] && iterator_name(static_cast<int>(k)) == i &&
          !plus_iterator(*s.args[k], n.iter))
        return false;
    return affine_coefficient(linear_index(c, buffer, index), i) == 1;
  };
  std::vector<VectorAccess> accesses;
  for (const LoopNodePtr& s : body) {
    const Statement& st = c.kernel.statements.at(s->statement);
    auto add = [&](const ScalarExpr* load, int buffer) {
      int64_t bytes = dtype_bits(c.plan.buffers[buffer].dtype) / 8;
      if (bytes > 0) accesses.push_back({s.get(), &st, load, buffer, bytes});
    };
    // A buffer the body writes is read and written per lane, in program order.
    if (st.kind == Statement::Kind::assign && !c.promoted.count(&st) && writes[st.buffer] == 1 &&
        !reads.count(st.buffer) && contiguous(*s, st.buffer, st.index))
      add(nullptr, st.buffer);
    std::vector<const ScalarExpr*> loads;
    std::set<const ScalarExpr*> seen;
    if (st.value) unconditional_loads(*st.value, loads, seen);
    for (const ScalarExpr* l : loads)
      if (!writes.count(l->buffer) && contiguous(*s, l->buffer, l->index)) add(l, l->buffer);
  }
  int64_t widest = 0;
  for (const VectorAccess& a : accesses)
    widest = std::max(widest, a.element_bytes);
  if (accesses.empty() || widest > 8) return "";
  const int64_t lanes = 16 / widest;
  // Accesses narrower than a 32-bit register stay per lane.
  accesses.erase(std::remove_if(accesses.begin(), accesses.end(),
                                [&](const VectorAccess& a) { return a.element_bytes * lanes < 4; }),
                 accesses.end());
  if (accesses.empty()) return "";

  auto [index, stride] = thread_span(c, n);
  const std::string W = std::to_string(lanes), it = n.iter;
  std::string pad(2 * depth, ' '), in = pad + "  ", in2 = in + "  ", in3 = in2 + "  ";
  auto address = [&](const VectorAccess& a, const std::string& at) {
    const std::vector<IntExpr>& idx = a.load ? a.load->index : a.statement->index;
    return "{ const int64_t " + it + " = " + at + "; " + bind_line(a.stmt->args) + "kiln_at = &b" +
           std::to_string(a.buffer) + "[" + int_expr_to_c(linear_index(c, a.buffer, idx), c.sizes) +
           "]; }";
  };
  std::string s = pad + "{\n";
  // The first access's address decides how many iterations run before the first vector (the
  // rows of an odd-sized matrix start anywhere); every access must then be aligned.
  const VectorAccess& first = accesses[0];
  std::string first_bytes = std::to_string(first.element_bytes * lanes);
  s += in + "const int64_t kiln_init = " + ast_expr_to_c(*n.init) + ";\n";
  s += in + "const int64_t kiln_count = " + ast_expr_to_c(*end) + " - kiln_init;\n";
  s += in + "int64_t kiln_head, kiln_vend = kiln_init;\n";
  s += in + "{ const void* kiln_at; " + address(first, "kiln_init") +
       " kiln_head = (int64_t)((0ull - (unsigned long long)kiln_at) & (" + first_bytes +
       "ull - 1)) / " + std::to_string(first.element_bytes) + "; }\n";
  s += in + "kiln_head = kiln_count < kiln_head ? (kiln_count > 0 ? kiln_count : 0) : kiln_head;\n";
  s += in + "bool kiln_aligned = true;\n";
  for (const VectorAccess& a : accesses) {
    std::string bytes = std::to_string(a.element_bytes * lanes);
    s += in + "{ const void* kiln_at; " + address(a, "kiln_init + kiln_head") +
         " kiln_aligned &= ((unsigned long long)kiln_at & (" + bytes + "ull - 1)) == 0; }\n";
  }
  s += in + "if (!kiln_aligned) {\n" + in2 + "kiln_head = 0;\n" + in + "} else {\n";
  s += in2 + "kiln_vend = kiln_init + kiln_head + (kiln_count - kiln_head) / " + W + " * " + W +
       ";\n";
  s += in2 + "KILN_THREAD_UNROLL\n";
  s += in2 + "for (int64_t kiln_c = kiln_init + kiln_head + " + W + " * " + index +
       "; kiln_c < kiln_vend; kiln_c += " + W + " * " + stride + ") {\n";
  // The vectors loaded, each an array of its lanes; the stores' lanes in compute registers.
  std::map<const Statement*, std::string> stores;
  for (size_t k = 0; k < accesses.size(); ++k) {
    const VectorAccess& a = accesses[k];
    DType dtype = c.plan.buffers[a.buffer].dtype;
    std::string name = "kiln_l" + std::to_string(k), type = vector_type(a.element_bytes * lanes);
    if (!a.load) {
      stores[a.statement] = name;
      s += in3 + compute_type(dtype) + " " + name + "[" + W + "];\n";
      continue;
    }
    s += in3 + "alignas(16) " + storage_type(dtype) + " " + name + "[" + W + "];\n";
    s += in3 + "{ const " + storage_type(dtype) + "* kiln_at; " + address(a, "kiln_c") + " *(" +
         type + "*)" + name + " = *(const " + type + "*)kiln_at; }\n";
  }
  c.loops.push_back(&n);
  for (int64_t l = 0; l < lanes; ++l) {
    for (size_t k = 0; k < accesses.size(); ++k)
      if (accesses[k].load)
        c.preloaded[accesses[k].load] =
            from_storage(c.plan.buffers[accesses[k].buffer].dtype,
                         "kiln_l" + std::to_string(k) + "[" + std::to_string(l) + "]");
    for (const auto& [st, name] : stores)
      c.promoted[st] = name + "[" + std::to_string(l) + "]";
    s += in3 + "{\n" + in3 + "  const int64_t " + it + " = kiln_c + " + std::to_string(l) + ";\n";
    for (const LoopNodePtr& stmt : body)
      s += render_node(c, *stmt, depth + 4);
    s += in3 + "}\n";
  }
  c.preloaded.clear();
  for (const auto& [st, name] : stores)
    c.promoted.erase(st);
  c.loops.pop_back();
  for (size_t k = 0; k < accesses.size(); ++k) {
    const VectorAccess& a = accesses[k];
    if (a.load) continue;
    DType dtype = c.plan.buffers[a.buffer].dtype;
    std::string name = "kiln_l" + std::to_string(k), type = vector_type(a.element_bytes * lanes);
    s += in3 + "{\n" + in3 + "  alignas(16) " + storage_type(dtype) + " kiln_v[" + W + "];\n";
    for (int64_t l = 0; l < lanes; ++l) {
      std::string lane = "[" + std::to_string(l) + "]";
      s += in3 + "  kiln_v" + lane + " = " + to_storage(dtype, name + lane) + ";\n";
    }
    s += in3 + "  " + storage_type(dtype) + "* kiln_at; " + address(a, "kiln_c") + "\n";
    s += in3 + "  *(" + type + "*)kiln_at = *(const " + type + "*)kiln_v;\n" + in3 + "}\n";
  }
  s += in2 + "}\n" + in + "}\n";
  // One plain loop over the iterations no vector took: those before the first, those after
  // the last; or all of them where the accesses are not aligned alike.
  s += in + "const int64_t kiln_rest = kiln_head + (kiln_init + kiln_count - kiln_vend);\n";
  s +=
      in + "for (int64_t kiln_r = " + index + "; kiln_r < kiln_rest; kiln_r += " + stride + ") {\n";
  s += in2 + "const int64_t " + it +
       " = kiln_r < kiln_head ? kiln_init + kiln_r : kiln_vend + (kiln_r - kiln_head);\n";
  c.loops.push_back(&n);
  for (const LoopNodePtr& stmt : body)
    s += render_node(c, *stmt, depth + 2);
  c.loops.pop_back();
  s += in + "}\n";
  return s + pad + "}\n";
}

}  // namespace kiln
