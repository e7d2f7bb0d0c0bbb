// The copies of a GPU block tile's staged operands into shared memory (scheduler/gpu_tile.h,
// backends/cuda_tile.h): with cp.async into a pipeline's stages, each 16-byte chunk inside the
// domain at an aligned address one instruction and the edges element by element; or through the
// thread's registers into the one buffer.
#include <algorithm>
#include <stdexcept>

#include "backends/cuda_tile.h"

namespace kiln {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string CudaRenderer::BlockTile::split_k(const std::string& f, const std::string& pad2) const {
  std::string out, q = f;
  for (size_t k = p.loops.size(); k-- > 0;) {
    const LoopNode& loop = *p.loops[k];
    std::string value = k == 0 ? q : "(" + q + ") % " + tile_extent_c(loop);
    out += pad2 + "const int64_t " + loop.iter + " = " + ast_expr_to_c(*loop.init) + " + " + value +
           ";\n";
    q = "(" + q + ") / " + tile_extent_c(loop);
  }
  return out;
}

// Each thread's share of the copy of each operand: chunks c = threadIdx.x + 256 p of V elements (16
// bytes where memory holds them contiguously, else 1) of the (rows or lanes) × depth block, walked
// in the order memory holds them.
std::string CudaRenderer::BlockTile::share(size_t q, const std::string& pad2,
                                           const std::string& body) const {
  const int64_t extent = by_lane[q] ? L : R, V = chunk[q], n_c = extent * D / V;
  const int64_t per = (n_c + kCudaBlockThreads - 1) / kCudaBlockThreads;
  std::string t = pad2 + "#pragma unroll\n" + pad2 + "for (int " + N + "_p = 0; " + N + "_p < " +
                  str(per) + "; ++" + N + "_p) {\n";
  t += pad2 + "  const int " + e + " = " + renderer.gpu_id(GpuId::thread) + " + " +
       str(kCudaBlockThreads) + " * " + N + "_p;\n";
  if (k_first[q])
    t += pad2 + "  const int " + kk + " = " + e + " % " + str(D / V) + " * " + str(V) + ", " + x +
         " = " + e + " / " + str(D / V) + ";\n";
  else
    t += pad2 + "  const int " + x + " = " + e + " % " + str(extent / V) + " * " + str(V) + ", " +
         kk + " = " + e + " / " + str(extent / V) + ";\n";
  std::string guard = n_c % kCudaBlockThreads ? "if (" + e + " < " + str(n_c) + ") " : "";
  return t + pad2 + "  " + guard + "{\n" + body + pad2 + "  }\n" + pad2 + "}\n";
}

// The iterators of element i of a chunk (i a C expression), and whether it is in the domain.
std::string CudaRenderer::BlockTile::coords(size_t q, const std::string& base,
                                            const std::string& i) const {
  std::string dx = k_first[q] ? x : x + " + " + i, dk = k_first[q] ? kk + " + " + i : kk;
  return "const int64_t " + ri + " = " + N + "_r0" + (by_lane[q] ? "" : " + " + dx) + ", " + li +
         " = " + N + "_l0" + (by_lane[q] ? " + " + dx : "") + ", " + N + "_f = " + base + " + " +
         dk + ";\n";
}

std::string CudaRenderer::BlockTile::in_domain(size_t q) const {
  return N + "_f < " + N + "_K && " + (by_lane[q] ? lane_ok : row_ok);
}

// The last element of chunk q along its rows or lanes is in the domain too.
std::string CudaRenderer::BlockTile::last_in(size_t q) const {
  const int64_t V = chunk[q];
  return k_first[q] ? N + "_f + " + str(V - 1) + " < " + N + "_K"
                    : ast_expr_to_c(*substitute(
                          by_lane[q] ? n.tile_lane_cond : n.tile_row_cond, by_lane[q] ? li : ri,
                          ast_op("add", {ast_iter(by_lane[q] ? li : ri), ast_int(V - 1)})));
}

// Loads the operands of the reduction block from `base` into the thread's registers, zeros outside
// the domain: values in the compute type, or as stored for the tensor cores. A chunk wholly inside
// the domain at a 16-byte aligned address is one 16-byte load.
std::string CudaRenderer::BlockTile::fetch(const std::string& base, const std::string& pad2) const {
  std::string t;
  const std::string p3 = pad2 + "    ", p4 = p3 + "  ", p5 = p4 + "  ";
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t V = chunk[q];
    const DType dt = dtype_of(q);
    const std::string reg = N + "_p" + str(q), at = reg + "[" + N + "_p * " + str(V);
    auto value = [&] {
      c.bound.clear();
      c.index_bound.clear();
      return mma ? renderer.render_index(c, loads[q]->buffer, loads[q]->index)
                 : renderer.render_value(c, *loads[q]);
    };
    std::string body;
    if (V > 1) {
      // The first and the last element in the domain (its bounds are rectangular), then the address
      // of the first.
      body += p3 + "bool " + N + "_done = false;\n" + p3 + "{\n";
      body += p4 + coords(q, base, "0");
      body += p4 + "if (" + in_domain(q) + " && " + last_in(q) + ") {\n";
      body += split_k(N + "_f", p5) + renderer.bind_iterators(p.update->args, p5);
      body += p5 + "const " + renderer.buffer_space() + renderer.storage_type(dt) + "* " + N +
              "_a = &" + renderer.render_index(c, loads[q]->buffer, loads[q]->index) + ";\n";
      body += p5 + "if (((uint64_t)" + N + "_a & 15) == 0) {\n";
      if (mma) {
        body += p5 + "  kiln_ld16(&" + at + "], " + N + "_a);\n";
      } else {
        body += p5 + "  " + renderer.storage_type(dt) + " " + N + "_w[" + str(V) + "];\n";
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
    body += p4 + at + " + " + ie + "] = (" +
            (mma ? renderer.storage_type(dt) : renderer.compute_type(dt)) + ")0;\n";
    body += p4 + "if (" + in_domain(q) + ") {\n";
    body += split_k(N + "_f", p5) + renderer.bind_iterators(p.update->args, p5);
    body += p5 + at + " + " + ie + "] = " + value() + ";\n" + p4 + "}\n" + p3 + "}\n";
    t += share(q, pad2, body);
  }
  return t;
}

// The element of swizzled operand q at row or lane xi, reduction index ki in its stage: 128-byte
// rows of 8 chunks of 8 values, chunk c of row r at c xor r % 8; [x][k] one row per row or lane,
// [k][x] blocks of 64 rows or lanes, D rows of k each.
std::string CudaRenderer::BlockTile::swizzled_at(size_t q, const std::string& xi,
                                                 const std::string& ki) const {
  const std::string X = "(" + xi + ")", K = "(" + ki + ")";
  if (!k_major[q])
    return X + " * " + str(D) + " + (((" + K + " / 8) ^ (" + X + " % 8)) * 8) + " + K + " % 8";
  return X + " / 64 * " + str(64 * D) + " + " + K + " * 64 + (((" + X + " % 64 / 8) ^ (" + K +
         " % 8)) * 8) + " + X + " % 8";
}

// Where chunk element i of operand q lies in shared memory (`stage` a C expression, or empty for
// the one buffer).
std::string CudaRenderer::BlockTile::shared_at(size_t q, const std::string& stage,
                                               const std::string& i) const {
  std::string xi = k_first[q] ? x : x + " + " + i, ki = k_first[q] ? kk + " + " + i : kk;
  const std::string array = N + "_s" + str(q) + (stage.empty() ? "" : "[" + stage + "]");
  if (n.staged[q].swizzle) return array + "[" + swizzled_at(q, xi, ki) + "]";
  return array + (k_major[q] ? "[" + ki + "][" + xi + "]" : "[" + xi + "][" + ki + "]");
}

std::string CudaRenderer::BlockTile::ptr(size_t q) const {
  return N + "_g" + str(q) + "[" + N + "_p]";
}

std::string CudaRenderer::BlockTile::inside(size_t q) const {
  return N + "_in" + str(q) + "[" + N + "_p]";
}

// lean: a thread's chunk p of operand q lies `step` rows (or k rows) past its chunk 0, and memory
// holds the operand affinely in both: its address is chunk 0's at block 0 (N_g), plus p times the
// chunks' stride (N_dp), plus k0 times the reduction's (N_d).
int64_t CudaRenderer::BlockTile::chunk_step(size_t q) const {
  const int64_t extent = by_lane[q] ? L : R, V = chunk[q];
  const int64_t across = k_first[q] ? D / V : extent / V;  // chunks along a row of the walk
  if ((extent * D / V) % kCudaBlockThreads || kCudaBlockThreads % across)
    throw std::logic_error("a warpgroup tile whose copies do not split evenly");
  return kCudaBlockThreads / across;
}

// Pipelined copies with addresses strided along k (LoopNode::k_strided): each chunk's address at
// block 0 and whether its rows or lanes are in the domain are computed once per tile
// (strided_addresses); a block's address is then that plus k0 times the operand's stride. (Not
// under bounds checks: every access then computes and checks its own index.) Warpgroup tiles hold
// half a thread's registers in accumulators: their copies keep one address per operand instead
// (lean_addresses).
std::string CudaRenderer::BlockTile::lean_addresses() const {
  std::string s;
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t extent = by_lane[q] ? L : R, V = chunk[q], step = chunk_step(q);
    const std::string T = renderer.storage_type(dtype_of(q)), Q = str(q),
                      at = renderer.render_index(c, loads[q]->buffer, loads[q]->index);
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
      return in + "const " + T + "* " + name + ";\n" + in + "{\n" + in2 + "const int64_t " + ri +
             " = " + N + "_r0" + (by_lane[q] ? "" : " + " + xs) + ", " + li + " = " + N + "_l0" +
             (by_lane[q] ? " + " + xs : "") + ", " + N + "_f = " + f + " + " + ks + ";\n" +
             split_k(N + "_f", in2) + renderer.bind_iterators(p.update->args, in2) + in2 + name +
             " = &" + at + ";\n" + in + "}\n";
    };
    const std::string x0 = N + "_x0_" + Q, k00 = N + "_kk0_" + Q;
    s += address(N + "_g" + Q, x0, k00, "0");
    s += address(N + "_g" + Q + "f", x0, k00, "1");
    s += address(N + "_g" + Q + "p", k_first[q] ? x0 + " + " + str(step) : x0,
                 k_first[q] ? k00 : k00 + " + " + str(step), "0");
    s += in + "const int64_t " + N + "_d" + Q + " = " + N + "_g" + Q + "f - " + N + "_g" + Q +
         ", " + N + "_dp" + Q + " = " + N + "_g" + Q + "p - " + N + "_g" + Q + ";\n";
    // Whether every chunk of the operand lies inside the tile's rows (or lanes) at an aligned
    // address at every block: its last row or lane in the domain (the bounds are rectangular, as
    // last_in assumes), chunk 0 aligned, and the chunks' and blocks' strides whole chunks. Blocks
    // wholly inside the reduction then copy without a check.
    const std::string last_x = by_lane[q] ? li : ri;
    const AstExprPtr last = ast_op(
        "add", {ast_iter(N + (by_lane[q] ? "_l0" : "_r0")), ast_int((by_lane[q] ? L : R) - 1)});
    s += in + "const bool " + N + "_al" + Q + " = ((uint64_t)" + N + "_g" + Q + " & 15) == 0 && " +
         N + "_dp" + Q + " % " + str(V) + " == 0 && (" + N + "_d" + Q + " * " + str(D) + ") % " +
         str(V) + " == 0;\n";
    s += in + "const bool " + N + "_full" + Q + " = " +
         ast_expr_to_c(*substitute(by_lane[q] ? n.tile_lane_cond : n.tile_row_cond, last_x, last)) +
         " && " + N + "_al" + Q + ";\n";
    // An edge tile (some chunks outside the rows or lanes): which of the thread's chunks lie
    // inside (bit p of N_m), the same at every block, and whether none straddles the edge
    // (N_pr: each chunk wholly in or wholly out, the addresses aligned). Its blocks then copy
    // as the inside ones do, the chunks outside filled with zeros by cp.async from the tile's
    // first element (in the operand whenever the tile is), predicated_fill.
    const int64_t per = extent * D / V / kCudaBlockThreads;
    s += address(N + "_gs" + Q, "0", "0", "0");
    s += in + "uint32_t " + N + "_m" + Q + " = 0;\n" + in + "bool " + N + "_pr" + Q + " = " + N +
         "_al" + Q + " && ((uint64_t)" + N + "_gs" + Q + " & 15) == 0;\n";
    s += in + "#pragma unroll\n" + in + "for (int " + N + "_p = 0; " + N + "_p < " + str(per) +
         "; ++" + N + "_p) {\n" + chunk_at(q, in2);
    s += in2 + coords(q, "0", "0");
    const std::string first = by_lane[q] ? lane_ok : row_ok;
    s += in2 + "const bool " + N + "_i0 = " + first + ", " + N +
         "_i1 = " + (k_first[q] ? first : last_in(q)) + ";\n";
    s += in2 + N + "_m" + Q + " |= (uint32_t)" + N + "_i1 << " + N + "_p;\n";
    s += in2 + "if (" + N + "_i0 && !" + N + "_i1) " + N + "_pr" + Q + " = false;\n" + in + "}\n";
  }
  return s;
}

// A lean tile's chunk N_p of operand q: its row or lane N_x and reduction index N_kk in the block.
std::string CudaRenderer::BlockTile::chunk_at(size_t q, const std::string& indent) const {
  const std::string Q = str(q), step = str(chunk_step(q));
  return indent + "const int " + x + " = " + N + "_x0_" + Q +
         (k_first[q] ? " + " + step + " * " + N + "_p" : "") + ", " + kk + " = " + N + "_kk0_" + Q +
         (k_first[q] ? "" : " + " + step + " * " + N + "_p") + ";\n";
}

std::string CudaRenderer::BlockTile::strided_addresses() const {
  std::string s;
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t extent = by_lane[q] ? L : R, V = chunk[q];
    const int64_t per = (extent * D / V + kCudaBlockThreads - 1) / kCudaBlockThreads;
    const std::string T = renderer.storage_type(dtype_of(q)),
                      at = renderer.render_index(c, loads[q]->buffer, loads[q]->index);
    s += in + "const " + T + "* " + N + "_g" + str(q) + "[" + str(per) + "];\n";
    s += in + "bool " + N + "_in" + str(q) + "[" + str(per) + "];\n";
    s += in + "int64_t " + N + "_d" + str(q) + ";\n";
    std::string body = in3 + coords(q, "0", "0");
    body += in3 + inside(q) + " = " + (by_lane[q] ? lane_ok : row_ok) +
            (k_first[q] ? std::string() : " && " + last_in(q)) + ";\n";
    body += split_k(N + "_f", in3) + renderer.bind_iterators(p.update->args, in3);
    body += in3 + ptr(q) + " = &" + at + ";\n";
    s += share(q, in, body);
    // The stride: the address one reduction iteration on, less the first.
    s += in + "{\n" + in2 + "const int64_t " + ri + " = " + N + "_r0, " + li + " = " + N + "_l0;\n";
    for (int one = 0; one < 2; ++one)
      s += in2 + "const " + T + "* " + N + "_a" + str(one) + ";\n" + in2 + "{\n" + in3 +
           "const int64_t " + N + "_f = " + str(one) + ";\n" + split_k(N + "_f", in3) +
           renderer.bind_iterators(p.update->args, in3) + in3 + N + "_a" + str(one) + " = &" + at +
           ";\n" + in2 + "}\n";
    s += in2 + N + "_d" + str(q) + " = " + N + "_a1 - " + N + "_a0;\n" + in + "}\n";
  }
  return s;
}

// The guarded path of a chunk that no cp.async copied (`N_done` false: at the edges, or not
// aligned): element by element, zeros outside the domain, stored. The loop stays rolled.
std::string CudaRenderer::BlockTile::copy_elements(size_t q, const std::string& base,
                                                   const std::string& stage,
                                                   const std::string& p3) const {
  const std::string p4 = p3 + "  ", p5 = p4 + "  ", ie = N + "_i";
  std::string t = p3 + "if (!" + N + "_done)\n" + p3 + "#pragma unroll 1\n" + p3 + "for (int " +
                  ie + " = 0; " + ie + " < " + str(chunk[q]) + "; ++" + ie + ") {\n";
  t += p4 + coords(q, base, ie);
  t += p4 + renderer.storage_type(dtype_of(q)) + " " + N + "_v = 0;\n";
  t += p4 + "if (" + in_domain(q) + ") {\n";
  t += split_k(N + "_f", p5) + renderer.bind_iterators(p.update->args, p5);
  t += p5 + N + "_v = " + renderer.render_index(c, loads[q]->buffer, loads[q]->index) + ";\n" + p4 +
       "}\n";
  t += p4 + shared_at(q, stage, ie) + " = " + N + "_v;\n" + p3 + "}\n";
  return t;
}

// fill_async of a lean tile: the same per chunk from the operand's one address; each chunk's shared
// address is the stage's plus its swizzled offset. Only the path of a tile and block wholly inside
// the operand is unrolled; the edge path's loop over a thread's chunks stays rolled too (unrolled,
// it was a third of hgemm's NVRTC time for code that runs on edge tiles only).
std::string CudaRenderer::BlockTile::fill_lean(const std::string& base, const std::string& stage,
                                               const std::string& pad2) const {
  std::string t;
  const std::string p2 = pad2 + "  ", p3 = p2 + "  ", p4 = p3 + "  ", p5 = p4 + "  ";
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t extent = by_lane[q] ? L : R, V = chunk[q];
    const int64_t per = extent * D / V / kCudaBlockThreads;
    const DType dt = dtype_of(q);
    const std::string T = renderer.storage_type(dt), Q = str(q);
    t += pad2 + "{\n" + p2 + "const " + T + "* " + N + "_ab = " + N + "_g" + Q + " + " + base +
         " * " + N + "_d" + Q + ";\n";
    t +=
        p2 + "const uint32_t " + N + "_sb = kiln_smem_addr(" + N + "_s" + Q + "[" + stage + "]);\n";
    // Inside the domain: one cp.async a chunk, no checks.
    auto at_p = [&](const std::string& indent) { return chunk_at(q, indent); };
    const std::string dst =
        N + "_sb + " + str(n.staged[q].element_bytes) + " * (" + swizzled_at(q, x, kk) + ")";
    t += p2 + "if (" + N + "_full" + Q + " && " + base + " + " + str(D) + " <= " + N + "_K) {\n";
    t += p3 + "#pragma unroll\n" + p3 + "for (int " + N + "_p = 0; " + N + "_p < " + str(per) +
         "; ++" + N + "_p) {\n" + at_p(p4);
    t += p4 + "kiln_cp_async16_to(" + dst + ", " + N + "_ab + " + N + "_p * " + N + "_dp" + Q +
         ");\n";
    t += p3 + "}\n";
    // An edge tile whose chunks each lie wholly in or wholly out (lean_addresses), in a block
    // whose reduction indices do too: the same copies, predicated, zeros filling the chunks
    // outside. Along k a chunk (k_first) is wholly in or out when the block is whole or the
    // reduction a whole number of chunks.
    std::string k_whole = k_first[q] ? " && (" + base + " + " + str(D) + " <= " + N + "_K || " + N +
                                           "_K % " + str(V) + " == 0)"
                                     : "";
    t += p2 + "} else if (" + N + "_pr" + Q + k_whole + ") {\n";
    t += p3 + "#pragma unroll\n" + p3 + "for (int " + N + "_p = 0; " + N + "_p < " + str(per) +
         "; ++" + N + "_p) {\n" + at_p(p4);
    t += p4 + "const bool " + N + "_in = (" + N + "_m" + Q + " >> " + N + "_p & 1) && " + base +
         " + " + kk + " < " + N + "_K;\n";
    t += p4 + "kiln_cp_async16_zfill(" + dst + ", " + N + "_in ? " + N + "_ab + " + N + "_p * " +
         N + "_dp" + Q + " : " + N + "_gs" + Q + ", " + N + "_in ? 16u : 0u);\n";
    t += p3 + "}\n" + p2 + "} else\n";
    t += p2 + "#pragma unroll 1\n" + p2 + "for (int " + N + "_p = 0; " + N + "_p < " + str(per) +
         "; ++" + N + "_p) {\n";
    t += at_p(p3);
    t +=
        p3 + "const " + T + "* " + N + "_a = " + N + "_ab + " + N + "_p * " + N + "_dp" + Q + ";\n";
    t += p3 + "bool " + N + "_done = false;\n" + p3 + "{\n" + p4 + coords(q, base, "0");
    t += p4 + "if (" + in_domain(q) + " && " + last_in(q) + " && ((uint64_t)" + N +
         "_a & 15) == 0) {\n";
    t += p5 + "kiln_cp_async16_to(" + N + "_sb + " + str(n.staged[q].element_bytes) + " * (" +
         swizzled_at(q, x, kk) + "), " + N + "_a);\n";
    t += p5 + N + "_done = true;\n" + p4 + "}\n" + p3 + "}\n";
    t += copy_elements(q, base, stage, p3);
    t += p2 + "}\n" + pad2 + "}\n";
  }
  return t;
}

// Copies block `base`'s operands into stage `stage` asynchronously: each 16-byte chunk wholly
// inside the domain at an aligned address is one cp.async; the others (at the edges) are loaded
// element by element, zeros outside the domain, and stored. The edge loops and the first blocks'
// copies stay rolled: unrolled, they were most of the module's code, which NVRTC compiles at every
// first use (docs/performance.md).
std::string CudaRenderer::BlockTile::fill_async(const std::string& base, const std::string& stage,
                                                const std::string& pad2) const {
  if (lean) return fill_lean(base, stage, pad2);
  std::string t;
  const std::string p3 = pad2 + "    ", p4 = p3 + "  ", p5 = p4 + "  ";
  for (size_t q = 0; q < loads.size(); ++q) {
    const int64_t V = chunk[q];
    const DType dt = dtype_of(q);
    std::string body = p3 + "bool " + N + "_done = false;\n" + p3 + "{\n";
    body += p4 + coords(q, base, "0");
    if (strided) {
      body += p4 + "const " + renderer.storage_type(dt) + "* " + N + "_a = " + ptr(q) + " + " +
              base + " * " + N + "_d" + str(q) + ";\n";
      body += p4 + "if (" + inside(q) + " && " + N + "_f + " + str(k_first[q] ? V - 1 : 0) + " < " +
              N + "_K && ((uint64_t)" + N + "_a & 15) == 0)\n";
    } else {
      body += p4 + "if (" + in_domain(q) + " && " + last_in(q) + ") {\n";
      body += split_k(N + "_f", p5) + renderer.bind_iterators(p.update->args, p5);
      body += p5 + "const " + renderer.storage_type(dt) + "* " + N + "_a = &" +
              renderer.render_index(c, loads[q]->buffer, loads[q]->index) + ";\n";
      body += p5 + "if (((uint64_t)" + N + "_a & 15) == 0)\n";
    }
    body +=
        p5 + "{\n" + p5 + "  kiln_cp_async16(&" + shared_at(q, stage, "0") + ", " + N + "_a);\n";
    body += p5 + "  " + N + "_done = true;\n" + p5 + "}\n";
    if (!strided) body += p4 + "}\n";
    body += p3 + "}\n";
    body += copy_elements(q, base, stage, p3);
    t += share(q, pad2, body);
  }
  return t;
}

std::string CudaRenderer::BlockTile::registers_to_shared() const {
  std::string s;
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
  return s;
}

}  // namespace kiln
