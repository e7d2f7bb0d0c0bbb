// The CUDA rendering of a contraction's block tile (scheduler/gpu_tile.h): the operands of each
// reduction block staged in shared memory by the whole block, each thread's elements in
// registers.
#include <algorithm>
#include <stdexcept>

#include "backends/cuda_renderer.h"

namespace kiln {

namespace {

/** What the rendering of one block tile needs. */
struct TileParts {
  std::vector<const LoopNode*> before, after;  ///< statement nodes around the reduction
  const LoopNode* reduction = nullptr;         ///< the local alloc of the accumulator
  std::vector<const LoopNode*> loops;          ///< its loops, outermost first
  const LoopNode* update = nullptr;            ///< the update's statement node
};

TileParts parts_of(const LoopNode& tile) {
  TileParts p;
  std::vector<LoopNodePtr> nodes;
  flatten_blocks(tile.body, nodes);
  for (const LoopNodePtr& n : nodes) {
    if (n->kind == LoopNode::Kind::alloc && !p.reduction) {
      p.reduction = n.get();
      p.update = perfect_nest(*n->body.at(0), p.loops);
    } else if (n->kind == LoopNode::Kind::stmt) {
      (p.reduction ? p.after : p.before).push_back(n.get());
    } else {
      throw std::logic_error("a block tile's body holds statements and one reduction only");
    }
  }
  if (!p.reduction || !p.update) throw std::logic_error("a block tile without its reduction");
  return p;
}

/** The trip count of rectangular loop `l` as C. */
std::string extent_c(const LoopNode& l) {
  AstExprPtr upper =
      l.cond->op == "lt" ? l.cond->args[1] : ast_op("add", {l.cond->args[1], ast_int(1)});
  return "(" + ast_expr_to_c(*ast_op("sub", {upper, l.init})) + ")";
}

}  // namespace

std::string CudaRenderer::render_block_tile(const Context& c, const LoopNode& n, int depth) const {
  const TileParts p = parts_of(n);
  const Statement& st = c.kernel.statements.at(n.statement);
  const int64_t R = n.tile_rows, L = n.tile_lanes, r = n.thread_rows, l = n.thread_lanes,
                D = n.pack_depth;
  const int64_t thread_rows = R / r, thread_cols = L / l;
  if (R % r || L % l || r % 4 || l % 4 || thread_rows * thread_cols != kCudaBlockThreads)
    throw std::logic_error("a block tile that does not split over " +
                           std::to_string(kCudaBlockThreads) + " threads in groups of 4");
  const std::string pad(2 * depth, ' '), in = pad + "  ", N = n.name;
  const std::string acc_type = compute_type(c.plan.buffers[st.buffer].dtype);
  const std::string m = N + "_m", j = N + "_n", kk = N + "_kk";
  // A thread's rows: groups of 4 rows, thread_rows · 4 apart, so that the threads of a warp
  // read consecutive words of a shared row (likewise for lanes).
  const std::string row = "((" + m + " / 4) * " + std::to_string(thread_rows * 4) + " + " + N +
                          "_tr * 4 + " + m + " % 4)";
  const std::string col = "((" + j + " / 4) * " + std::to_string(thread_cols * 4) + " + " + N +
                          "_tc * 4 + " + j + " % 4)";
  const std::string ri = n.tile_row, li = n.tile_lane;
  const std::string row_ok = ast_expr_to_c(*n.tile_row_cond),
                    lane_ok = ast_expr_to_c(*n.tile_lane_cond);

  // The update's loads: those that do not move along the lanes are staged per row, the others
  // per lane. A load is read along its last dimension in memory: the fill walks the reduction
  // first where that dimension moves with the innermost reduction loop.
  std::vector<const ScalarExpr*> all, loads;
  collect_loads(*st.value, all);
  for (const ScalarExpr* e : all)
    if (std::find(loads.begin(), loads.end(), e) == loads.end()) loads.push_back(e);
  const std::set<std::string> lanes = driven_iterators(*p.update, li);
  const std::set<std::string> inner_k = driven_iterators(*p.update, p.loops.back()->iter);

  std::string s = pad + "{\n" + in + "/* " + N + ": a " + std::to_string(R) + "x" +
                  std::to_string(L) + " block tile of " + st.name + ", " + std::to_string(r) + "x" +
                  std::to_string(l) + " per thread (scheduler/gpu_tile.h) */\n";
  std::vector<bool> by_lane(loads.size()), k_first(loads.size());
  for (size_t q = 0; q < loads.size(); ++q) {
    by_lane[q] = uses_vars(*loads[q], lanes);
    std::set<std::string> used;
    if (!loads[q]->index.empty()) loads[q]->index.back().collect_vars(used);
    for (const std::string& it : inner_k)
      k_first[q] = k_first[q] || used.count(it) > 0;
    // Rows of a multiple of 4 elements plus 4, 16-byte aligned: kiln_lds4 reads groups of 4.
    s += in + "__shared__ __align__(16) " + compute_type(c.plan.buffers[loads[q]->buffer].dtype) + " " + N +
         "_s" + std::to_string(q) + "[" + std::to_string(D) + "][" +
         std::to_string((by_lane[q] ? L : R) + 4) + "];\n";
  }
  s += in + "const int " + N + "_tr = threadIdx.x / " + std::to_string(thread_cols) + ", " + N +
       "_tc = threadIdx.x % " + std::to_string(thread_cols) + ";\n";
  s += in + "const int64_t " + N + "_r0 = " + ast_expr_to_c(*n.tile_row_origin) + ", " + N +
       "_l0 = " + ast_expr_to_c(*n.tile_lane_origin) + ";\n";
  s += in + acc_type + " " + N + "_acc[" + std::to_string(r) + "][" + std::to_string(l) + "];\n";

  // Each element of the thread: `body` with the row and lane iterators bound.
  auto each_element = [&](const std::string& body) {
    std::string e = in + "#pragma unroll\n" + in + "for (int " + m + " = 0; " + m + " < " +
                    std::to_string(r) + "; ++" + m + ")\n" + in + "#pragma unroll\n" + in +
                    "for (int " + j + " = 0; " + j + " < " + std::to_string(l) + "; ++" + j +
                    ") {\n";
    e += in + "  const int64_t " + ri + " = " + N + "_r0 + " + row + ", " + li + " = " + N +
         "_l0 + " + col + ";\n";
    return e + body + in + "}\n";
  };
  const std::string element = render_index(c, st.buffer, st.index);
  const DType dtype = c.plan.buffers[st.buffer].dtype;
  const std::string acc = N + "_acc[" + m + "][" + j + "]";
  {
    std::string body = in + "  " + acc + " = (" + acc_type + ")0;\n";
    body += in + "  if (" + row_ok + " && " + lane_ok + ") {\n";
    for (const LoopNode* b : p.before)
      body += render_node(c, *b, depth + 3);
    body += in + "    {\n" + bind_iterators(p.reduction->args, in + "      ");
    body += in + "      " + acc + " = " + from_storage(dtype, element) + ";\n" + in + "    }\n";
    s += each_element(body + in + "  }\n");
  }

  // The reduction loops as one: flattened iteration f of K, split into the loops' iterators.
  std::string total;
  for (const LoopNode* loop : p.loops)
    total += (total.empty() ? "" : " * ") + extent_c(*loop);
  s += in + "const int64_t " + N + "_K = " + total + ";\n";
  auto split_k = [&](const std::string& f, const std::string& pad2) {
    std::string out, q = f;
    for (size_t k = p.loops.size(); k-- > 0;) {
      const LoopNode& loop = *p.loops[k];
      std::string value = k == 0 ? q : "(" + q + ") % " + extent_c(loop);
      out += pad2 + "const int64_t " + loop.iter + " = " + ast_expr_to_c(*loop.init) + " + " +
             value + ";\n";
      q = "(" + q + ") / " + extent_c(loop);
    }
    return out;
  };
  const std::string k0 = N + "_k", e = N + "_e", x = N + "_x", v = N + "_v";
  const std::string in2 = in + "  ", in3 = in2 + "  ", in4 = in3 + "  ";
  // Each thread's share of the copy of each operand: elements e = threadIdx.x + 256 p of the
  // (rows or lanes) × depth block, in the order memory holds them.
  auto share = [&](size_t q, const std::string& body) {
    const int64_t n_e = (by_lane[q] ? L : R) * D;
    const int64_t per = (n_e + kCudaBlockThreads - 1) / kCudaBlockThreads;
    std::string t = in2 + "#pragma unroll\n" + in2 + "for (int " + N + "_p = 0; " + N + "_p < " +
                    std::to_string(per) + "; ++" + N + "_p) {\n";
    t += in3 + "const int " + e + " = threadIdx.x + " + std::to_string(kCudaBlockThreads) +
         " * " + N + "_p;\n";
    const int64_t extent = by_lane[q] ? L : R;
    if (k_first[q])
      t += in3 + "const int " + kk + " = " + e + " % " + std::to_string(D) + ", " + x + " = " +
           e + " / " + std::to_string(D) + ";\n";
    else
      t += in3 + "const int " + x + " = " + e + " % " + std::to_string(extent) + ", " + kk +
           " = " + e + " / " + std::to_string(extent) + ";\n";
    return t + body + in2 + "}\n";
  };
  // Loads the operands of the reduction block from `base` into the thread's registers, zeros
  // outside the domain.
  auto fetch = [&](const std::string& base) {
    std::string t;
    for (size_t q = 0; q < loads.size(); ++q) {
      const int64_t n_e = (by_lane[q] ? L : R) * D;
      std::string body = in3 + "const int64_t " + ri + " = " + N + "_r0" +
                         (by_lane[q] ? "" : " + " + x) + ", " + li + " = " + N + "_l0" +
                         (by_lane[q] ? " + " + x : "") + ", " + N + "_f = " + base + " + " + kk +
                         ";\n";
      std::string type = compute_type(c.plan.buffers[loads[q]->buffer].dtype);
      std::string reg = N + "_p" + std::to_string(q) + "[" + N + "_p]";
      body += in3 + reg + " = (" + type + ")0;\n";
      body += in3 + "if (" + e + " < " + std::to_string(n_e) + " && " + N + "_f < " + N +
              "_K && " + (by_lane[q] ? lane_ok : row_ok) + ") {\n";
      body += split_k(N + "_f", in4) + bind_iterators(p.update->args, in4);
      c.bound.clear();
      c.index_bound.clear();
      body += in4 + reg + " = " + render_value(c, *loads[q]) + ";\n" + in3 + "}\n";
      t += share(q, body);
    }
    return t;
  };
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t per = ((by_lane[q] ? L : R) * D + kCudaBlockThreads - 1) / kCudaBlockThreads;
    s += in + compute_type(c.plan.buffers[loads[q]->buffer].dtype) + " " + N + "_p" +
         std::to_string(q) + "[" + std::to_string(per) + "];\n";
  }
  // The first block's operands, then per block: registers to shared memory, the next block's
  // loads issued (they complete while this block computes), this block's updates.
  s += in + "{\n" + in2 + "const int64_t " + k0 + " = 0;\n" + fetch(k0) + in + "}\n";
  s += in + "for (int64_t " + k0 + " = 0; " + k0 + " < " + N + "_K; " + k0 + " += " +
       std::to_string(D) + ") {\n";
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t n_e = (by_lane[q] ? L : R) * D;
    s += share(q, in3 + "if (" + e + " < " + std::to_string(n_e) + ") " + N + "_s" +
                      std::to_string(q) + "[" + kk + "][" + x + "] = " + N + "_p" +
                      std::to_string(q) + "[" + N + "_p];\n");
  }
  s += in2 + "__syncthreads();\n";
  s += in2 + "if (" + k0 + " + " + std::to_string(D) + " < " + N + "_K) {\n" + in2 +
       "const int64_t " + N + "_next = " + k0 + " + " + std::to_string(D) + ";\n" +
       fetch(N + "_next") + in2 + "}\n";
  // Compute: per reduction iteration, each thread's rows and lanes of the staged operands into
  // registers (16-byte reads of groups of 4), then every element's update from them.
  s += in2 + "const int64_t " + N + "_kd = " + N + "_K - " + k0 + ";\n";
  s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < " +
       std::to_string(D) + "; ++" + kk + ") {\n";
  s += in3 + "if (" + kk + " >= " + N + "_kd) break;\n";
  c.bound.clear();
  c.index_bound.clear();
  for (size_t q = 0; q < loads.size(); ++q) {
    const std::string reg = N + "_o" + std::to_string(q);
    const int64_t count = by_lane[q] ? l : r;
    const std::string it = by_lane[q] ? j : m;
    const int64_t spread = 4 * (by_lane[q] ? thread_cols : thread_rows);
    s += in3 + compute_type(c.plan.buffers[loads[q]->buffer].dtype) + " " + reg + "[" +
         std::to_string(count) + "];\n";
    for (int64_t g = 0; g < count / 4; ++g)
      s += in3 + "kiln_lds4(" + reg + " + " + std::to_string(4 * g) + ", &" + N + "_s" +
           std::to_string(q) + "[" + kk + "][" + std::to_string(g * spread) + " + " + N +
           (by_lane[q] ? "_tc" : "_tr") + " * 4]);\n";
    c.bound[loads[q]] = reg + "[" + it + "]";
  }
  std::string update = bind_shared(c, *st.value);
  update += acc + " = " + acc + " + (" + acc_type + ")(" + render_value(c, *st.value) + ");\n";
  s += in3 + "#pragma unroll\n" + in3 + "for (int " + m + " = 0; " + m + " < " +
       std::to_string(r) + "; ++" + m + ")\n" + in3 + "#pragma unroll\n" + in3 + "for (int " +
       j + " = 0; " + j + " < " + std::to_string(l) + "; ++" + j + ") {\n";
  for (size_t from = 0, to; from < update.size(); from = to + 1) {
    to = std::min(update.find('\n', from), update.size());
    if (to > from) s += in4 + update.substr(from, to - from) + "\n";
  }
  s += in3 + "}\n" + in2 + "}\n" + in2 + "__syncthreads();\n" + in + "}\n";
  c.bound.clear();
  // Store each element, then the statements after the reduction.
  std::string body = in + "  if (" + row_ok + " && " + lane_ok + ") {\n";
  body += in + "    {\n" + bind_iterators(p.reduction->args, in + "      ");
  body += in + "      " + element + " = " + to_storage(dtype, acc) + ";\n" + in + "    }\n";
  for (const LoopNode* a : p.after)
    body += render_node(c, *a, depth + 3);
  s += each_element(body + in + "  }\n");
  return s + pad + "}\n";
}

}  // namespace kiln
