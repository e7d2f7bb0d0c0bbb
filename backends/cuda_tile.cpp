// The CUDA rendering of a contraction's block tile (scheduler/gpu_tile.h): the operands of each
// reduction block staged in shared memory by the whole block, each thread's elements in
// registers; on tensor cores (mma.sync) where the update is a product of two f16 or bf16
// operands.
#include <algorithm>
#include <functional>
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

std::string str(int64_t v) {
  return std::to_string(v);
}

/** The tensor-core layout: 8 warps as 2 × 4, each 64 rows × 32 lanes of a 128 × 128 tile, in
 *  m16n8k16 tiles (4 × 4 of them), over reduction blocks of 32. */
constexpr int64_t kMmaTile = 128, kMmaDepth = 32;

}  // namespace

std::string CudaRenderer::render_block_tile(const Context& c, const LoopNode& n, int depth) const {
  if (n.key_block > 0) return render_softmax_tile(c, n, depth);
  const TileParts p = parts_of(n);
  const Statement& st = c.kernel.statements.at(n.statement);
  const int64_t R = n.tile_rows, L = n.tile_lanes;
  const std::string pad(2 * depth, ' '), in = pad + "  ", in2 = in + "  ", in3 = in2 + "  ",
                                         in4 = in3 + "  ", N = n.name;
  const std::string m = N + "_m", j = N + "_n", kk = N + "_kk", k0 = N + "_k", e = N + "_e",
                    x = N + "_x";
  const std::string ri = n.tile_row, li = n.tile_lane;
  const std::string row_ok = ast_expr_to_c(*n.tile_row_cond),
                    lane_ok = ast_expr_to_c(*n.tile_lane_cond);

  // The update's operands: its largest subexpressions that read memory or positions and move along
  // the rows only (or along neither), staged per row, or along the lanes only, staged per lane (a
  // load; or a computed value, such as a softmax's probability, computed once per row and k). An
  // operand is read along its (first) load's last dimension in memory: the fill walks the
  // reduction first where that dimension moves with the innermost reduction loop.
  const std::set<std::string> lanes = driven_iterators(*p.update, li),
                              rows = driven_iterators(*p.update, ri);
  const std::set<std::string> inner_k = driven_iterators(*p.update, p.loops.back()->iter);
  std::vector<const ScalarExpr*> loads;  // the operands
  std::function<void(const ScalarExpr&)> split = [&](const ScalarExpr& e) {
    if (!varies(e)) return;  // constants stay in the update
    if (!uses_vars(e, lanes) || !uses_vars(e, rows)) {
      if (std::find(loads.begin(), loads.end(), &e) == loads.end()) loads.push_back(&e);
      return;
    }
    for (const ScalarExprPtr& a : e.args)
      split(*a);
  };
  split(*st.value);
  std::vector<bool> by_lane(loads.size()), k_first(loads.size());
  for (size_t q = 0; q < loads.size(); ++q) {
    by_lane[q] = uses_vars(*loads[q], lanes);
    std::vector<const ScalarExpr*> in_q;
    collect_loads(*loads[q], in_q);
    std::set<std::string> used;
    if (!in_q.empty() && !in_q[0]->index.empty()) in_q[0]->index.back().collect_vars(used);
    for (const std::string& it : inner_k)
      k_first[q] = k_first[q] || used.count(it) > 0;
  }
  auto dtype_of = [&](size_t q) {
    return loads[q]->kind == ScalarExpr::Kind::load ? c.plan.buffers[loads[q]->buffer].dtype
                                                    : loads[q]->dtype;
  };
  // Whether memory holds the elements of load q contiguously along the walk of the fill (the
  // reduction for k_first, else its rows or lanes): the loop's iterator drives one statement
  // iterator by +1, which only the load's last index dimension uses, with coefficient 1.
  auto contiguous = [&](size_t q) {
    const ScalarExpr& ld = *loads[q];
    if (ld.kind != ScalarExpr::Kind::load || !ld.mask.empty() || ld.index.empty() ||
        (k_first[q] && p.loops.size() != 1))
      return false;
    const std::string it = k_first[q] ? p.loops.back()->iter : by_lane[q] ? li : ri;
    std::set<std::string> driven = driven_iterators(*p.update, it);
    if (driven.size() != 1) return false;
    const std::string v = *driven.begin();
    const AstExprPtr& arg = p.update->args.at(std::stoul(v.substr(1)));
    if (!arg || !plus_iterator(*arg, it)) return false;
    for (size_t d = 0; d + 1 < ld.index.size(); ++d)
      if (affine_coefficient(ld.index[d], v) != std::optional<int64_t>(0)) return false;
    return affine_coefficient(ld.index.back(), v) == std::optional<int64_t>(1);
  };

  // Tensor cores: the update is a × b, one operand per side, both f16 or both bf16 and unmasked
  // (they are copied as stored), on a 128 × 128 tile.
  const ScalarExpr& v = *st.value;
  const bool mma =
      R == kMmaTile && L == kMmaTile && loads.size() == 2 && by_lane[0] != by_lane[1] &&
      v.kind == ScalarExpr::Kind::op && v.op == Op::mul && v.mask.empty() && v.args.size() == 2 &&
      v.args[0].get() == loads[0] && v.args[1].get() == loads[1] && dtype_of(0) == dtype_of(1) &&
      (dtype_of(0) == DType::f16 || dtype_of(0) == DType::bf16) &&
      loads[0]->kind == ScalarExpr::Kind::load && loads[1]->kind == ScalarExpr::Kind::load &&
      loads[0]->mask.empty() && loads[1]->mask.empty();
  const int64_t r = mma ? 8 : n.thread_rows, l = mma ? 8 : n.thread_lanes,
                D = mma ? kMmaDepth : n.pack_depth;
  const int64_t thread_rows = R / r, thread_cols = L / l;
  // Chunks of the fill (16 bytes where contiguous) and the shared layout: SIMT [k][rows or
  // lanes]; tensor cores [rows or lanes][k], or [k][lanes] for a b read along its lanes (its
  // fragments then come through ldmatrix.trans). An a read along its rows is copied element by
  // element.
  std::vector<int64_t> chunk(loads.size(), 1);
  std::vector<bool> k_major(loads.size(), !mma);
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t V = 128 / std::max(dtype_bits(dtype_of(q)), 8), extent = by_lane[q] ? L : R;
    if (!contiguous(q) || (k_first[q] ? D : extent) % V) continue;
    if (mma && !k_first[q] && !by_lane[q]) continue;
    chunk[q] = V;
    if (mma && !k_first[q]) k_major[q] = true;
  }
  if (!mma && (R % r || L % l || r % 4 || l % 4 || thread_rows * thread_cols != kCudaBlockThreads))
    throw std::logic_error("a block tile that does not split over " + str(kCudaBlockThreads) +
                           " threads in groups of 4");

  // A thread's elements (m, n). SIMT: groups of 4 rows, thread_rows · 4 apart, so that the
  // threads of a warp read consecutive words of a shared row (likewise for lanes). Tensor
  // cores: the accumulator fragments of m16n8k16, 2 × 2 elements of each of 4 × 4 tiles.
  std::string row, col;
  if (mma) {
    row = "(" + N + "_wm * 64 + (" + m + " / 2) * 16 + (" + m + " % 2) * 8 + " + N + "_q / 4)";
    col = "(" + N + "_wn * 32 + (" + j + " / 2) * 8 + (" + N + "_q % 4) * 2 + " + j + " % 2)";
  } else {
    row = "((" + m + " / 4) * " + str(thread_rows * 4) + " + " + N + "_tr * 4 + " + m + " % 4)";
    col = "((" + j + " / 4) * " + str(thread_cols * 4) + " + " + N + "_tc * 4 + " + j + " % 4)";
  }

  std::string s = pad + "{\n" + in + "/* " + N + ": a " + str(R) + "x" + str(L) +
                  " block tile of " + st.name +
                  (mma ? ", on tensor cores (mma.sync m16n8k16)" : "") + ", " + str(r) + "x" +
                  str(l) + " per thread (scheduler/gpu_tile.h) */\n";
  for (size_t q = 0; q < loads.size(); ++q) {
    // SIMT: [k][rows or lanes] in the compute type, rows of a multiple of 4 elements plus 4,
    // 16-byte aligned (kiln_lds4 reads groups of 4). Tensor cores: [rows or lanes][k] as
    // stored, rows of 40 halves (conflict-free fragment reads).
    if (mma && k_major[q])
      s += in + "__shared__ __align__(16) " + storage_type(dtype_of(q)) + " " + N + "_s" + str(q) +
           "[" + str(D) + "][" + str((by_lane[q] ? L : R) + 8) + "];\n";
    else if (mma)
      s += in + "__shared__ __align__(16) " + storage_type(dtype_of(q)) + " " + N + "_s" + str(q) +
           "[" + str(by_lane[q] ? L : R) + "][" + str(D + 8) + "];\n";
    else
      s += in + "__shared__ __align__(16) " + compute_type(dtype_of(q)) + " " + N + "_s" + str(q) +
           "[" + str(D) + "][" + str((by_lane[q] ? L : R) + 4) + "];\n";
  }
  if (mma)
    s += in + "const int " + N + "_q = threadIdx.x % 32, " + N + "_wm = threadIdx.x / 128, " + N +
         "_wn = (threadIdx.x / 32) % 4;\n";
  else
    s += in + "const int " + N + "_tr = threadIdx.x / " + str(thread_cols) + ", " + N +
         "_tc = threadIdx.x % " + str(thread_cols) + ";\n";
  s += in + "const int64_t " + N + "_r0 = " + ast_expr_to_c(*n.tile_row_origin) + ", " + N +
       "_l0 = " + ast_expr_to_c(*n.tile_lane_origin) + ";\n";
  const DType dtype = c.plan.buffers[st.buffer].dtype;
  const std::string acc_type = compute_type(dtype);
  s += in + (mma ? std::string("float") : acc_type) + " " + N + "_acc[" + str(r) + "][" + str(l) +
       "];\n";

  // Each element of the thread: `body` with the row and lane iterators bound.
  auto each_element = [&](const std::string& body) {
    std::string t = in + "#pragma unroll\n" + in + "for (int " + m + " = 0; " + m + " < " + str(r) +
                    "; ++" + m + ")\n" + in + "#pragma unroll\n" + in + "for (int " + j + " = 0; " +
                    j + " < " + str(l) + "; ++" + j + ") {\n";
    t += in + "  const int64_t " + ri + " = " + N + "_r0 + " + row + ", " + li + " = " + N +
         "_l0 + " + col + ";\n";
    return t + body + in + "}\n";
  };
  const std::string element = render_index(c, st.buffer, st.index);
  const std::string acc = N + "_acc[" + m + "][" + j + "]";
  // Whether the only statement before the reduction is its init, of the same element.
  const bool init_only = [&] {
    if (p.before.size() != 1) return false;
    const LoopNode& b = *p.before[0];
    const Statement& i = c.kernel.statements.at(b.statement);
    if (i.kind != Statement::Kind::reduce_init || i.buffer != st.buffer || i.index != st.index ||
        i.reduce != st.reduce || b.args.size() > p.reduction->args.size())
      return false;
    for (size_t a = 0; a < b.args.size(); ++a)
      if (!p.reduction->args[a] || !same_expr(*b.args[a], *p.reduction->args[a])) return false;
    return true;
  }();
  if (init_only) {
    // The element starts from the reduction's identity, in the register only: its store in
    // memory would be overwritten by the result, and loading it back would keep its address
    // live across the reduction.
    const LoopNode& init = *p.before[0];
    const Statement* init_st = &c.kernel.statements.at(init.statement);
    c.promoted[init_st] = acc;
    s += each_element(render_node(c, init, depth + 1));
    c.promoted.erase(init_st);
  } else {
    std::string body = in + "  " + acc + " = 0;\n";
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
  // Each thread's share of the copy of each operand: chunks c = threadIdx.x + 256 p of V
  // elements (16 bytes where memory holds them contiguously, else 1) of the (rows or lanes) ×
  // depth block, walked in the order memory holds them.
  auto share = [&](size_t q, const std::string& pad2, const std::string& body) {
    const int64_t extent = by_lane[q] ? L : R, V = chunk[q], n_c = extent * D / V;
    const int64_t per = (n_c + kCudaBlockThreads - 1) / kCudaBlockThreads;
    std::string t = pad2 + "#pragma unroll\n" + pad2 + "for (int " + N + "_p = 0; " + N + "_p < " +
                    str(per) + "; ++" + N + "_p) {\n";
    t += pad2 + "  const int " + e + " = threadIdx.x + " + str(kCudaBlockThreads) + " * " + N +
         "_p;\n";
    if (k_first[q])
      t += pad2 + "  const int " + kk + " = " + e + " % " + str(D / V) + " * " + str(V) + ", " + x +
           " = " + e + " / " + str(D / V) + ";\n";
    else
      t += pad2 + "  const int " + x + " = " + e + " % " + str(extent / V) + " * " + str(V) + ", " +
           kk + " = " + e + " / " + str(extent / V) + ";\n";
    std::string guard = n_c % kCudaBlockThreads ? "if (" + e + " < " + str(n_c) + ") " : "";
    return t + pad2 + "  " + guard + "{\n" + body + pad2 + "  }\n" + pad2 + "}\n";
  };
  // The iterators of element i of a chunk (i a C expression), and whether it is in the domain.
  auto coords = [&](size_t q, const std::string& base, const std::string& i) {
    std::string dx = k_first[q] ? x : x + " + " + i, dk = k_first[q] ? kk + " + " + i : kk;
    return "const int64_t " + ri + " = " + N + "_r0" + (by_lane[q] ? "" : " + " + dx) + ", " + li +
           " = " + N + "_l0" + (by_lane[q] ? " + " + dx : "") + ", " + N + "_f = " + base + " + " +
           dk + ";\n";
  };
  auto in_domain = [&](size_t q) {
    return N + "_f < " + N + "_K && " + (by_lane[q] ? lane_ok : row_ok);
  };
  // Loads the operands of the reduction block from `base` into the thread's registers, zeros
  // outside the domain: values in the compute type, or as stored for the tensor cores. A chunk
  // wholly inside the domain at a 16-byte aligned address is one 16-byte load.
  auto fetch = [&](const std::string& base, const std::string& pad2) {
    std::string t;
    const std::string p3 = pad2 + "    ", p4 = p3 + "  ", p5 = p4 + "  ";
    for (size_t q = 0; q < loads.size(); ++q) {
      const int64_t V = chunk[q];
      const DType dt = dtype_of(q);
      const std::string reg = N + "_p" + str(q), at = reg + "[" + N + "_p * " + str(V);
      auto value = [&] {
        c.bound.clear();
        c.index_bound.clear();
        return mma ? render_index(c, loads[q]->buffer, loads[q]->index)
                   : render_value(c, *loads[q]);
      };
      std::string body;
      if (V > 1) {
        // The first and the last element in the domain (its bounds are rectangular), then the
        // address of the first.
        std::string last_ok =
            k_first[q] ? N + "_f + " + str(V - 1) + " < " + N + "_K"
                       : ast_expr_to_c(*substitute(
                             by_lane[q] ? n.tile_lane_cond : n.tile_row_cond, by_lane[q] ? li : ri,
                             ast_op("add", {ast_iter(by_lane[q] ? li : ri), ast_int(V - 1)})));
        body += p3 + "bool " + N + "_done = false;\n" + p3 + "{\n";
        body += p4 + coords(q, base, "0");
        body += p4 + "if (" + in_domain(q) + " && " + last_ok + ") {\n";
        body += split_k(N + "_f", p5) + bind_iterators(p.update->args, p5);
        body += p5 + "const " + storage_type(dt) + "* " + N + "_a = &" +
                render_index(c, loads[q]->buffer, loads[q]->index) + ";\n";
        body += p5 + "if (((uint64_t)" + N + "_a & 15) == 0) {\n";
        if (mma) {
          body += p5 + "  kiln_ld16(&" + at + "], " + N + "_a);\n";
        } else {
          body += p5 + "  " + storage_type(dt) + " " + N + "_w[" + str(V) + "];\n";
          body += p5 + "  kiln_ld16(" + N + "_w, " + N + "_a);\n";
          for (int64_t i = 0; i < V; ++i)
            body += p5 + "  " + at + " + " + str(i) +
                    "] = " + from_storage(dt, N + "_w[" + str(i) + "]") + ";\n";
        }
        body += p5 + "  " + N + "_done = true;\n" + p5 + "}\n" + p4 + "}\n" + p3 + "}\n";
        body += p3 + "if (!" + N + "_done)\n";
      }
      // Element by element.
      const std::string ie = N + "_i";
      body += p3 + "#pragma unroll\n" + p3 + "for (int " + ie + " = 0; " + ie + " < " + str(V) +
              "; ++" + ie + ") {\n";
      body += p4 + coords(q, base, ie);
      body +=
          p4 + at + " + " + ie + "] = (" + (mma ? storage_type(dt) : compute_type(dt)) + ")0;\n";
      body += p4 + "if (" + in_domain(q) + ") {\n";
      body += split_k(N + "_f", p5) + bind_iterators(p.update->args, p5);
      body += p5 + at + " + " + ie + "] = " + value() + ";\n" + p4 + "}\n" + p3 + "}\n";
      t += share(q, pad2, body);
    }
    return t;
  };
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t per =
        ((by_lane[q] ? L : R) * D / chunk[q] + kCudaBlockThreads - 1) / kCudaBlockThreads;
    s += in + (mma ? storage_type(dtype_of(q)) : compute_type(dtype_of(q))) + " " + N + "_p" +
         str(q) + "[" + str(per * chunk[q]) + "];\n";
  }
  // The first block's operands, then per block: registers to shared memory, the next block's
  // loads issued (they complete while this block computes), this block's updates.
  s += in + "{\n" + in2 + "const int64_t " + k0 + " = 0;\n" + fetch(k0, in2) + in + "}\n";
  s += in + "for (int64_t " + k0 + " = 0; " + k0 + " < " + N + "_K; " + k0 + " += " + str(D) +
       ") {\n";
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t V = chunk[q];
    std::string store;
    // Where the chunk lies contiguously in shared memory too, 16-byte stores.
    const DType dt = dtype_of(q);
    const int64_t reg_bytes = mma ? std::max(dtype_bits(dt), 8) / 8
                              : dt == DType::f16 || dt == DType::bf16
                                  ? 4
                                  : std::max(dtype_bits(dt), 8) / 8;
    const int64_t per16 = 16 / reg_bytes;
    if (V > 1 && k_major[q] != k_first[q] && (V * reg_bytes) % 16 == 0) {
      for (int64_t g = 0; g < V / per16; ++g) {
        std::string xi = k_first[q] ? x : x + " + " + str(g * per16),
                    ki = k_first[q] ? kk + " + " + str(g * per16) : kk;
        std::string at = k_major[q] ? "[" + ki + "][" + xi + "]" : "[" + xi + "][" + ki + "]";
        store += in4 + "kiln_st16(&" + N + "_s" + str(q) + at + ", &" + N + "_p" + str(q) + "[" +
                 N + "_p * " + str(V) + " + " + str(g * per16) + "]);\n";
      }
      s += share(q, in2, store);
      continue;
    }
    for (int64_t i = 0; i < V; ++i) {
      std::string xi = k_first[q] ? x : x + " + " + str(i),
                  ki = k_first[q] ? kk + " + " + str(i) : kk;
      std::string at = k_major[q] ? "[" + ki + "][" + xi + "]" : "[" + xi + "][" + ki + "]";
      store += in4 + N + "_s" + str(q) + at + " = " + N + "_p" + str(q) + "[" + N + "_p * " +
               str(V) + " + " + str(i) + "];\n";
    }
    s += share(q, in2, store);
  }
  s += in2 + "__syncthreads();\n";
  s += in2 + "if (" + k0 + " + " + str(D) + " < " + N + "_K) {\n" + in3 + "const int64_t " + N +
       "_next = " + k0 + " + " + str(D) + ";\n" + fetch(N + "_next", in3) + in2 + "}\n";
  c.bound.clear();
  c.index_bound.clear();
  if (mma) {
    // Per k16 step: each warp's A fragments (4 m16 tiles) and B fragments (4 n8 tiles) from
    // shared memory, pairs of halves as 32-bit words, then the 16 products. The block's k
    // beyond K holds zeros, whose products add nothing.
    const size_t a = by_lane[0] ? 1 : 0, b = 1 - a;
    const std::string sa = N + "_s" + str(a), sb = N + "_s" + str(b);
    const std::string kind = dtype_of(a) == DType::bf16 ? "bf16" : "f16";
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < " + str(D) + "; " +
         kk + " += 16) {\n";
    s += in3 + "const int " + N + "_kq = " + kk + " + (" + N + "_q % 4) * 2;\n";
    s += in3 + "uint32_t " + N + "_fa[4][4], " + N + "_fb[4][2];\n";
    // ldmatrix: x4 gives an m16 tile of a (lanes 0-15 address its rows at k, 16-31 at k + 8),
    // or two n8 tiles of b (lanes 16-31 address the second); .trans for b as [k][lanes].
    auto ldmatrix = [&](const std::string& trans, const std::string& out, const std::string& at) {
      return in4 + "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + trans +
             ".shared.b16 {%0, %1, %2, %3}, [%4];\"\n" + in4 + "             : " + out + "\n" +
             in4 + "             : \"r\"(kiln_smem_addr(&" + at + ")));\n";
    };
    const std::string t = N + "_t", q = N + "_q";
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + t + " = 0; " + t + " < 4; ++" + t + ") {\n";
    s +=
        ldmatrix("",
                 "\"=r\"(" + N + "_fa[" + t + "][0]), \"=r\"(" + N + "_fa[" + t + "][1]), \"=r\"(" +
                     N + "_fa[" + t + "][2]), \"=r\"(" + N + "_fa[" + t + "][3])",
                 sa + "[" + N + "_wm * 64 + " + t + " * 16 + " + q + " % 16][" + kk + " + (" + q +
                     " / 16) * 8]");
    s += in3 + "}\n";
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + t + " = 0; " + t + " < 4; " + t +
         " += 2) {\n";
    const std::string outs = "\"=r\"(" + N + "_fb[" + t + "][0]), \"=r\"(" + N + "_fb[" + t +
                             "][1]), \"=r\"(" + N + "_fb[" + t + " + 1][0]), \"=r\"(" + N + "_fb[" +
                             t + " + 1][1])";
    if (k_major[b])
      s += ldmatrix(".trans", outs,
                    sb + "[" + kk + " + " + q + " % 16][" + N + "_wn * 32 + (" + t + " + " + q +
                        " / 16) * 8]");
    else
      s += ldmatrix("", outs,
                    sb + "[" + N + "_wn * 32 + (" + t + " + " + q + " / 16) * 8 + " + q + " % 8][" +
                        kk + " + (" + q + " / 8) % 2 * 8]");
    s += in3 + "}\n";
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + m + " = 0; " + m + " < 4; ++" + m + ")\n";
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + j + " = 0; " + j + " < 4; ++" + j + ") {\n";
    auto c_at = [&](int dm, int dn) {
      return N + "_acc[2 * " + m + " + " + str(dm) + "][2 * " + j + " + " + str(dn) + "]";
    };
    s += in4 + "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + kind + "." + kind +
         ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n";
    s += in4 + "             : \"+f\"(" + c_at(0, 0) + "), \"+f\"(" + c_at(0, 1) + "), \"+f\"(" +
         c_at(1, 0) + "), \"+f\"(" + c_at(1, 1) + ")\n";
    s += in4 + "             : \"r\"(" + N + "_fa[" + m + "][0]), \"r\"(" + N + "_fa[" + m +
         "][1]), \"r\"(" + N + "_fa[" + m + "][2]), \"r\"(" + N + "_fa[" + m + "][3]), \"r\"(" + N +
         "_fb[" + j + "][0]), \"r\"(" + N + "_fb[" + j + "][1]));\n";
    s += in3 + "}\n" + in2 + "}\n";
  } else {
    // Per reduction iteration: each thread's rows and lanes of the staged operands into
    // registers (16-byte reads of groups of 4), then every element's update from them.
    s += in2 + "const int64_t " + N + "_kd = " + N + "_K - " + k0 + ";\n";
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < " + str(D) +
         "; ++" + kk + ") {\n";
    s += in3 + "if (" + kk + " >= " + N + "_kd) break;\n";
    for (size_t q = 0; q < loads.size(); ++q) {
      const std::string reg = N + "_o" + str(q);
      const int64_t count = by_lane[q] ? l : r;
      const int64_t spread = 4 * (by_lane[q] ? thread_cols : thread_rows);
      s += in3 + compute_type(dtype_of(q)) + " " + reg + "[" + str(count) + "];\n";
      for (int64_t g = 0; g < count / 4; ++g)
        s += in3 + "kiln_lds4(" + reg + " + " + str(4 * g) + ", &" + N + "_s" + str(q) + "[" + kk +
             "][" + str(g * spread) + " + " + N + (by_lane[q] ? "_tc" : "_tr") + " * 4]);\n";
      c.bound[loads[q]] = reg + "[" + (by_lane[q] ? j : m) + "]";
    }
    std::string update = bind_shared(c, v);
    update += acc + " = " + acc + " + (" + acc_type + ")(" + render_value(c, v) + ");\n";
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + m + " = 0; " + m + " < " + str(r) + "; ++" +
         m + ")\n" + in3 + "#pragma unroll\n" + in3 + "for (int " + j + " = 0; " + j + " < " +
         str(l) + "; ++" + j + ") {\n";
    for (size_t from = 0, to; from < update.size(); from = to + 1) {
      to = std::min(update.find('\n', from), update.size());
      if (to > from) s += in4 + update.substr(from, to - from) + "\n";
    }
    s += in3 + "}\n" + in2 + "}\n";
  }
  s += in2 + "__syncthreads();\n" + in + "}\n";
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
