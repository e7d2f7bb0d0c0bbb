// The end of the online-softmax tile (cuda_attention.cpp): after the key blocks, the row sums,
// the row factors and each output element with the composite's epilogue on it.
#include <map>
#include <string>
#include <vector>

#include "backends/cuda_attention_mma.h"
#include "backends/cuda_renderer.h"
#include "scheduler/online_softmax.h"

namespace kiln {

std::string CudaRenderer::softmax_tile_end(
    const Context& c, const LoopNode& n, const SoftmaxContraction& f,
    const std::vector<LoopNode>& nodes, const std::map<const ScalarExpr*, std::string>& invariants,
    int depth) const {
  const std::string N = n.name, pad(2 * depth, ' '), in = pad + "  ", in2 = in + "  ";
  auto v = [&](const std::string& x) { return N + "_" + x; };
  const std::string q = v("q"), w = v("w"), t_ = v("t"), e = v("e"), h = v("h");
  const int64_t kOTiles = n.tile_lanes / 8;
  const std::string row_ok = ast_expr_to_c(*n.tile_row_cond),
                    lane_ok = ast_expr_to_c(*n.tile_lane_cond);
  const std::string row_of = softmax_tile::element_row(N), col_of = softmax_tile::element_col(N);
  const Statement& mx = c.kernel.statements[f.statement(3)];
  const Statement& sum = c.kernel.statements[f.statement(5)];
  const Statement& out = c.kernel.statements[f.statement(7)];
  const LoopNode& out_node = nodes[7];
  auto reset = [&] {
    c.bound = invariants;
    c.index_bound.clear();
  };
  auto element = [&](const std::string& body, const std::string& pad2, int64_t tiles) {
    return softmax_tile::each_element(N, body, pad2, tiles);
  };
  std::vector<const ScalarExpr*> loads;
  std::string s;
  // The sums over the 4 threads of a row, the row factors (1 / l) once per row, then each
  // element: o · F, and the epilogue, which reads it (and the row's sum and maximum) from
  // registers; o reaches memory only where there is no epilogue to read it.
  s += in + "#pragma unroll\n" + in + "for (int " + h + " = 0; " + h + " < 2; ++" + h + ") {\n";
  s +=
      in2 + v("l") + "[" + h + "] += __shfl_xor_sync(0xffffffffu, " + v("l") + "[" + h + "], 1);\n";
  s += in2 + v("l") + "[" + h + "] += __shfl_xor_sync(0xffffffffu, " + v("l") + "[" + h +
       "], 2);\n" + in + "}\n";
  s += in + "float " + v("F") + "[2] = {1.f, 1.f};\n";
  if (!f.row_factors.empty()) {
    reset();
    std::string factors;
    for (const ScalarExpr* rf : f.row_factors) {
      loads.clear();
      collect_loads(*rf, loads);
      for (const ScalarExpr* l : loads) {
        if (l->buffer == sum.buffer) c.bound[l] = v("l") + "[" + h + "]";
        if (l->buffer == mx.buffer) c.bound[l] = v("m") + "[" + h + "]";
      }
      factors += (factors.empty() ? "" : " * ") + ("(float)(" + render_value(c, *rf) + ")");
    }
    s += in + "#pragma unroll\n" + in + "for (int " + h + " = 0; " + h + " < 2; ++" + h + ")\n";
    s += in + "  if (" + v("rok") + "[" + h + "]) {\n" + in + "    const int64_t c1 = " + v("r0") +
         " + " + w + " * 16 + " + q + " / 4 + " + h + " * 8, c2 = " + v("l0") + ", c3 = 0;\n" + in +
         "    (void)c2;\n" + in + "    (void)c3;\n" + bind_iterators(out_node.args, in + "    ") +
         in + "    " + v("F") + "[" + h + "] = " + factors + ";\n" + in + "  }\n";
  }
  const DType out_type = c.plan.buffers[out.buffer].dtype;
  const bool epilogue = n.body.size() > 8;
  std::string body =
      in + "  const int64_t c1 = " + row_of + ", c2 = " + v("l0") + " + " + col_of + ", c3 = 0;\n";
  body += in + "  (void)c3;\n" + in + "  if (" + row_ok + " && " + lane_ok + ") {\n";
  const std::string y = "(" + compute_type(out_type) + ")(" + v("o") + "[" + t_ + "][" + e +
                        "] * " + v("F") + "[" + e + " / 2])";
  if (epilogue) {
    body += in + "    const " + compute_type(out_type) + " " + v("y") + " = " + y + ";\n";
  } else {
    reset();
    body += in + "    {\n" + bind_iterators(out_node.args, in + "      ");
    body += in + "      " + render_index(c, out.buffer, out.index) + " = " +
            to_storage(out_type, y) + ";\n" + in + "    }\n";
  }
  c.bound.clear();
  c.index_bound.clear();
  for (size_t k = 8; k < n.body.size(); ++k) {
    const Statement& st = c.kernel.statements[nodes[k].statement];
    collect_loads(*st.value, loads = {});
    for (const ScalarExpr* l : loads) {
      if (l->buffer == sum.buffer) c.preloaded[l] = v("l") + "[" + e + " / 2]";
      if (l->buffer == mx.buffer) c.preloaded[l] = v("m") + "[" + e + " / 2]";
      if (l->buffer == out.buffer) c.preloaded[l] = v("y");
    }
  }
  for (size_t k = 8; k < n.body.size(); ++k)
    body += render_node(c, nodes[k], depth + 3);
  c.preloaded.clear();
  s += element(body + in + "  }\n", in, kOTiles);
  return s;
}

}  // namespace kiln
