// The TMA copies of an online-softmax tile's keys and values: the boxes a key block takes
// (backends/cuda_attention_tma.h), and the tile's runtime test of whether they apply
// (CudaRenderer::softmax_tma_setup).
#include "backends/cuda_attention_tma.h"

#include <stdexcept>

#include "backends/cuda_attention_mma.h"
#include "backends/cuda_renderer.h"

namespace kiln {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

}  // namespace

namespace softmax_tile {

std::string tma_issue(const LoopNode& n, const TmaStages& t, const std::string& j,
                      const std::string& stage, const std::string& in) {
  if (n.staged.size() != 2) throw std::logic_error("tma_issue: a tile without k's and v's boxes");
  const std::string N = t.name, p2 = in + "  ";
  constexpr int64_t kBox = 64 * 64 * 2;  // 64 keys by 64 16-bit elements
  std::string s = in + "{\n";
  s += p2 + "const uint32_t " + N + "_fb = " + N + "_fbar + 8u * (uint32_t)(" + stage + ");\n";
  s += p2 + "const int " + N +
       "_kb = " + head_choice(head_above(N, n.head_min, n.head_max, 64), "2", "1") +
       ";  // k's boxes: panels of the head\n";
  s += p2 + "kiln_mbar_expect(" + N + "_fb, (uint32_t)(" + N + "_kb * " + str(kBox) + " + " +
       str(t.lanes / 64 * kBox) + "));\n";
  const char* const coords[2] = {"_kc", "_vc"};
  const char* const dest[2] = {"_ak", "_av"};  // the stages' shared addresses
  const int64_t stage_bytes[2] = {t.k_stage_bytes, t.v_stage_bytes};
  for (int q = 0; q < 2; ++q) {
    const StagedOperand& o = n.staged[q];
    // The map's dimensions, innermost first: the load's past the folded ones.
    const auto rank = static_cast<int64_t>(o.tma_box.size());
    const int64_t kpos = rank + o.tma_fold - 1 - o.tma_k_dim;
    const int64_t boxes = q == 0 ? 2 : t.lanes / 64;
    for (int64_t b = 0; b < boxes; ++b) {
      std::string args;
      for (int64_t i = 0; i < rank; ++i) {
        std::string c = N + coords[q] + "[" + str(i) + "]";
        if (i == kpos) c += " + (int)(" + j + ")";
        if (i == 0 && b > 0) c += " + " + str(64 * b);
        args += ", " + c;
      }
      s += p2 + (q == 0 && b > 0 ? "if (" + N + "_kb > 1) " : std::string()) + "kiln_tma_load(" +
           N + dest[q] + " + (uint32_t)(" + stage + ") * " + str(stage_bytes[q]) + "u + " +
           str(b * kBox) + "u, &kiln_p->tm[" + str(t.first_map + q) + "], " + N + "_fb" + args +
           ");\n";
    }
  }
  return s + in + "}\n";
}

}  // namespace softmax_tile

std::string CudaRenderer::softmax_tma_setup(const Context& c, const LoopNode& n,
                                            const LoopNode& score_node, const LoopNode& out_node,
                                            const ScalarExpr& k, const ScalarExpr& v, int first_map,
                                            const std::string& in) const {
  const std::string N = n.name, in2 = in + "  ";
  std::string s = in + "/* " + N +
                  ": keys and values by the TMA where this launch encoded their maps, the head "
                  "is one or two boxes (up to 128) and each map's extents are the tile's */\n";
  std::string cond = "(kiln_p->tm_ok >> " + str(first_map) + " & 1) && (kiln_p->tm_ok >> " +
                     str(first_map + 1) + " & 1)";
  if (softmax_tile::head_above(N, n.head_min, n.head_max, 128) != "0")
    cond += " && " + N + "_D <= 128";
  const ScalarExpr* loads[2] = {&k, &v};
  const LoopNode* nodes[2] = {&score_node, &out_node};
  const char* const names[2] = {"_kc", "_vc"};
  for (int q = 0; q < 2; ++q) {
    const StagedOperand& o = n.staged.at(q);
    // The map's dimensions, innermost first: the load's past the folded ones.
    const auto rank = static_cast<int64_t>(o.tma_box.size()),
               full_rank = static_cast<int64_t>(loads[q]->index.size());
    const std::string C = N + names[q];
    // The box's coordinates at key 0, thread 0's alone (in shared memory: no other thread
    // keeps registers for them through the key loop): k at head element 0, v at the tile's
    // first lane; the rows' iterator moves neither.
    s += in + "__shared__ int " + C + "[" + str(rank) + "];\n";
    s += in + "if (threadIdx.x == 0) {\n" + in2 + "const int64_t c1 = 0, c2 = " + N +
         "_l0, c3 = 0, c4 = 0;\n" + in2 + "(void)c1;\n" + in2 + "(void)c2;\n" + in2 +
         "(void)c3;\n" + in2 + "(void)c4;\n" + bind_iterators(nodes[q]->args, in2);
    for (int64_t i = 0; i < rank; ++i)
      s += in2 + C + "[" + str(i) + "] = (int)(" +
           int_expr_to_c(loads[q]->index.at(full_rank - 1 - i), c.sizes) + ");\n";
    s += in + "}\n";
    // The keys' extent and (k) the head's are the map's: past them the TMA fills zeros, which
    // the tile's guards and q's zeros past the head make weightless.
    const std::vector<IntExpr>& shape = c.plan.buffers.at(o.tma_buffer).shape;
    cond += " &&\n" + in2 + N + "_J == (int64_t)(" + int_expr_to_c(shape.at(o.tma_k_dim), c.sizes) +
            ")";
    if (q == 0)
      cond += " && " + N + "_D == (int64_t)(" + int_expr_to_c(shape.at(o.tma_x_dim), c.sizes) + ")";
  }
  // The same for every thread; taken from lane 0 so that ptxas sees it uniform across the warp
  // (else a tile that skips key blocks has its warpgroup instructions serialised).
  return s + in + "const bool " + N + "_tma = __shfl_sync(0xffffffffu, (int)(" + cond +
         "), 0) != 0;\n";
}

}  // namespace kiln
