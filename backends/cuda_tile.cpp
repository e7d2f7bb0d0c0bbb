// The CUDA rendering of a contraction's block tile (scheduler/gpu_tile.h): the operands of each
// reduction block staged in shared memory by the whole block, each thread's elements in
// registers; on tensor cores (mma.sync) where the update is a product of two f16 or bf16
// operands.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "backends/cuda_renderer.h"
#include "ir/mma.h"

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

}  // namespace

int64_t block_tile_shared_bytes(const LoopNode& tile) {
  if (tile.space == MemorySpace::shared && tile.key_block > 0)
    return softmax_tile_shared_bytes(tile.tile_lanes);
  if (tile.space != MemorySpace::shared || tile.stages <= 1) return 0;
  int64_t bytes = 0;
  for (const StagedOperand& o : tile.staged) {
    const int64_t extent = o.by_lane ? tile.tile_lanes : tile.tile_rows, D = tile.pack_depth;
    if (o.swizzle) bytes = (bytes + 1023) / 1024 * 1024;  // swizzled stages start at 1 KiB
    bytes +=
        tile.stages * (o.k_major ? D * (extent + o.pad) : extent * (D + o.pad)) * o.element_bytes;
  }
  return bytes;
}

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

  // The staged operands and how to stage them, as scheduler/gpu_tile chose.
  const MmaInstruction* mma = n.mma;
  std::vector<const ScalarExpr*> loads;
  std::vector<bool> by_lane, k_first, k_major;
  std::vector<int64_t> chunk, pads;
  for (const StagedOperand& o : n.staged) {
    loads.push_back(&subexpression(*st.value, o.path));
    by_lane.push_back(o.by_lane);
    k_first.push_back(o.k_first);
    k_major.push_back(o.k_major);
    chunk.push_back(o.vector);
    pads.push_back(o.pad);
  }
  auto dtype_of = [&](size_t q) {
    return loads[q]->kind == ScalarExpr::Kind::load ? c.plan.buffers[loads[q]->buffer].dtype
                                                    : loads[q]->dtype;
  };
  const ScalarExpr& v = *st.value;
  const int64_t r = n.thread_rows, l = n.thread_lanes, D = n.pack_depth;
  const int64_t thread_rows = R / r, thread_cols = L / l;
  // Threads of a warp, or of a warpgroup for wgmma.
  const bool group = mma && mma->warpgroup;
  const int64_t G = group ? 128 : 32;
  if (mma ? (n.warp_rows <= 0 || n.warp_lanes <= 0 ||
             (R / n.warp_rows) * (L / n.warp_lanes) * G != kCudaBlockThreads)
          : (R % r || L % l || r % 4 || l % 4 || thread_rows * thread_cols != kCudaBlockThreads))
    throw std::logic_error("a block tile that does not split over " + str(kCudaBlockThreads) +
                           " threads");

  // A thread's elements (m, n). SIMT: groups of 4 rows, thread_rows · 4 apart, so that the
  // threads of a warp read consecutive words of a shared row (likewise for lanes). Tensor
  // cores: the accumulator fragments of the instruction's m × n tiles of the warp's
  // warp_rows × warp_lanes, acc_rows × acc_cols elements of each (ir/mma.h's layout).
  std::string row, col;
  if (mma) {
    const std::string e = "(" + m + " % " + str(mma->acc_rows) + ") * " + str(mma->acc_cols) +
                          " + " + j + " % " + str(mma->acc_cols);
    row = "(" + N + "_wm * " + str(n.warp_rows) + " + (" + m + " / " + str(mma->acc_rows) + ") * " +
          str(mma->m) + " + " + fragment_coordinate(mma->fc.row, N + "_q", e) + ")";
    col = "(" + N + "_wn * " + str(n.warp_lanes) + " + (" + j + " / " + str(mma->acc_cols) +
          ") * " + str(mma->n) + " + " + fragment_coordinate(mma->fc.col, N + "_q", e) + ")";
  } else {
    row = "((" + m + " / 4) * " + str(thread_rows * 4) + " + " + N + "_tr * 4 + " + m + " % 4)";
    col = "((" + j + " / 4) * " + str(thread_cols * 4) + " + " + N + "_tc * 4 + " + j + " % 4)";
  }

  std::string s =
      pad + "{\n" + in + "/* " + N + ": a " + str(R) + "x" + str(L) + " block tile of " + st.name +
      (mma ? std::string(", on tensor cores (") + (group ? "wgmma " : "mma.sync ") + mma->name + ")"
           : std::string()) +
      ", " + str(r) + "x" + str(l) + " per thread (scheduler/gpu_tile.h) */\n";
  // [k][rows or lanes] or [rows or lanes][k], as stored or in the compute type, each row
  // padded; 16-byte aligned (kiln_lds4 reads groups of 4, ldmatrix rows of 16 bytes). A
  // pipeline's stages lie one after another in the kernel's dynamic shared memory, each
  // operand's after the previous one's. Swizzled operands (StagedOperand::swizzle) are one
  // array per stage, indexed by swizzled_at, each stage at a multiple of 1 KiB (the swizzle's
  // period, which the descriptors assume).
  const int64_t S = n.stages;
  int64_t offset = 0;
  if (S > 1) s += in + "extern __shared__ __align__(1024) unsigned char kiln_shared[];\n";
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t extent = by_lane[q] ? L : R;
    const int64_t rows_q = k_major[q] ? D : extent,
                  cols_q = k_major[q] ? extent + pads[q] : D + pads[q];
    const bool swz = n.staged[q].swizzle > 0;
    if (swz && (S <= 1 || n.staged[q].swizzle != 128 || D * n.staged[q].element_bytes != 128 ||
                (k_major[q] && extent % 64) || (rows_q * cols_q * 2) % 1024))
      throw std::logic_error("a swizzled operand that is not 128-byte rows in a pipeline");
    if (swz) offset = (offset + 1023) / 1024 * 1024;
    const std::string dims =
        swz ? "[" + str(rows_q * cols_q) + "]" : "[" + str(rows_q) + "][" + str(cols_q) + "]";
    const std::string T =
        n.staged[q].as_stored ? storage_type(dtype_of(q)) : compute_type(dtype_of(q));
    if (S > 1) {
      s += in + T + " (*const " + N + "_s" + str(q) + ")" + dims + " = (" + T + " (*)" + dims +
           ")(kiln_shared + " + str(offset) + ");\n";
      offset += S * rows_q * cols_q * n.staged[q].element_bytes;
    } else {
      s += in + "__shared__ __align__(16) " + T + " " + N + "_s" + str(q) + dims + ";\n";
    }
  }
  if (mma)
    s += in + "const int " + N + "_q = threadIdx.x % " + str(G) + ", " + N +
         "_wm = threadIdx.x / " + str(G * (L / n.warp_lanes)) + ", " + N + "_wn = (threadIdx.x / " +
         str(G) + ") % " + str(L / n.warp_lanes) + ";\n";
  else
    s += in + "const int " + N + "_tr = threadIdx.x / " + str(thread_cols) + ", " + N +
         "_tc = threadIdx.x % " + str(thread_cols) + ";\n";
  s += in + "const int64_t " + N + "_r0 = " + ast_expr_to_c(*n.tile_row_origin) + ", " + N +
       "_l0 = " + ast_expr_to_c(*n.tile_lane_origin) + ";\n";
  const DType dtype = c.plan.buffers[st.buffer].dtype;
  const std::string acc_type = compute_type(dtype);
  s += in + (mma ? compute_type(mma->acc) : acc_type) + " " + N + "_acc[" + str(r) + "][" + str(l) +
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
  // The last element of chunk q along its rows or lanes is in the domain too.
  auto last_in = [&](size_t q) {
    const int64_t V = chunk[q];
    return k_first[q] ? N + "_f + " + str(V - 1) + " < " + N + "_K"
                      : ast_expr_to_c(*substitute(
                            by_lane[q] ? n.tile_lane_cond : n.tile_row_cond, by_lane[q] ? li : ri,
                            ast_op("add", {ast_iter(by_lane[q] ? li : ri), ast_int(V - 1)})));
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
        body += p3 + "bool " + N + "_done = false;\n" + p3 + "{\n";
        body += p4 + coords(q, base, "0");
        body += p4 + "if (" + in_domain(q) + " && " + last_in(q) + ") {\n";
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
  // Where chunk element i of operand q lies in shared memory (`stage` a C expression, or empty
  // for the one buffer).
  // The element of swizzled operand q at row or lane xi, reduction index ki in its stage: 128-
  // byte rows of 8 chunks of 8 values, chunk c of row r at c xor r % 8; [x][k] one row per row
  // or lane, [k][x] blocks of 64 rows or lanes, D rows of k each.
  auto swizzled_at = [&](size_t q, const std::string& xi, const std::string& ki) {
    const std::string X = "(" + xi + ")", K = "(" + ki + ")";
    if (!k_major[q])
      return X + " * " + str(D) + " + (((" + K + " / 8) ^ (" + X + " % 8)) * 8) + " + K + " % 8";
    return X + " / 64 * " + str(64 * D) + " + " + K + " * 64 + (((" + X + " % 64 / 8) ^ (" + K +
           " % 8)) * 8) + " + X + " % 8";
  };
  auto shared_at = [&](size_t q, const std::string& stage, const std::string& i) {
    std::string xi = k_first[q] ? x : x + " + " + i, ki = k_first[q] ? kk + " + " + i : kk;
    const std::string array = N + "_s" + str(q) + (stage.empty() ? "" : "[" + stage + "]");
    if (n.staged[q].swizzle) return array + "[" + swizzled_at(q, xi, ki) + "]";
    return array + (k_major[q] ? "[" + ki + "][" + xi + "]" : "[" + xi + "][" + ki + "]");
  };
  if (S > 1) {
    // Copies block `base`'s operands into stage `stage` asynchronously: each 16-byte chunk
    // wholly inside the domain at an aligned address is one cp.async; the others (at the
    // edges) are loaded element by element, zeros outside the domain, and stored.
    // With addresses strided along k (LoopNode::k_strided), each chunk's address at block 0 and
    // whether its rows or lanes are in the domain are computed once per tile; a block's
    // address is then that plus k0 times the operand's stride.
    // (Not under bounds checks: every access then computes and checks its own index.)
    // Warpgroup tiles hold half a thread's registers in accumulators: their copies keep one
    // address per operand instead (`lean`, below).
    const bool lean = group && n.k_strided && !c.options.bounds_checks;
    const bool strided = n.k_strided && !c.options.bounds_checks && !lean;
    auto ptr = [&](size_t q) { return N + "_g" + str(q) + "[" + N + "_p]"; };
    auto inside = [&](size_t q) { return N + "_in" + str(q) + "[" + N + "_p]"; };
    // lean: a thread's chunk p of operand q lies `step` rows (or k rows) past its chunk 0, and
    // memory holds the operand affinely in both: its address is chunk 0's at block 0 (N_g),
    // plus p times the chunks' stride (N_dp), plus k0 times the reduction's (N_d).
    auto chunk_step = [&](size_t q) {
      const int64_t extent = by_lane[q] ? L : R, V = chunk[q];
      const int64_t across = k_first[q] ? D / V : extent / V;  // chunks along a row of the walk
      if ((extent * D / V) % kCudaBlockThreads || kCudaBlockThreads % across)
        throw std::logic_error("a warpgroup tile whose copies do not split evenly");
      return kCudaBlockThreads / across;
    };
    if (lean)
      for (size_t q = 0; q < loads.size(); ++q) {
        const int64_t extent = by_lane[q] ? L : R, V = chunk[q], step = chunk_step(q);
        const std::string T = storage_type(dtype_of(q)), Q = str(q),
                          at = render_index(c, loads[q]->buffer, loads[q]->index);
        s += in + "const int " + N + "_x0_" + Q + " = " +
             (k_first[q] ? "threadIdx.x / " + str(D / V)
                         : "threadIdx.x % " + str(extent / V) + " * " + str(V)) +
             ", " + N + "_kk0_" + Q + " = " +
             (k_first[q] ? "threadIdx.x % " + str(D / V) + " * " + str(V)
                         : "threadIdx.x / " + str(extent / V)) +
             ";\n";
        // The address of (x, kk) at reduction index f.
        auto address = [&](const std::string& name, const std::string& xs, const std::string& ks,
                           const std::string& f) {
          return in + "const " + T + "* " + name + ";\n" + in + "{\n" + in2 + "const int64_t " +
                 ri + " = " + N + "_r0" + (by_lane[q] ? "" : " + " + xs) + ", " + li + " = " + N +
                 "_l0" + (by_lane[q] ? " + " + xs : "") + ", " + N + "_f = " + f + " + " + ks +
                 ";\n" + split_k(N + "_f", in2) + bind_iterators(p.update->args, in2) + in2 + name +
                 " = &" + at + ";\n" + in + "}\n";
        };
        const std::string x0 = N + "_x0_" + Q, k00 = N + "_kk0_" + Q;
        s += address(N + "_g" + Q, x0, k00, "0");
        s += address(N + "_g" + Q + "f", x0, k00, "1");
        s += address(N + "_g" + Q + "p", k_first[q] ? x0 + " + " + str(step) : x0,
                     k_first[q] ? k00 : k00 + " + " + str(step), "0");
        s += in + "const int64_t " + N + "_d" + Q + " = " + N + "_g" + Q + "f - " + N + "_g" + Q +
             ", " + N + "_dp" + Q + " = " + N + "_g" + Q + "p - " + N + "_g" + Q + ";\n";
        // Whether every chunk of the operand lies inside the tile's rows (or lanes) at an
        // aligned address at every block: its last row or lane in the domain (the bounds are
        // rectangular, as last_in assumes), chunk 0 aligned, and the chunks' and blocks'
        // strides whole chunks. Blocks wholly inside the reduction then copy without a check.
        const std::string last_x = by_lane[q] ? li : ri;
        const AstExprPtr last = ast_op(
            "add", {ast_iter(N + (by_lane[q] ? "_l0" : "_r0")), ast_int((by_lane[q] ? L : R) - 1)});
        s += in + "const bool " + N + "_full" + Q + " = " +
             ast_expr_to_c(
                 *substitute(by_lane[q] ? n.tile_lane_cond : n.tile_row_cond, last_x, last)) +
             " && ((uint64_t)" + N + "_g" + Q + " & 15) == 0 && " + N + "_dp" + Q + " % " + str(V) +
             " == 0 && (" + N + "_d" + Q + " * " + str(D) + ") % " + str(V) + " == 0;\n";
      }
    if (strided)
      for (size_t q = 0; q < loads.size(); ++q) {
        const int64_t extent = by_lane[q] ? L : R, V = chunk[q];
        const int64_t per = (extent * D / V + kCudaBlockThreads - 1) / kCudaBlockThreads;
        const std::string T = storage_type(dtype_of(q)),
                          at = render_index(c, loads[q]->buffer, loads[q]->index);
        s += in + "const " + T + "* " + N + "_g" + str(q) + "[" + str(per) + "];\n";
        s += in + "bool " + N + "_in" + str(q) + "[" + str(per) + "];\n";
        s += in + "int64_t " + N + "_d" + str(q) + ";\n";
        std::string body = in3 + coords(q, "0", "0");
        body += in3 + inside(q) + " = " + (by_lane[q] ? lane_ok : row_ok) +
                (k_first[q] ? std::string() : " && " + last_in(q)) + ";\n";
        body += split_k(N + "_f", in3) + bind_iterators(p.update->args, in3);
        body += in3 + ptr(q) + " = &" + at + ";\n";
        s += share(q, in, body);
        // The stride: the address one reduction iteration on, less the first.
        s += in + "{\n" + in2 + "const int64_t " + ri + " = " + N + "_r0, " + li + " = " + N +
             "_l0;\n";
        for (int one = 0; one < 2; ++one)
          s += in2 + "const " + T + "* " + N + "_a" + str(one) + ";\n" + in2 + "{\n" + in3 +
               "const int64_t " + N + "_f = " + str(one) + ";\n" + split_k(N + "_f", in3) +
               bind_iterators(p.update->args, in3) + in3 + N + "_a" + str(one) + " = &" + at +
               ";\n" + in2 + "}\n";
        s += in2 + N + "_d" + str(q) + " = " + N + "_a1 - " + N + "_a0;\n" + in + "}\n";
      }
    // Copies block `base`'s operands into stage `stage` asynchronously: each 16-byte chunk
    // wholly inside the domain at an aligned address is one cp.async; the others (at the
    // edges) are loaded element by element, zeros outside the domain, and stored. The edge
    // loops and the first blocks' copies stay rolled: unrolled, they were most of the
    // module's code, which NVRTC compiles at every first use (docs/performance.md).
    // lean: the same per chunk from the operand's one address; each chunk's shared address is
    // the stage's plus its swizzled offset. Only the path of a tile and block wholly inside
    // the operand is unrolled; the edge path's loop over a thread's chunks stays rolled too
    // (unrolled, it was a third of hgemm's NVRTC time for code that runs on edge tiles only).
    auto fetch_lean = [&](const std::string& base, const std::string& stage,
                          const std::string& pad2) {
      std::string t;
      const std::string p2 = pad2 + "  ", p3 = p2 + "  ", p4 = p3 + "  ", p5 = p4 + "  ";
      for (size_t q = 0; q < loads.size(); ++q) {
        const int64_t extent = by_lane[q] ? L : R, V = chunk[q], step = chunk_step(q);
        const int64_t per = extent * D / V / kCudaBlockThreads;
        const DType dt = dtype_of(q);
        const std::string T = storage_type(dt), Q = str(q);
        t += pad2 + "{\n" + p2 + "const " + T + "* " + N + "_ab = " + N + "_g" + Q + " + " + base +
             " * " + N + "_d" + Q + ";\n";
        t += p2 + "const uint32_t " + N + "_sb = kiln_smem_addr(" + N + "_s" + Q + "[" + stage +
             "]);\n";
        // Inside the domain: one cp.async a chunk, no checks.
        auto at_p = [&](const std::string& indent) {
          return indent + "const int " + x + " = " + N + "_x0_" + Q +
                 (k_first[q] ? " + " + str(step) + " * " + N + "_p" : "") + ", " + kk + " = " + N +
                 "_kk0_" + Q + (k_first[q] ? "" : " + " + str(step) + " * " + N + "_p") + ";\n";
        };
        t +=
            p2 + "if (" + N + "_full" + Q + " && " + base + " + " + str(D) + " <= " + N + "_K) {\n";
        t += p3 + "#pragma unroll\n" + p3 + "for (int " + N + "_p = 0; " + N + "_p < " + str(per) +
             "; ++" + N + "_p) {\n" + at_p(p4);
        t += p4 + "kiln_cp_async16_to(" + N + "_sb + " + str(n.staged[q].element_bytes) + " * (" +
             swizzled_at(q, x, kk) + "), " + N + "_ab + " + N + "_p * " + N + "_dp" + Q + ");\n";
        t += p3 + "}\n" + p2 + "} else\n";
        t += p2 + "#pragma unroll 1\n" + p2 + "for (int " + N + "_p = 0; " + N + "_p < " +
             str(per) + "; ++" + N + "_p) {\n";
        t += at_p(p3);
        t += p3 + "const " + T + "* " + N + "_a = " + N + "_ab + " + N + "_p * " + N + "_dp" + Q +
             ";\n";
        t += p3 + "bool " + N + "_done = false;\n" + p3 + "{\n" + p4 + coords(q, base, "0");
        t += p4 + "if (" + in_domain(q) + " && " + last_in(q) + " && ((uint64_t)" + N +
             "_a & 15) == 0) {\n";
        t += p5 + "kiln_cp_async16_to(" + N + "_sb + " + str(n.staged[q].element_bytes) + " * (" +
             swizzled_at(q, x, kk) + "), " + N + "_a);\n";
        t += p5 + N + "_done = true;\n" + p4 + "}\n" + p3 + "}\n";
        const std::string ie = N + "_i";
        t += p3 + "if (!" + N + "_done)\n" + p3 + "#pragma unroll 1\n" + p3 + "for (int " + ie +
             " = 0; " + ie + " < " + str(V) + "; ++" + ie + ") {\n";
        t += p4 + coords(q, base, ie);
        t += p4 + T + " " + N + "_v = 0;\n";
        t += p4 + "if (" + in_domain(q) + ") {\n";
        t += split_k(N + "_f", p5) + bind_iterators(p.update->args, p5);
        t += p5 + N + "_v = " + render_index(c, loads[q]->buffer, loads[q]->index) + ";\n" + p4 +
             "}\n";
        t += p4 + shared_at(q, stage, ie) + " = " + N + "_v;\n" + p3 + "}\n";
        t += p2 + "}\n" + pad2 + "}\n";
      }
      return t;
    };
    auto fetch_async = [&](const std::string& base, const std::string& stage,
                           const std::string& pad2) {
      if (lean) return fetch_lean(base, stage, pad2);
      std::string t;
      const std::string p3 = pad2 + "    ", p4 = p3 + "  ", p5 = p4 + "  ";
      for (size_t q = 0; q < loads.size(); ++q) {
        const int64_t V = chunk[q];
        const DType dt = dtype_of(q);
        std::string body = p3 + "bool " + N + "_done = false;\n" + p3 + "{\n";
        body += p4 + coords(q, base, "0");
        if (strided) {
          body += p4 + "const " + storage_type(dt) + "* " + N + "_a = " + ptr(q) + " + " + base +
                  " * " + N + "_d" + str(q) + ";\n";
          body += p4 + "if (" + inside(q) + " && " + N + "_f + " + str(k_first[q] ? V - 1 : 0) +
                  " < " + N + "_K && ((uint64_t)" + N + "_a & 15) == 0)\n";
        } else {
          body += p4 + "if (" + in_domain(q) + " && " + last_in(q) + ") {\n";
          body += split_k(N + "_f", p5) + bind_iterators(p.update->args, p5);
          body += p5 + "const " + storage_type(dt) + "* " + N + "_a = &" +
                  render_index(c, loads[q]->buffer, loads[q]->index) + ";\n";
          body += p5 + "if (((uint64_t)" + N + "_a & 15) == 0)\n";
        }
        body += p5 + "{\n" + p5 + "  kiln_cp_async16(&" + shared_at(q, stage, "0") + ", " + N +
                "_a);\n";
        body += p5 + "  " + N + "_done = true;\n" + p5 + "}\n";
        if (!strided) body += p4 + "}\n";
        body += p3 + "}\n";
        const std::string ie = N + "_i";
        body += p3 + "if (!" + N + "_done)\n" + p3 + "#pragma unroll 1\n" + p3 + "for (int " + ie +
                " = 0; " + ie + " < " + str(V) + "; ++" + ie + ") {\n";
        body += p4 + coords(q, base, ie);
        body += p4 + storage_type(dt) + " " + N + "_v = 0;\n";
        body += p4 + "if (" + in_domain(q) + ") {\n";
        body += split_k(N + "_f", p5) + bind_iterators(p.update->args, p5);
        body += p5 + N + "_v = " + render_index(c, loads[q]->buffer, loads[q]->index) + ";\n" + p4 +
                "}\n";
        body += p4 + shared_at(q, stage, ie) + " = " + N + "_v;\n" + p3 + "}\n";
        t += share(q, pad2, body);
      }
      return t;
    };
    // The first A = S - 1 - F blocks' copies, a group each (F: blocks of warpgroup
    // instructions left running, LoopNode::mma_in_flight); then per block: wait for its group,
    // a barrier (every warp is past block b - 1 - F, whose stage the next copies reuse), the
    // copies of block b + A, this block's updates. The tensor cores' reads of warpgroup
    // instructions go through the async proxy: each thread fences its copies first.
    const int64_t F = group ? n.mma_in_flight : 0, A = S - 1 - F;
    if (A < 1) throw std::logic_error("a pipeline with no stage to copy ahead into");
    const std::string b = N + "_b", nb = N + "_nb", st0 = N + "_st";
    s += in + "const int64_t " + nb + " = (" + N + "_K + " + str(D - 1) + ") / " + str(D) + ";\n";
    s += in + "#pragma unroll 1\n" + in + "for (int " + b + " = 0; " + b + " < " + str(A) + "; ++" +
         b + ") {\n";
    s += in2 + "if (" + b + " < " + nb + ") {\n" + in3 + "const int64_t " + k0 + " = " + b + " * " +
         str(D) + ";\n" + fetch_async(k0, b, in3) + in2 + "}\n";
    s += in2 + "kiln_cp_async_commit();\n" + in + "}\n";
    // The stage this block reads and the one its copies write, counted round.
    const std::string rs = N + "_rs", ws = N + "_ws";
    s += in + "int " + rs + " = 0, " + ws + " = " + str(A) + ";\n";
    s += in + "for (int64_t " + b + " = 0; " + b + " < " + nb + "; ++" + b + ") {\n";
    s += in2 + "kiln_cp_async_wait<" + str(A - 1) + ">();\n";
    if (group) s += in2 + "kiln_fence_proxy_async();\n";
    s += in2 + "__syncthreads();\n";
    s += in2 + "if (" + b + " + " + str(A) + " < " + nb + ") {\n" + in3 + "const int64_t " + k0 +
         " = (" + b + " + " + str(A) + ") * " + str(D) + ";\n" + fetch_async(k0, ws, in3) + in2 +
         "}\n";
    s += in2 + "kiln_cp_async_commit();\n";
    s += in2 + "const int " + st0 + " = " + rs + ";\n";
    s += in2 + rs + " = " + rs + " == " + str(S - 1) + " ? 0 : " + rs + " + 1;\n";
    s += in2 + ws + " = " + ws + " == " + str(S - 1) + " ? 0 : " + ws + " + 1;\n";
    for (size_t q = 0; q < loads.size() && !group; ++q) {
      const int64_t extent = by_lane[q] ? L : R;
      const int64_t cols_q = k_major[q] ? extent + pads[q] : D + pads[q];
      const std::string T =
          n.staged[q].as_stored ? storage_type(dtype_of(q)) : compute_type(dtype_of(q));
      s += in2 + T + " (*const " + N + "_c" + str(q) + ")[" + str(cols_q) + "] = " + N + "_s" +
           str(q) + "[" + st0 + "];\n";
    }
  } else {
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
  }
  c.bound.clear();
  c.index_bound.clear();
  if (group) {
    s += render_warpgroup_steps(n, by_lane, k_major, N + "_st", in2);
  } else if (mma) {
    // Per k step of the instruction: each warp's a fragments (TM m tiles) and b fragments (TN
    // n tiles) from shared memory through ldmatrix, pairs of 16-bit values as 32-bit words,
    // then the TM × TN products; the next step's fragments are loaded before this step's
    // products issue (two sets of fragment registers), so their latency overlaps. Each
    // thread's ldmatrix addresses are its row's base plus constants. The block's k beyond K
    // holds zeros, whose products add nothing.
    const size_t a = by_lane[0] ? 1 : 0, b = 1 - a;
    const std::string arrays = S > 1 ? "_c" : "_s";  // this block's stage, or the one buffer
    const std::string sa = N + arrays + str(a), sb = N + arrays + str(b);
    const int64_t TM = n.warp_rows / mma->m, TN = n.warp_lanes / mma->n;
    const int64_t ra = mma->fa.elements / 2, rb = mma->fb.elements / 2;  // 32-bit registers
    const int64_t row_a = D + pads[a],  // elements per shared row of a ([rows][k])
        row_b = k_major[b] ? (by_lane[b] ? L : R) + pads[b] : D + pads[b];
    const int64_t bytes = n.staged[a].element_bytes;
    const std::string t = N + "_t", q = N + "_q", wr = str(n.warp_rows), wl = str(n.warp_lanes);
    // ldmatrix: x4 gives an m16 tile of a (lanes 0-15 address its rows at k, 16-31 at k + 8),
    // or two n8 tiles of b (lanes 16-31 address the second); .trans for b as [k][lanes].
    s += in2 + "const uint32_t " + N + "_ua = kiln_smem_addr(&" + sa + "[" + N + "_wm * " + wr +
         " + " + q + " % 16][(" + q + " / 16) * 8]);\n";
    if (k_major[b])
      s += in2 + "const uint32_t " + N + "_ub = kiln_smem_addr(&" + sb + "[" + q + " % 16][" + N +
           "_wn * " + wl + " + (" + q + " / 16) * 8]);\n";
    else
      s += in2 + "const uint32_t " + N + "_ub = kiln_smem_addr(&" + sb + "[" + N + "_wn * " + wl +
           " + (" + q + " / 16) * 8 + " + q + " % 8][(" + q + " / 8) % 2 * 8]);\n";
    s += in2 + "uint32_t " + N + "_fa[2][" + str(TM) + "][" + str(ra) + "], " + N + "_fb[2][" +
         str(TN) + "][" + str(rb) + "];\n";
    auto ldmatrix = [&](const std::string& trans, const std::string& out, const std::string& at) {
      return in4 + "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + trans +
             ".shared.b16 {%0, %1, %2, %3}, [%4];\"\n" + in4 + "             : " + out + "\n" +
             in4 + "             : \"r\"(" + at + "));\n";
    };
    // The fragments of k step `k` (elements from the block's start) into set `set`.
    auto fragments = [&](int set, int64_t k) {
      const std::string fa = N + "_fa[" + str(set) + "][" + t + "]",
                        fb = N + "_fb[" + str(set) + "][" + t;
      std::string f = in3 + "#pragma unroll\n" + in3 + "for (int " + t + " = 0; " + t + " < " +
                      str(TM) + "; ++" + t + ")\n";
      f += ldmatrix("",
                    "\"=r\"(" + fa + "[0]), \"=r\"(" + fa + "[1]), \"=r\"(" + fa + "[2]), \"=r\"(" +
                        fa + "[3])",
                    N + "_ua + " + t + " * " + str(16 * row_a * bytes) + " + " + str(k * bytes));
      f += in3 + "#pragma unroll\n" + in3 + "for (int " + t + " = 0; " + t + " < " + str(TN) +
           "; " + t + " += 2)\n";
      const std::string outs = "\"=r\"(" + fb + "][0]), \"=r\"(" + fb + "][1]), \"=r\"(" + fb +
                               " + 1][0]), \"=r\"(" + fb + " + 1][1])";
      if (k_major[b])
        f += ldmatrix(".trans", outs,
                      N + "_ub + " + t + " * " + str(8 * bytes) + " + " + str(k * row_b * bytes));
      else
        f += ldmatrix("", outs,
                      N + "_ub + " + t + " * " + str(8 * row_b * bytes) + " + " + str(k * bytes));
      return f;
    };
    const int64_t steps = D / mma->k;
    s += fragments(0, 0);
    for (int64_t step = 0; step < steps; ++step) {
      const int set = static_cast<int>(step % 2);
      if (step + 1 < steps) s += fragments(1 - set, (step + 1) * mma->k);
      s += in3 + "#pragma unroll\n" + in3 + "for (int " + m + " = 0; " + m + " < " + str(TM) +
           "; ++" + m + ")\n";
      s += in3 + "#pragma unroll\n" + in3 + "for (int " + j + " = 0; " + j + " < " + str(TN) +
           "; ++" + j + ") {\n";
      // The accumulator operands in element order: element e at (e / acc_cols, e % acc_cols) of
      // the tile's acc_rows × acc_cols.
      std::string c_ops, a_ops, b_ops, operands;
      int o = 0;
      auto list = [&](int count, std::string& out) {
        out = "{";
        for (int i = 0; i < count; ++i)
          out += (i ? ", %" : "%") + std::to_string(o++);
        out += "}";
      };
      const int ce = mma->fc.elements;
      list(ce, c_ops);
      list(static_cast<int>(ra), a_ops);
      list(static_cast<int>(rb), b_ops);
      s += in4 + "asm volatile(\"" + mma->ptx + " " + c_ops + ", " + a_ops + ", " + b_ops + ", " +
           c_ops + ";\"\n";
      for (int e = 0; e < ce; ++e)
        operands += std::string(e ? ", " : "") + "\"+f\"(" + N + "_acc[" + str(mma->acc_rows) +
                    " * " + m + " + " + str(e / mma->acc_cols) + "][" + str(mma->acc_cols) + " * " +
                    j + " + " + str(e % mma->acc_cols) + "])";
      s += in4 + "             : " + operands + "\n";
      operands.clear();
      for (int64_t i = 0; i < ra; ++i)
        operands += std::string(i ? ", " : "") + "\"r\"(" + N + "_fa[" + str(set) + "][" + m +
                    "][" + str(i) + "])";
      for (int64_t i = 0; i < rb; ++i)
        operands += ", \"r\"(" + N + "_fb[" + str(set) + "][" + j + "][" + str(i) + "])";
      s += in4 + "             : " + operands + ");\n";
      s += in3 + "}\n";
    }
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
  if (S > 1)  // every copy done and every warp past the last block before the stages are reused
    s += in + "}\n" +
         (group ? in + "kiln_wgmma_wait<0>();\n" + in + "#pragma unroll\n" + in + "for (int " + m +
                      " = 0; " + m + " < " + str(r) + "; ++" + m + ")\n" + in + "#pragma unroll\n" +
                      in + "for (int " + j + " = 0; " + j + " < " + str(l) + "; ++" + j + ")\n" +
                      in + "  kiln_fence_operand(" + acc + ");\n"
                : std::string()) +
         in + "kiln_cp_async_wait<0>();\n" + in + "__syncthreads();\n";
  else
    s += in2 + "__syncthreads();\n" + in + "}\n";
  c.bound.clear();

  // Store each element, then the statements after the reduction; where the result lives in
  // registers only (LoopNode::result_in_registers), they read the accumulator instead. With
  // the epilogue staged (LoopNode::epilogue_staged), the accumulators go to shared memory
  // first, [rows][lanes + 8] in the compute type (a warp's pairs then fall in distinct banks),
  // and the block's threads take the elements in row order, one copy of the epilogue's code
  // in a loop, consecutive threads on consecutive lanes.
  const bool staged_out = n.epilogue_staged;
  const std::string v_out = staged_out ? N + "_v" : acc;
  std::string body = in + "  if (" + row_ok + " && " + lane_ok + ") {\n";
  if (staged_out)
    body += in + "    const " + acc_type + " " + v_out + " = " + N + "_o[" + N + "_e / " + str(L) +
            "][" + N + "_e % " + str(L) + "];\n";
  std::vector<const ScalarExpr*> reads;
  if (n.result_in_registers) {
    for (const LoopNode* a : p.after)
      if (const Statement& t = c.kernel.statements.at(a->statement); t.value)
        collect_loads(*t.value, reads);
    for (const ScalarExpr* l : reads)
      if (l->buffer == st.buffer) c.preloaded[l] = from_storage(dtype, to_storage(dtype, v_out));
  } else {
    body += in + "    {\n" + bind_iterators(p.reduction->args, in + "      ");
    body += in + "      " + element + " = " + to_storage(dtype, v_out) + ";\n" + in + "    }\n";
  }
  for (const LoopNode* a : p.after)
    body += render_node(c, *a, depth + 3);
  for (const ScalarExpr* l : reads)
    c.preloaded.erase(l);
  if (!staged_out) {
    s += each_element(body + in + "  }\n");
    return s + pad + "}\n";
  }
  if (S <= 1 || (R * (L + 8) * 4 > block_tile_shared_bytes(n)))
    throw std::logic_error("a staged epilogue without the shared memory to hold it");
  const std::string O = N + "_o";
  s += in + acc_type + " (*const " + O + ")[" + str(L + 8) + "] = (" + acc_type + " (*)[" +
       str(L + 8) + "])kiln_shared;\n";
  s += in + "#pragma unroll\n" + in + "for (int " + m + " = 0; " + m + " < " + str(r) + "; ++" + m +
       ")\n" + in + "#pragma unroll\n" + in + "for (int " + j + " = 0; " + j + " < " + str(l) +
       "; ++" + j + ")\n";
  s += in + "  " + O + "[" + row + "][" + col + "] = " + acc + ";\n";
  s += in + "__syncthreads();\n";
  s += in + "for (int " + N + "_e = threadIdx.x; " + N + "_e < " + str(R * L) + "; " + N +
       "_e += " + str(kCudaBlockThreads) + ") {\n";
  s += in + "  const int64_t " + ri + " = " + N + "_r0 + " + N + "_e / " + str(L) + ", " + li +
       " = " + N + "_l0 + " + N + "_e % " + str(L) + ";\n";
  s += body + in + "  }\n" + in + "}\n";
  s += in + "__syncthreads();\n";  // before the next tile's copies reuse the stages
  return s + pad + "}\n";
}

}  // namespace kiln
