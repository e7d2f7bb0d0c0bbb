// The CUDA rendering of a contraction's block tile (scheduler/gpu_tile.h): the operands of each
// reduction block staged in shared memory by the whole block, each thread's elements in registers;
// on tensor cores (mma.sync) where the update is a product of two f16 or bf16 operands. The pieces
// of the tile's code are CudaRenderer::BlockTile's methods (backends/cuda_tile.h), in the order the
// kernel runs them; the copies of the staged operands into shared memory are in
// backends/cuda_tile_fill.cpp.
#include "backends/cuda_tile.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace kiln {

namespace {

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

std::string str(int64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string tile_extent_c(const LoopNode& l) {
  AstExprPtr upper =
      l.cond->op == "lt" ? l.cond->args[1] : ast_op("add", {l.cond->args[1], ast_int(1)});
  return "(" + ast_expr_to_c(*ast_op("sub", {upper, l.init})) + ")";
}

int64_t block_tile_local_bytes(const LoopNode& tile) {
  if (tile.space != MemorySpace::shared || tile.key_block > 0 || tile.stages > 1) return 0;
  int64_t bytes = 0;
  for (const StagedOperand& o : tile.staged) {
    const int64_t extent = o.by_lane ? tile.tile_lanes : tile.tile_rows, D = tile.pack_depth;
    bytes += ((o.k_major ? D * (extent + o.pad) : extent * (D + o.pad)) * o.element_bytes + 15) /
             16 * 16;
  }
  return bytes;
}

int64_t block_tile_shared_bytes(const LoopNode& tile) {
  if (tile.space == MemorySpace::shared && tile.key_block > 0)
    return softmax_tile_shared_bytes(tile.tile_lanes, tile.mma && tile.mma->warpgroup, tile.stages);
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

CudaRenderer::BlockTile::BlockTile(const CudaRenderer& renderer, const Context& c,
                                   const LoopNode& n, int depth)
    : renderer(renderer),
      c(c),
      n(n),
      depth(depth),
      p(parts_of(n)),
      st(c.kernel.statements.at(n.statement)),
      v(*st.value),
      mma(n.mma) {
  R = n.tile_rows;
  L = n.tile_lanes;
  pad = std::string(2 * depth, ' ');
  in = pad + "  ";
  in2 = in + "  ";
  in3 = in2 + "  ";
  in4 = in3 + "  ";
  N = n.name;
  m = N + "_m";
  j = N + "_n";
  kk = N + "_kk";
  k0 = N + "_k";
  e = N + "_e";
  x = N + "_x";
  ri = n.tile_row;
  li = n.tile_lane;
  row_ok = ast_expr_to_c(*n.tile_row_cond);
  lane_ok = ast_expr_to_c(*n.tile_lane_cond);

  // The staged operands and how to stage them, as scheduler/gpu_tile chose.
  for (const StagedOperand& o : n.staged) {
    loads.push_back(&subexpression(*st.value, o.path));
    by_lane.push_back(o.by_lane);
    k_first.push_back(o.k_first);
    k_major.push_back(o.k_major);
    chunk.push_back(o.vector);
    pads.push_back(o.pad);
  }
  r = n.thread_rows;
  l = n.thread_lanes;
  D = n.pack_depth;
  S = n.stages;
  thread_rows = R / r;
  thread_cols = L / l;
  // Threads of a warp, or of a warpgroup for wgmma.
  group = mma && mma->warpgroup;
  G = group ? 128 : 32;
  if (mma ? (n.warp_rows <= 0 || n.warp_lanes <= 0 ||
             (R / n.warp_rows) * (L / n.warp_lanes) * G != kCudaBlockThreads)
          : (R % r || L % l || r % 4 || l % 4 || thread_rows * thread_cols != kCudaBlockThreads))
    throw std::logic_error("a block tile that does not split over " + str(kCudaBlockThreads) +
                           " threads");

  // A thread's elements (m, n). SIMT: groups of 4 rows, thread_rows · 4 apart, so that the threads
  // of a warp read consecutive words of a shared row (likewise for lanes). Tensor cores: the
  // accumulator fragments of the instruction's m × n tiles of the warp's warp_rows × warp_lanes,
  // acc_rows × acc_cols elements of each (ir/mma.h's layout).
  if (mma) {
    const std::string fe = "(" + m + " % " + str(mma->acc_rows) + ") * " + str(mma->acc_cols) +
                           " + " + j + " % " + str(mma->acc_cols);
    row = "(" + N + "_wm * " + str(n.warp_rows) + " + (" + m + " / " + str(mma->acc_rows) + ") * " +
          str(mma->m) + " + " + fragment_coordinate(mma->fc.row, N + "_q", fe) + ")";
    col = "(" + N + "_wn * " + str(n.warp_lanes) + " + (" + j + " / " + str(mma->acc_cols) +
          ") * " + str(mma->n) + " + " + fragment_coordinate(mma->fc.col, N + "_q", fe) + ")";
  } else {
    row = "((" + m + " / 4) * " + str(thread_rows * 4) + " + " + N + "_tr * 4 + " + m + " % 4)";
    col = "((" + j + " / 4) * " + str(thread_cols * 4) + " + " + N + "_tc * 4 + " + j + " % 4)";
  }
  dtype = c.plan.buffers[st.buffer].dtype;
  acc_type = renderer.compute_type(dtype);
  element = renderer.render_index(c, st.buffer, st.index);
  acc = N + "_acc[" + m + "][" + j + "]";
  // Pipelined copies from addresses computed once per tile (lean_addresses, strided_addresses).
  lean = S > 1 && group && n.k_strided && !c.options.bounds_checks;
  strided = S > 1 && n.k_strided && !c.options.bounds_checks && !lean;
  tma = lean && S >= 3 && c.options.tensor_maps > 0 && !n.staged.empty();
  for (const StagedOperand& o : n.staged)
    tma = tma && !o.tma_box.empty();
  if (tma) first_map = first_tensor_map(c.nest, n);
}

DType CudaRenderer::BlockTile::dtype_of(size_t q) const {
  return loads[q]->kind == ScalarExpr::Kind::load ? c.plan.buffers[loads[q]->buffer].dtype
                                                  : loads[q]->dtype;
}

std::string CudaRenderer::render_block_tile(const Context& c, const LoopNode& n, int depth) const {
  if (n.key_block > 0) return render_softmax_tile(c, n, depth);
  const BlockTile t(*this, c, n, depth);
  std::string s = t.declarations();
  s += t.accumulator_start();
  s += t.reduction_extent();
  if (t.tma) s += t.tma_condition() + t.in + "if (" + t.N + "_tma) {\n" + t.tma_pipeline();
  if (t.tma) s += t.in + "} else {\n";
  s += t.S > 1 ? t.pipeline_head() : t.buffer_head();
  c.bound.clear();
  c.index_bound.clear();
  if (t.group)
    s += render_warpgroup_steps(n, t.by_lane, t.k_major, t.N + "_st", t.in2);
  else if (t.mma)
    s += t.mma_sync_steps();
  else
    s += t.simt_steps();
  s += t.pipeline_end();
  if (t.tma) s += t.in + "}\n";
  c.bound.clear();
  s += t.epilogue();
  return s;
}

std::string CudaRenderer::BlockTile::declarations() const {
  std::string s =
      pad + "{\n" + in + "/* " + N + ": a " + str(R) + "x" + str(L) + " block tile of " + st.name +
      (mma ? std::string(", on tensor cores (") + (group ? "wgmma " : "mma.sync ") + mma->name + ")"
           : std::string()) +
      ", " + str(r) + "x" + str(l) + " per thread (scheduler/gpu_tile.h) */\n";
  // [k][rows or lanes] or [rows or lanes][k], as stored or in the compute type, each row padded;
  // 16-byte aligned (kiln_lds4 reads groups of 4, ldmatrix rows of 16 bytes). A pipeline's stages
  // lie one after another in the kernel's dynamic shared memory, each operand's after the previous
  // one's. Swizzled operands (StagedOperand::swizzle) are one array per stage, indexed by
  // swizzled_at, each stage at a multiple of 1 KiB (the swizzle's period, which the descriptors
  // assume).
  int64_t offset = 0, local = 0;
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
    const std::string T = n.staged[q].as_stored ? renderer.storage_type(dtype_of(q))
                                                : renderer.compute_type(dtype_of(q));
    if (S > 1) {
      s += in + T + " (*const " + N + "_s" + str(q) + ")" + dims + " = (" + T + " (*)" + dims +
           ")(kiln_shared + " + str(offset) + ");\n";
      offset += S * rows_q * cols_q * n.staged[q].element_bytes;
    } else {
      s += in + renderer.shared_array(T, N + "_s" + str(q), rows_q, cols_q, local);
      local += (rows_q * cols_q * n.staged[q].element_bytes + 15) / 16 * 16;
    }
  }
  if (mma)
    s += in + "const int " + N + "_q = threadIdx.x % " + str(G) + ", " + N +
         "_wm = threadIdx.x / " + str(G * (L / n.warp_lanes)) + ", " + N + "_wn = (threadIdx.x / " +
         str(G) + ") % " + str(L / n.warp_lanes) + ";\n";
  else
    s += in + "const int " + N + "_tr = " + renderer.gpu_id(GpuId::thread) + " / " +
         str(thread_cols) + ", " + N + "_tc = " + renderer.gpu_id(GpuId::thread) + " % " +
         str(thread_cols) + ";\n";
  s += in + "const int64_t " + N + "_r0 = " + ast_expr_to_c(*n.tile_row_origin) + ", " + N +
       "_l0 = " + ast_expr_to_c(*n.tile_lane_origin) + ";\n";
  s += in + (mma ? renderer.compute_type(mma->acc) : acc_type) + " " + N + "_acc[" + str(r) + "][" +
       str(l) + "];\n";
  return s;
}

std::string CudaRenderer::BlockTile::each_element(const std::string& body) const {
  std::string t = in + "#pragma unroll\n" + in + "for (int " + m + " = 0; " + m + " < " + str(r) +
                  "; ++" + m + ")\n" + in + "#pragma unroll\n" + in + "for (int " + j + " = 0; " +
                  j + " < " + str(l) + "; ++" + j + ") {\n";
  t += in + "  const int64_t " + ri + " = " + N + "_r0 + " + row + ", " + li + " = " + N +
       "_l0 + " + col + ";\n";
  return t + body + in + "}\n";
}

std::string CudaRenderer::BlockTile::accumulator_start() const {
  std::string s;
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
    // The element starts from the reduction's identity, in the register only: its store in memory
    // would be overwritten by the result, and loading it back would keep its address live across
    // the reduction.
    const LoopNode& init = *p.before[0];
    const Statement* init_st = &c.kernel.statements.at(init.statement);
    c.promoted[init_st] = acc;
    s += each_element(renderer.render_node(c, init, depth + 1));
    c.promoted.erase(init_st);
  } else {
    std::string body = in + "  " + acc + " = 0;\n";
    body += in + "  if (" + row_ok + " && " + lane_ok + ") {\n";
    for (const LoopNode* b : p.before)
      body += renderer.render_node(c, *b, depth + 3);
    body += in + "    {\n" + renderer.bind_iterators(p.reduction->args, in + "      ");
    body += in + "      " + acc + " = " + from_storage(dtype, element) + ";\n" + in + "    }\n";
    s += each_element(body + in + "  }\n");
  }
  return s;
}

std::string CudaRenderer::BlockTile::reduction_extent() const {
  // The reduction loops as one: flattened iteration f of K, split into the loops' iterators.
  std::string total;
  for (const LoopNode* loop : p.loops)
    total += (total.empty() ? "" : " * ") + tile_extent_c(*loop);
  return in + "const int64_t " + N + "_K = " + total + ";\n";
}

std::string CudaRenderer::BlockTile::pipeline_head() const {
  std::string s;
  if (lean) s += lean_addresses();
  if (strided) s += strided_addresses();
  // The first A = S - 1 - F blocks' copies, a group each (F: blocks of warpgroup instructions left
  // running, LoopNode::mma_in_flight); then per block: wait for its group, a barrier (every warp is
  // past block b - 1 - F, whose stage the next copies reuse), the copies of block b + A, this
  // block's updates. The tensor cores' reads of warpgroup instructions go through the async proxy:
  // each thread fences its copies first.
  const int64_t F = group ? n.mma_in_flight : 0, A = S - 1 - F;
  if (A < 1) throw std::logic_error("a pipeline with no stage to copy ahead into");
  const std::string b = N + "_b", nb = N + "_nb", st0 = N + "_st";
  s += in + "const int64_t " + nb + " = (" + N + "_K + " + str(D - 1) + ") / " + str(D) + ";\n";
  s += in + "#pragma unroll 1\n" + in + "for (int " + b + " = 0; " + b + " < " + str(A) + "; ++" +
       b + ") {\n";
  s += in2 + "if (" + b + " < " + nb + ") {\n" + in3 + "const int64_t " + k0 + " = " + b + " * " +
       str(D) + ";\n" + fill_async(k0, b, in3) + in2 + "}\n";
  s += in2 + "kiln_cp_async_commit();\n" + in + "}\n";
  // The stage this block reads and the one its copies write, counted round.
  const std::string rs = N + "_rs", ws = N + "_ws";
  s += in + "int " + rs + " = 0, " + ws + " = " + str(A) + ";\n";
  s += in + "for (int64_t " + b + " = 0; " + b + " < " + nb + "; ++" + b + ") {\n";
  s += in2 + "kiln_cp_async_wait<" + str(A - 1) + ">();\n";
  if (group) s += in2 + "kiln_fence_proxy_async();\n";
  s += in2 + "__syncthreads();\n";
  s += in2 + "if (" + b + " + " + str(A) + " < " + nb + ") {\n" + in3 + "const int64_t " + k0 +
       " = (" + b + " + " + str(A) + ") * " + str(D) + ";\n" + fill_async(k0, ws, in3) + in2 +
       "}\n";
  s += in2 + "kiln_cp_async_commit();\n";
  s += in2 + "const int " + st0 + " = " + rs + ";\n";
  s += in2 + rs + " = " + rs + " == " + str(S - 1) + " ? 0 : " + rs + " + 1;\n";
  s += in2 + ws + " = " + ws + " == " + str(S - 1) + " ? 0 : " + ws + " + 1;\n";
  for (size_t q = 0; q < loads.size() && !group; ++q) {
    const int64_t extent = by_lane[q] ? L : R;
    const int64_t cols_q = k_major[q] ? extent + pads[q] : D + pads[q];
    const std::string T = n.staged[q].as_stored ? renderer.storage_type(dtype_of(q))
                                                : renderer.compute_type(dtype_of(q));
    s += in2 + T + " (*const " + N + "_c" + str(q) + ")[" + str(cols_q) + "] = " + N + "_s" +
         str(q) + "[" + st0 + "];\n";
  }
  return s;
}

std::string CudaRenderer::BlockTile::buffer_head() const {
  std::string s;
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t per =
        ((by_lane[q] ? L : R) * D / chunk[q] + kCudaBlockThreads - 1) / kCudaBlockThreads;
    s += in + (mma ? renderer.storage_type(dtype_of(q)) : renderer.compute_type(dtype_of(q))) +
         " " + N + "_p" + str(q) + "[" + str(per * chunk[q]) + "];\n";
  }
  // The first block's operands, then per block: registers to shared memory, the next block's loads
  // issued (they complete while this block computes), this block's updates.
  s += in + "{\n" + in2 + "const int64_t " + k0 + " = 0;\n" + fetch(k0, in2) + in + "}\n";
  s += in + "for (int64_t " + k0 + " = 0; " + k0 + " < " + N + "_K; " + k0 + " += " + str(D) +
       ") {\n";
  s += registers_to_shared();
  s += in2 + renderer.shared_barrier() + "\n";
  s += in2 + "if (" + k0 + " + " + str(D) + " < " + N + "_K) {\n" + in3 + "const int64_t " + N +
       "_next = " + k0 + " + " + str(D) + ";\n" + fetch(N + "_next", in3) + in2 + "}\n";
  return s;
}

CudaRenderer::BlockTile::MmaShape CudaRenderer::BlockTile::mma_shape() const {
  MmaShape f;
  f.a = by_lane[0] ? 1 : 0;
  f.b = 1 - f.a;
  f.TM = n.warp_rows / mma->m;
  f.TN = n.warp_lanes / mma->n;
  f.ra = mma->fa.elements / 2;  // 32-bit registers
  f.rb = mma->fb.elements / 2;
  f.row_a = D + pads[f.a];  // elements per shared row of a ([rows][k])
  f.row_b = k_major[f.b] ? (by_lane[f.b] ? L : R) + pads[f.b] : D + pads[f.b];
  f.bytes = n.staged[f.a].element_bytes;
  return f;
}

std::string CudaRenderer::BlockTile::mma_sync_steps() const {
  std::string s;
  // Per k step of the instruction: each warp's a fragments (TM m tiles) and b fragments (TN n
  // tiles) from shared memory through ldmatrix, pairs of 16-bit values as 32-bit words, then the TM
  // × TN products; the next step's fragments are loaded before this step's products issue (two sets
  // of fragment registers), so their latency overlaps. Each thread's ldmatrix addresses are its
  // row's base plus constants. The block's k beyond K holds zeros, whose products add nothing.
  const MmaShape f = mma_shape();
  const size_t a = f.a, b = f.b;
  const std::string arrays = S > 1 ? "_c" : "_s";  // this block's stage, or the one buffer
  const std::string sa = N + arrays + str(a), sb = N + arrays + str(b);
  const std::string q = N + "_q", wr = str(n.warp_rows), wl = str(n.warp_lanes);
  // ldmatrix: x4 gives an m16 tile of a (lanes 0-15 address its rows at k, 16-31 at k + 8), or two
  // n8 tiles of b (lanes 16-31 address the second); .trans for b as [k][lanes].
  s += in2 + "const uint32_t " + N + "_ua = kiln_smem_addr(&" + sa + "[" + N + "_wm * " + wr +
       " + " + q + " % 16][(" + q + " / 16) * 8]);\n";
  if (k_major[b])
    s += in2 + "const uint32_t " + N + "_ub = kiln_smem_addr(&" + sb + "[" + q + " % 16][" + N +
         "_wn * " + wl + " + (" + q + " / 16) * 8]);\n";
  else
    s += in2 + "const uint32_t " + N + "_ub = kiln_smem_addr(&" + sb + "[" + N + "_wn * " + wl +
         " + (" + q + " / 16) * 8 + " + q + " % 8][(" + q + " / 8) % 2 * 8]);\n";
  s += in2 + "uint32_t " + N + "_fa[2][" + str(f.TM) + "][" + str(f.ra) + "], " + N + "_fb[2][" +
       str(f.TN) + "][" + str(f.rb) + "];\n";
  const int64_t steps = D / mma->k;
  s += mma_fragments(f, 0, 0);
  for (int64_t step = 0; step < steps; ++step) {
    const int set = static_cast<int>(step % 2);
    if (step + 1 < steps) s += mma_fragments(f, 1 - set, (step + 1) * mma->k);
    s += mma_products(f, set);
  }
  return s;
}

std::string CudaRenderer::BlockTile::mma_fragments(const MmaShape& f, int set, int64_t k) const {
  const std::string t = N + "_t";
  auto ldmatrix = [&](const std::string& trans, const std::string& out, const std::string& at) {
    return in4 + "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + trans +
           ".shared.b16 {%0, %1, %2, %3}, [%4];\"\n" + in4 + "             : " + out + "\n" + in4 +
           "             : \"r\"(" + at + "));\n";
  };
  const std::string fa = N + "_fa[" + str(set) + "][" + t + "]",
                    fb = N + "_fb[" + str(set) + "][" + t;
  std::string s = in3 + "#pragma unroll\n" + in3 + "for (int " + t + " = 0; " + t + " < " +
                  str(f.TM) + "; ++" + t + ")\n";
  s += ldmatrix(
      "",
      "\"=r\"(" + fa + "[0]), \"=r\"(" + fa + "[1]), \"=r\"(" + fa + "[2]), \"=r\"(" + fa + "[3])",
      N + "_ua + " + t + " * " + str(16 * f.row_a * f.bytes) + " + " + str(k * f.bytes));
  s += in3 + "#pragma unroll\n" + in3 + "for (int " + t + " = 0; " + t + " < " + str(f.TN) + "; " +
       t + " += 2)\n";
  const std::string outs = "\"=r\"(" + fb + "][0]), \"=r\"(" + fb + "][1]), \"=r\"(" + fb +
                           " + 1][0]), \"=r\"(" + fb + " + 1][1])";
  if (k_major[f.b])
    s += ldmatrix(".trans", outs,
                  N + "_ub + " + t + " * " + str(8 * f.bytes) + " + " + str(k * f.row_b * f.bytes));
  else
    s += ldmatrix("", outs,
                  N + "_ub + " + t + " * " + str(8 * f.row_b * f.bytes) + " + " + str(k * f.bytes));
  return s;
}

std::string CudaRenderer::BlockTile::mma_products(const MmaShape& f, int set) const {
  std::string s = in3 + "#pragma unroll\n" + in3 + "for (int " + m + " = 0; " + m + " < " +
                  str(f.TM) + "; ++" + m + ")\n";
  s += in3 + "#pragma unroll\n" + in3 + "for (int " + j + " = 0; " + j + " < " + str(f.TN) +
       "; ++" + j + ") {\n";
  // The accumulator operands in element order: element e at (e / acc_cols, e % acc_cols) of the
  // tile's acc_rows × acc_cols.
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
  list(static_cast<int>(f.ra), a_ops);
  list(static_cast<int>(f.rb), b_ops);
  s += in4 + "asm volatile(\"" + mma->ptx + " " + c_ops + ", " + a_ops + ", " + b_ops + ", " +
       c_ops + ";\"\n";
  for (int e = 0; e < ce; ++e)
    operands += std::string(e ? ", " : "") + "\"+f\"(" + N + "_acc[" + str(mma->acc_rows) + " * " +
                m + " + " + str(e / mma->acc_cols) + "][" + str(mma->acc_cols) + " * " + j + " + " +
                str(e % mma->acc_cols) + "])";
  s += in4 + "             : " + operands + "\n";
  operands.clear();
  for (int64_t i = 0; i < f.ra; ++i)
    operands += std::string(i ? ", " : "") + "\"r\"(" + N + "_fa[" + str(set) + "][" + m + "][" +
                str(i) + "])";
  for (int64_t i = 0; i < f.rb; ++i)
    operands += ", \"r\"(" + N + "_fb[" + str(set) + "][" + j + "][" + str(i) + "])";
  s += in4 + "             : " + operands + ");\n";
  s += in3 + "}\n";
  return s;
}

std::string CudaRenderer::BlockTile::simt_steps() const {
  std::string s;
  // Per reduction iteration: each thread's rows and lanes of the staged operands into registers
  // (16-byte reads of groups of 4), then every element's update from them.
  s += in2 + "const int64_t " + N + "_kd = " + N + "_K - " + k0 + ";\n";
  s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < " + str(D) + "; ++" +
       kk + ") {\n";
  s += in3 + "if (" + kk + " >= " + N + "_kd) break;\n";
  for (size_t q = 0; q < loads.size(); ++q) {
    const std::string reg = N + "_o" + str(q);
    const int64_t count = by_lane[q] ? l : r;
    const int64_t spread = 4 * (by_lane[q] ? thread_cols : thread_rows);
    s += in3 + renderer.compute_type(dtype_of(q)) + " " + reg + "[" + str(count) + "];\n";
    for (int64_t g = 0; g < count / 4; ++g)
      s += in3 + "kiln_lds4(" + reg + " + " + str(4 * g) + ", &" + N + "_s" + str(q) + "[" + kk +
           "][" + str(g * spread) + " + " + N + (by_lane[q] ? "_tc" : "_tr") + " * 4]);\n";
    c.bound[loads[q]] = reg + "[" + (by_lane[q] ? j : m) + "]";
  }
  std::string update = renderer.bind_shared(c, v);
  update += acc + " = " + acc + " + (" + acc_type + ")(" + renderer.render_value(c, v) + ");\n";
  s += in3 + "#pragma unroll\n" + in3 + "for (int " + m + " = 0; " + m + " < " + str(r) + "; ++" +
       m + ")\n" + in3 + "#pragma unroll\n" + in3 + "for (int " + j + " = 0; " + j + " < " +
       str(l) + "; ++" + j + ") {\n";
  for (size_t from = 0, to; from < update.size(); from = to + 1) {
    to = std::min(update.find('\n', from), update.size());
    if (to > from) s += in4 + update.substr(from, to - from) + "\n";
  }
  s += in3 + "}\n" + in2 + "}\n";
  return s;
}

std::string CudaRenderer::BlockTile::pipeline_end() const {
  std::string s;
  if (S > 1)  // every copy done and every warp past the last block before the stages are reused
    s += in + "}\n" +
         (group ? in + "kiln_wgmma_wait<0>();\n" + in + "#pragma unroll\n" + in + "for (int " + m +
                      " = 0; " + m + " < " + str(r) + "; ++" + m + ")\n" + in + "#pragma unroll\n" +
                      in + "for (int " + j + " = 0; " + j + " < " + str(l) + "; ++" + j + ")\n" +
                      in + "  kiln_fence_operand(" + acc + ");\n"
                : std::string()) +
         in + "kiln_cp_async_wait<0>();\n" + in + "__syncthreads();\n";
  else
    s += in2 + renderer.shared_barrier() + "\n" + in + "}\n";
  return s;
}

std::string CudaRenderer::BlockTile::epilogue() const {
  // Store each element, then the statements after the reduction; where the result lives in
  // registers only (LoopNode::result_in_registers), they read the accumulator instead. With the
  // epilogue staged (LoopNode::epilogue_staged), the accumulators go to shared memory first,
  // [rows][lanes + 8] in the compute type (a warp's pairs then fall in distinct banks), and the
  // block's threads take the elements in row order, one copy of the epilogue's code in a loop,
  // consecutive threads on consecutive lanes.
  const std::string body = element_epilogue();
  if (!n.epilogue_staged) return each_element(body) + pad + "}\n";
  if (S <= 1 || (R * (L + 8) * 4 > block_tile_shared_bytes(n)))
    throw std::logic_error("a staged epilogue without the shared memory to hold it");
  const std::string O = N + "_o";
  std::string s = in + acc_type + " (*const " + O + ")[" + str(L + 8) + "] = (" + acc_type +
                  " (*)[" + str(L + 8) + "])kiln_shared;\n";
  s += in + "#pragma unroll\n" + in + "for (int " + m + " = 0; " + m + " < " + str(r) + "; ++" + m +
       ")\n" + in + "#pragma unroll\n" + in + "for (int " + j + " = 0; " + j + " < " + str(l) +
       "; ++" + j + ")\n";
  s += in + "  " + O + "[" + row + "][" + col + "] = " + acc + ";\n";
  s += in + "__syncthreads();\n";
  const std::string at = in + "  const int64_t " + ri + " = " + N + "_r0 + " + N + "_e / " +
                         str(L) + ", " + li + " = " + N + "_l0 + " + N + "_e % " + str(L) + ";\n";
  const int64_t V = n.epilogue_vector;
  if (V <= 0) {
    s += in + "for (int " + N + "_e = threadIdx.x; " + N + "_e < " + str(R * L) + "; " + N +
         "_e += " + str(kCudaBlockThreads) + ") {\n";
    s += at + body + in + "}\n";
  } else {
    // Runs of V lanes: inside the domain at an aligned address one 16-byte store of the one
    // statement that stores (the reduction's, or the one after it), else the elements one by
    // one (LoopNode::epilogue_vector).
    const LoopNode* after = p.after.empty() ? nullptr : p.after.front();
    const Statement& t = after ? c.kernel.statements.at(after->statement) : st;
    const std::vector<AstExprPtr>& args = after ? after->args : p.reduction->args;
    const DType out = c.plan.buffers.at(t.buffer).dtype;
    const std::string e0 = N + "_e0", T = renderer.storage_type(out), p2 = in + "    ",
                      p3 = p2 + "    ";
    s += in + "for (int " + e0 + " = threadIdx.x * " + str(V) + "; " + e0 + " < " + str(R * L) +
         "; " + e0 + " += " + str(kCudaBlockThreads * V) + ") {\n";
    s += in + "  bool " + N + "_done = false;\n" + in + "  {\n" + in + "  const int " + N +
         "_e = " + e0 + ";\n" + at;
    const std::string last_lane = ast_expr_to_c(
        *substitute(n.tile_lane_cond, li, ast_op("add", {ast_iter(li), ast_int(V - 1)})));
    s += in + "  if (" + row_ok + " && " + last_lane + ") {\n";
    s += renderer.bind_iterators(args, p2);
    s += p2 + T + "* " + N + "_a = &" + renderer.render_index(c, t.buffer, t.index) + ";\n";
    s += p2 + "if (((uint64_t)" + N + "_a & 15) == 0) {\n";
    s += p2 + "  " + T + " " + N + "_w[" + str(V) + "];\n";
    std::string v_at = N + "_o[" + N + "_e / " + str(L) + "][" + N + "_e % " + str(L) + "]";
    if (acc_type == "float" && V % 4 == 0 && (L + 8) % 4 == 0) {
      // The run's accumulators in 16-byte loads (rows of L + 8 floats keep them aligned): one
      // element a load would put the eight threads of a bank group on the same banks.
      s += p2 + "  float4 " + N + "_x[" + str(V / 4) + "];\n";
      s += p2 + "  #pragma unroll\n" + p2 + "  for (int " + N + "_u = 0; " + N + "_u < " +
           str(V / 4) + "; ++" + N + "_u)\n";
      s += p2 + "    " + N + "_x[" + N + "_u] = *(const float4*)&" + N + "_o[" + e0 + " / " +
           str(L) + "][" + e0 + " % " + str(L) + " + 4 * " + N + "_u];\n";
      v_at = "((const float*)" + N + "_x)[" + N + "_u]";
    }
    s += p2 + "  #pragma unroll\n" + p2 + "  for (int " + N + "_u = 0; " + N + "_u < " + str(V) +
         "; ++" + N + "_u) {\n";
    s += p3 + "const int " + N + "_e = " + e0 + " + " + N + "_u;\n";
    if (!after) {
      s += p3 + N + "_w[" + N + "_u] = " + to_storage(out, v_at) + ";\n";
    } else {
      s += p3 + "const " + acc_type + " " + N + "_v = " + v_at + ";\n";
      s += p3 + "const int64_t " + ri + " = " + N + "_r0 + " + N + "_e / " + str(L) + ", " + li +
           " = " + N + "_l0 + " + N + "_e % " + str(L) + ";\n";
      s += renderer.bind_iterators(args, p3);
      std::vector<const ScalarExpr*> reads;
      collect_loads(*t.value, reads);
      for (const ScalarExpr* l : reads)
        if (l->buffer == st.buffer)
          c.preloaded[l] = from_storage(dtype, to_storage(dtype, N + "_v"));
      c.bound.clear();
      c.index_bound.clear();
      // Shared subexpressions first, as a statement's rendering binds them (c.bound).
      const std::string shared = renderer.bind_shared(c, *t.value);
      for (size_t from = 0, to; from < shared.size(); from = to + 1) {
        to = std::min(shared.find('\n', from), shared.size());
        if (to > from) s += p3 + shared.substr(from, to - from) + "\n";
      }
      s += p3 + N + "_w[" + N + "_u] = " + to_storage(out, renderer.render_value(c, *t.value)) +
           ";\n";
      c.bound.clear();
      c.index_bound.clear();
      for (const ScalarExpr* l : reads)
        c.preloaded.erase(l);
    }
    s += p2 + "  }\n";
    s += p2 + "  kiln_st16(" + N + "_a, " + N + "_w);\n" + p2 + "  " + N + "_done = true;\n" + p2 +
         "}\n";
    s += in + "  }\n" + in + "  }\n";
    s += in + "  if (!" + N + "_done)\n" + in + "  for (int " + N + "_u = 0; " + N + "_u < " +
         str(V) + "; ++" + N + "_u) {\n";
    s += in + "  const int " + N + "_e = " + e0 + " + " + N + "_u;\n" + at + body + in + "  }\n";
    s += in + "}\n";
  }
  s += in + "__syncthreads();\n";  // before the next tile's copies reuse the stages
  return s + pad + "}\n";
}

std::string CudaRenderer::BlockTile::element_epilogue() const {
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
    body += in + "    {\n" + renderer.bind_iterators(p.reduction->args, in + "      ");
    body += in + "      " + element + " = " + to_storage(dtype, v_out) + ";\n" + in + "    }\n";
  }
  for (const LoopNode* a : p.after)
    body += renderer.render_node(c, *a, depth + 3);
  for (const ScalarExpr* l : reads)
    c.preloaded.erase(l);
  return body + in + "  }\n";
}

}  // namespace kiln
