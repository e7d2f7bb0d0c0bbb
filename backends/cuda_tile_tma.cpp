// The pipeline of a warpgroup tile whose stages the TMA fills (StagedOperand::tma_box; docs/
// decisions.md, "Warpgroup GEMM stages copied by the TMA"): thread 0 issues each block's boxes
// from the launch's tensor maps, each stage has a "full" and an "empty" mbarrier, and no block
// barrier runs in the loop over blocks. Where a launch's maps were not encoded, or an operand's
// reduction covers only part of its dimension, the tile runs the cp.async pipeline instead
// (backends/cuda_tile.cpp picks one per tile).
#include <algorithm>
#include <stdexcept>

#include "backends/cuda_tile.h"

namespace kiln {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string CudaRenderer::BlockTile::tma_condition() const {
  std::string s = in + "/* " + N +
                  ": the TMA fills the stages where this launch's maps were encoded " +
                  "and each operand's reduction spans its dimension */\n";
  std::string cond;
  for (size_t q = 0; q < loads.size(); ++q) {
    const StagedOperand& o = n.staged[q];
    // Coordinates innermost first, of the index dimensions past the folded ones.
    const auto dims = static_cast<int64_t>(o.tma_box.size());
    const auto rank = static_cast<int64_t>(loads[q]->index.size());
    const std::string C = N + "_c" + str(q);
    s += in + "int " + C + "[" + str(dims) + "];  // the box's coordinates at the tile's origin\n";
    s += in + "{\n" + in2 + "const int64_t " + ri + " = " + N + "_r0, " + li + " = " + N + "_l0, " +
         N + "_f = 0;\n" + split_k(N + "_f", in2) + renderer.bind_iterators(p.update->args, in2);
    for (int64_t i = 0; i < dims; ++i)
      s += in2 + C + "[" + str(i) + "] = (int)(" +
           int_expr_to_c(loads[q]->index.at(rank - 1 - i), c.sizes) + ");\n";
    s += in + "}\n";
    const int64_t kpos = rank - 1 - o.tma_k_dim;
    const IntExpr& extent = c.plan.buffers.at(o.tma_buffer).shape.at(o.tma_k_dim);
    cond += std::string(cond.empty() ? "" : " &&\n" + in2) + "(kiln_p->tm_ok >> " +
            str(first_map + static_cast<int>(q)) + " & 1) && " + C + "[" + str(kpos) +
            "] == 0 && " + N + "_K == (int64_t)(" + int_expr_to_c(extent, c.sizes) + ")";
  }
  return s + in + "const bool " + N + "_tma = " + cond + ";\n";
}

std::string CudaRenderer::BlockTile::tma_issue(const std::string& b,
                                               const std::string& indent) const {
  const std::string p2 = indent + "  ";
  int64_t bytes = 0;
  for (size_t q = 0; q < loads.size(); ++q)
    bytes += (by_lane[q] ? L : R) * D * n.staged[q].element_bytes;
  std::string s = indent + "{\n";
  s += p2 + "const int " + N + "_ws = (int)((" + b + ") % " + str(S) + ");\n";
  s += p2 + "const int64_t " + N + "_u = (" + b + ") / " + str(S) + ";\n";
  s += p2 + "const uint32_t " + N + "_fb = kiln_smem_addr(&" + N + "_full[" + N + "_ws]);\n";
  s += p2 + "if (" + N + "_u > 0) kiln_mbar_wait(kiln_smem_addr(&" + N + "_empty[" + N +
       "_ws]), (uint32_t)((" + N + "_u - 1) & 1));\n";
  s += p2 + "kiln_mbar_expect(" + N + "_fb, " + str(bytes) + "u);\n";
  s += p2 + "const int " + N + "_kc = (int)((" + b + ") * " + str(D) + ");\n";
  for (size_t q = 0; q < loads.size(); ++q) {
    const StagedOperand& o = n.staged[q];
    const auto dims = static_cast<int64_t>(o.tma_box.size());
    const auto rank = static_cast<int64_t>(loads[q]->index.size());
    const int64_t kpos = rank - 1 - o.tma_k_dim, xpos = rank - 1 - o.tma_x_dim;
    const int64_t extent = by_lane[q] ? L : R;
    // K-major ([rows or lanes][k]): one box of the whole tile; MN-major: boxes of 64 rows or
    // lanes, each D rows of k, one after another.
    const int64_t boxes = k_major[q] ? extent / 64 : 1;
    const std::string map = "&kiln_p->tm[" + str(first_map + static_cast<int>(q)) + "]";
    for (int64_t a = 0; a < boxes; ++a) {
      std::string args;
      for (int64_t i = 0; i < dims; ++i) {
        std::string coord = N + "_c" + str(q) + "[" + str(i) + "]";
        if (i == kpos) coord += " + " + N + "_kc";
        if (i == xpos && a > 0) coord += " + " + str(64 * a);
        args += ", " + coord;
      }
      s += p2 + "kiln_tma_load(kiln_smem_addr(" + N + "_s" + str(q) + "[" + N + "_ws]) + " +
           str(a * 64 * D * o.element_bytes) + "u, " + map + ", " + N + "_fb" + args + ");\n";
    }
  }
  return s + indent + "}\n";
}

std::string CudaRenderer::BlockTile::tma_pipeline() const {
  if (S < 3 || n.mma_in_flight != 1)
    throw std::logic_error("a TMA pipeline needs three stages and one block in flight");
  // Blocks copied ahead: S - 2, the stage of block b - 2, released at block b - 1, so thread 0
  // rarely waits; with three stages two (the stage of block b - 1, which every warp releases at
  // block b before thread 0 refills it: one block ahead starves the tensor cores).
  const int64_t A = std::max<int64_t>(S - 2, 2);
  const int64_t warps = kCudaBlockThreads / 32;
  const std::string b = N + "_b", nb = N + "_nb", in3 = in2 + "  ";
  std::string s;
  s += in2 + "__shared__ __align__(8) uint64_t " + N + "_full[" + str(S) + "], " + N + "_empty[" +
       str(S) + "];\n";
  s += in2 + "__syncthreads();  // every warp past the last tile's stages and barriers\n";
  s += in2 + "if (threadIdx.x == 0) {\n";
  s += in3 + "for (int " + N + "_i = 0; " + N + "_i < " + str(S) + "; ++" + N + "_i) {\n";
  s += in3 + "  kiln_mbar_init(kiln_smem_addr(&" + N + "_full[" + N + "_i]), 1);\n";
  s += in3 + "  kiln_mbar_init(kiln_smem_addr(&" + N + "_empty[" + N + "_i]), " + str(warps) +
       ");\n";
  s += in3 + "}\n" + in3 + "kiln_mbar_fence_init();\n" + in2 + "}\n";
  s += in2 + "__syncthreads();\n";
  s += in2 + "const int64_t " + nb + " = (" + N + "_K + " + str(D - 1) + ") / " + str(D) + ";\n";
  s += in2 + "if (threadIdx.x == 0)\n";
  s += in2 + "  for (int64_t " + b + " = 0; " + b + " < " + str(A) + " && " + b + " < " + nb +
       "; ++" + b + ")\n";
  s += tma_issue(b, in2 + "  ");
  s += in2 + "for (int64_t " + b + " = 0; " + b + " < " + nb + "; ++" + b + ") {\n";
  s += in3 + "const int " + N + "_st = (int)(" + b + " % " + str(S) + ");\n";
  s += in3 + "kiln_mbar_wait(kiln_smem_addr(&" + N + "_full[" + N + "_st]), (uint32_t)((" + b +
       " / " + str(S) + ") & 1));\n";
  s += render_warpgroup_steps(n, by_lane, k_major, N + "_st", in3);
  // Block b - 1's instructions are done (all but one group waited for): its stage is released.
  s += in3 + "if (" + b + " > 0 && threadIdx.x % 32 == 0)\n";
  s += in3 + "  kiln_mbar_arrive(kiln_smem_addr(&" + N + "_empty[(" + b + " - 1) % " + str(S) +
       "]));\n";
  s += in3 + "if (threadIdx.x == 0 && " + b + " + " + str(A) + " < " + nb + ")\n";
  s += tma_issue(b + " + " + str(A), in3);
  s += in2 + "}\n";
  s += in2 + "kiln_wgmma_wait<0>();\n" + in2 + "#pragma unroll\n" + in2 + "for (int " + m +
       " = 0; " + m + " < " + str(r) + "; ++" + m + ")\n" + in2 + "#pragma unroll\n" + in2 +
       "for (int " + j + " = 0; " + j + " < " + str(l) + "; ++" + j + ")\n" + in2 +
       "  kiln_fence_operand(" + acc + ");\n";
  s += in2 + "__syncthreads();  // every warp past the stages before the epilogue reuses them\n";
  return s;
}

}  // namespace kiln
