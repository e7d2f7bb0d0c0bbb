// The CUDA rendering of a softmax-weighted contraction's tile (scheduler/online_softmax.h):
// attention in one kernel. Each block computes 128 rows × 64 or 128 lanes of the output (the
// tile shape's lanes: 128 where the head is known to be 65-128, so that a row tile's scores are
// computed once for the whole head); each of its 8 warps 16 rows. Per block of 64 keys the warp
// computes its 16 × 64 scores on tensor cores (mma.sync m16n8k16, f32 accumulators) from the rows'
// and keys' operands staged in shared memory (ldmatrix from per-thread base addresses plus
// constants), applies the score expression in registers, updates each row's running maximum,
// rescales its running sum and output, and adds the block's weights times the values (the weights
// go from the scores' accumulator fragments into the next product's operand fragments without
// leaving registers). The scores never reach memory. Keys and values are double-buffered in dynamic
// shared memory: the next block's copies (cp.async) run during this block's products and softmax,
// one barrier a block. The score expression runs unguarded on blocks wholly inside the rows, keys,
// domain and a where's bounded condition (a causal mask's lower triangle: the where's value alone),
// guarded elsewhere; key blocks the score's mask removes for the whole tile are skipped. A weight
// W = exp2(C (X - M)) is one FFMA and one ex2.approx.ftz.
// Where the schedule chose warpgroup products (LoopNode::mma a wgmma entry: an sm_90a target),
// each warpgroup (4 warps, 64 rows) computes its 64 x 64 scores as m64n64k16 steps from q and k
// in swizzled shared memory and adds the weights times the values as m64nLk16 steps, the weights
// from registers: the accumulators of a wgmma lie as the mma.sync tiles of its four warps, so
// the softmax between the products is the same code.
// The products themselves, both forms, are printed by backends/cuda_attention_mma.h.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include "backends/cuda_attention_blocks.h"
#include "backends/cuda_attention_mma.h"
#include "backends/cuda_attention_tma.h"
#include "backends/cuda_renderer.h"
#include "ir/mma.h"
#include "scheduler/online_softmax.h"

namespace kiln {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

/** Whether load `l` reads memory contiguously along statement iterator `it`: only its last index
 *  dimension uses it, with coefficient 1. */
bool contiguous_along(const ScalarExpr& l, const std::string& it) {
  if (l.index.empty() || !l.mask.empty()) return false;
  for (size_t d = 0; d + 1 < l.index.size(); ++d)
    if (affine_coefficient(l.index[d], it) != std::optional<int64_t>(0)) return false;
  return affine_coefficient(l.index.back(), it) == std::optional<int64_t>(1);
}

/** C in W = exp2(C · (X - M)) (scheduler/online_softmax.cpp's exponential_of_difference): the
 *  constant factor, or null where there is none (C = 1). */
const ScalarExpr* weight_scale(const ScalarExpr& w) {
  const ScalarExpr* d = w.args.at(0).get();
  if (d->kind != ScalarExpr::Kind::op || d->op != Op::mul) return nullptr;
  return varies(*d->args[0]) ? d->args[1].get() : d->args[0].get();
}

// The block tile (backends/cuda_attention_mma.h) and its tensor-core products.
using softmax_tile::kHead;
using softmax_tile::kKeys;
using softmax_tile::kPad;
using softmax_tile::kRows;
using softmax_tile::may_be_finite;
using softmax_tile::score_products;
using softmax_tile::sure_inside;
using softmax_tile::TileProducts;
using softmax_tile::value_products;

// Bytes of shared memory: q [128][136], k [2][64][136], v [2][64][lanes + 8] (two stages each
// of k and v), 16-bit elements: 86 KiB with 64 lanes (two blocks an SM), 102 KiB with 128.
constexpr int64_t kQBytes = kRows * (kHead + kPad) * 2, kKStage = kKeys * (kHead + kPad) * 2;
int64_t v_stage_bytes(int64_t lanes) {
  return kKeys * (lanes + kPad) * 2;
}
// With warpgroup products (LoopNode::mma a wgmma entry): q, k and v in the layout wgmma reads
// through matrix descriptors, 128-byte rows (64 elements) swizzled (chunk c of row r at c xor
// r % 8), in panels of 64 elements of the head (q, k) or of the lanes (v): q [2][128][64], a
// stage of k [2][64][64], of v [lanes / 64][64][64]. 80 KiB with 64 lanes, 96 KiB with 128:
// two blocks an SM either way.
constexpr int64_t kWgQBytes = kRows * kHead * 2, kWgKStage = kKeys * kHead * 2;
int64_t wg_v_stage_bytes(int64_t lanes) {
  return kKeys * lanes * 2;
}

}  // namespace

int64_t softmax_tile_shared_bytes(int64_t lanes, bool warpgroup, int64_t stages) {
  stages = std::max<int64_t>(stages, 2);
  if (warpgroup) return kWgQBytes + stages * (kWgKStage + wg_v_stage_bytes(lanes));
  return kQBytes + stages * (kKStage + v_stage_bytes(lanes));
}

std::string CudaRenderer::render_softmax_tile(const Context& c, const LoopNode& n,
                                              int depth) const {
  std::optional<SoftmaxContraction> f = find_softmax_contraction(c.plan, c.kernel, 0);
  if (!f || n.body.size() < 8 || n.tile_rows != kRows ||
      (n.tile_lanes != 64 && n.tile_lanes != 128) || n.key_block != kKeys || n.pack_depth != kHead)
    throw std::logic_error(
        "an online-softmax tile that is not 128x64 or 128x128 over a matched kernel");
  // Lanes of the output per block: each warp keeps 16 rows x kLanes of o in registers (kLanes / 8
  // accumulator tiles of 16 x 8, 4 floats a thread each), so the scores of a row tile are
  // computed once per kLanes lanes of the head.
  const int64_t kLanes = n.tile_lanes, kOTiles = kLanes / 8;
  // Both products as warpgroup instructions (wgmma, sm_90a) where the schedule chose them: each
  // warpgroup's 64 rows in one m64nNk16 per step, read from swizzled shared memory; else each
  // warp's 16 rows through ldmatrix and mma.sync.
  const bool wg = n.mma && n.mma->warpgroup;
  const int64_t kVStage = wg ? wg_v_stage_bytes(kLanes) : v_stage_bytes(kLanes),
                kKSt = wg ? kWgKStage : kKStage;
  // Stages of k and v: the cp.async copies use the first two, the TMA's all (LoopNode::stages).
  const int64_t S = std::max<int64_t>(n.stages, 2);
  const int rank = f->n;
  const Statement& score = c.kernel.statements[f->statement(1)];
  const Statement& mx = c.kernel.statements[f->statement(3)];
  const Statement& sum = c.kernel.statements[f->statement(5)];
  const Statement& out = c.kernel.statements[f->statement(7)];
  // The statement nodes with their batch iterators bound to locals computed once per tile (the
  // block loop's divisions would otherwise run in every copy and element).
  std::vector<LoopNode> nodes;
  for (const LoopNodePtr& b : n.body) {
    nodes.push_back(*b);
    // The output's statements (from the seventh) walk the batch iterators in their own order.
    const bool output = nodes.size() > 6;
    for (size_t p = 0; p < nodes.back().args.size(); ++p) {
      const int k = output ? f->out_axes.at(p) : static_cast<int>(p);
      if (k < rank - 2) nodes.back().args[p] = ast_iter(n.name + "_b" + std::to_string(k));
    }
  }
  const LoopNode &score_node = nodes[1], &max_node = nodes[3], &out_node = nodes[7];
  const DType half = c.plan.buffers[f->a->buffer].dtype;
  const std::string T = storage_type(half), kind = half == DType::bf16 ? "bf16" : "f16";
  const std::string pad(2 * depth, ' '), in = pad + "  ", in2 = in + "  ", in3 = in2 + "  ",
                                         in4 = in3 + "  ", N = n.name;
  auto v = [&](const std::string& s) { return N + "_" + s; };
  const std::string row_ok = ast_expr_to_c(*n.tile_row_cond),
                    lane_ok = ast_expr_to_c(*n.tile_lane_cond);
  const std::string keys = int_expr_to_c(mx.extents[rank - 1], c.sizes),
                    head = int_expr_to_c(score.extents[rank], c.sizes),
                    lanes = int_expr_to_c(out.extents[rank - 1], c.sizes),
                    row_count = int_expr_to_c(mx.extents[rank - 2], c.sizes);
  const std::string KH = str(kHead + kPad), VL = str(kLanes + kPad);

  std::string s = pad + "{\n" + in + "/* " + N + ": 128 rows x " + str(kLanes) + " lanes of " +
                  out.name +
                  ", keys in blocks of 64 with an online softmax, both products on tensor cores "
                  "(scheduler/online_softmax.h) */\n";
  // Shared memory (dynamic: the kernel's <symbol>_shared_bytes; declared as the block tiles of
  // backends/cuda_tile.cpp declare it, which a module may also hold): the rows' operand, and two
  // stages of the keys' operand and of the values, which the next key block's copies fill while
  // this one's products read the other.
  s += in + "extern __shared__ __align__(1024) unsigned char kiln_shared[];\n";
  if (wg) {
    s += in + T + "* " + v("sq") + " = (" + T + "*)kiln_shared;\n";
    s += in + T + "* " + v("sk") + " = (" + T + "*)(kiln_shared + " + str(kWgQBytes) + ");\n";
    s += in + T + "* " + v("sv") + " = (" + T + "*)(kiln_shared + " +
         str(kWgQBytes + S * kWgKStage) + ");\n";
  } else {
    s += in + T + " (*" + v("sq") + ")[" + KH + "] = (" + T + " (*)[" + KH + "])kiln_shared;\n";
    s += in + T + " (*" + v("sk") + ")[" + str(kKeys) + "][" + KH + "] = (" + T + " (*)[" +
         str(kKeys) + "][" + KH + "])(kiln_shared + " + str(kQBytes) + ");\n";
    s += in + T + " (*" + v("sv") + ")[" + str(kKeys) + "][" + VL + "] = (" + T + " (*)[" +
         str(kKeys) + "][" + VL + "])(kiln_shared + " + str(kQBytes + 2 * kKStage) + ");\n";
  }
  for (int k = 0; k < rank - 2; ++k)
    s += in + "const int64_t " + v("b" + str(k)) + " = " + ast_expr_to_c(*n.body[0]->args.at(k)) +
         ";\n";
  s += in + "const int " + v("q") + " = threadIdx.x % 32, " + v("w") + " = threadIdx.x / 32;\n";
  s += in + "const int64_t " + v("r0") + " = " + ast_expr_to_c(*n.tile_row_origin) + ", " +
       v("l0") + " = " + ast_expr_to_c(*n.tile_lane_origin) + ";\n";
  s += in + "const int64_t " + v("J") + " = " + keys + ", " + v("D") + " = " + head + ", " +
       v("C") + " = " + lanes + ";\n";
  // What the head decides, where the heads the kernel is launched at leave it open (else "1"
  // or "0": LoopNode::head_min, head_max).
  auto head_above = [&](int64_t x) {
    return softmax_tile::head_above(N, n.head_min, n.head_max, x);
  };
  // One chunk of the head (up to kHead) where every launch's head fits one.
  const bool one_chunk = n.head_max > 0 && n.head_max <= kHead;
  // A row of q and k in shared memory holds 8 chunks of 8 elements (a head up to 64) or 16.
  s += in + "const int " + v("sh") + " = " + softmax_tile::head_choice(head_above(64), "4", "3") +
       ";\n";
  s += in + "float " + v("o") + "[" + str(kOTiles) + "][4], " + v("m") + "[2], " + v("ms") +
       "[2], " + v("l") + "[2];\n";
  s += in + "#pragma unroll\n" + in + "for (int " + v("t") + " = 0; " + v("t") + " < " +
       str(kOTiles) + "; ++" + v("t") + ")\n" + in + "  " + v("o") + "[" + v("t") +
       "][0] = " + v("o") + "[" + v("t") + "][1] = " + v("o") + "[" + v("t") + "][2] = " + v("o") +
       "[" + v("t") + "][3] = 0.f;\n";
  s += in + "bool " + v("rok") + "[2];\n" + in + "for (int " + v("h") + " = 0; " + v("h") +
       " < 2; ++" + v("h") + ") {\n" + in + "  const int64_t c1 = " + v("r0") + " + " + v("w") +
       " * 16 + " + v("q") + " / 4 + " + v("h") + " * 8;\n" + in + "  " + v("rok") + "[" + v("h") +
       "] = " + row_ok + ";\n" + in + "}\n";
  s += in + v("m") + "[0] = " + v("m") + "[1] = -KILN_INF;\n" + in + v("ms") + "[0] = " + v("ms") +
       "[1] = 0.f;\n" + in + v("l") + "[0] = " + v("l") + "[1] = 0.f;\n";

  // The parts of the score expression, the weight and the row factors that read neither memory
  // nor iterators (a scale 1 / sqrt(D)), computed once.
  std::map<const ScalarExpr*, std::string> invariants;
  std::function<void(const ScalarExpr&)> hoist = [&](const ScalarExpr& e) {
    if (e.kind != ScalarExpr::Kind::op) return;
    if (!varies(e)) {
      if (invariants.count(&e)) return;
      std::string name = v("k" + str(static_cast<int64_t>(invariants.size())));
      c.bound = invariants;
      s += in + "const " + compute_type(e.dtype) + " " + name + " = " + render_value(c, e) + ";\n";
      invariants[&e] = name;
      return;
    }
    for (const ScalarExprPtr& a : e.args)
      hoist(*a);
  };
  hoist(*mx.value);
  hoist(*sum.value);
  for (const ScalarExpr* rf : f->row_factors)
    hoist(*rf);
  for (const ScalarExpr* kf : f->key_factors)
    hoist(*kf);
  for (const ScalarExpr* kf : f->weight_factors)
    hoist(*kf);
  auto reset = [&] {
    c.bound = invariants;
    c.index_bound.clear();
  };
  // W = exp2(C · (X - M)) as exp2(X · C - M · C): one FFMA and the hardware's ex2 per weight,
  // M · C once per row and block. C is a positive constant (the match requires it). Where X is
  // k · X' (k > 0: f->scaled_score), the scores, their maxima and the weights are X', M' and
  // exp2(X' · Ck - M' · Ck): C takes k (ks), and M = k M' once the keys are done.
  reset();
  const ScalarExpr* scale = weight_scale(*sum.value);
  const std::string wc = v("wc"), ks = v("ks");
  const bool folded = f->scaled_score != nullptr;
  if (folded) {
    std::string k;
    for (const ScalarExpr* g : f->score_scale)
      k += (k.empty() ? "" : " * ") + ("(float)(" + render_value(c, *g) + ")");
    s += in + "const float " + ks + " = " + k + ";\n";
  }
  s += in + "const float " + wc + " = " +
       (scale ? "(float)(" + render_value(c, *scale) + ")" : std::string("1.f")) +
       (folded ? " * " + ks : "") + ";\n";

  // Element y (a multiple of 8) of row x of shared array `dest` of `rows` rows: [x][y] with
  // padded rows, or in the swizzled panels of warpgroup products (chunk y % 64 / 8 of row x of
  // panel y / 64 at chunk (y % 64 / 8) xor x % 8).
  auto cell = [&](const std::string& dest, int64_t rows, const std::string& x,
                  const std::string& y) {
    if (!wg) return dest + "[" + x + "][" + y + "]";
    return dest + "[(" + y + " / 64 * " + str(rows) + " + " + x + ") * 64 + ((" + y +
           " % 64 / 8) ^ (" + x + " % 8)) * 8]";
  };
  // Fills shared array `dest` (`rows` rows of 1 << `sh` chunks of 8 elements: sh is "3", "4"
  // or N_sh, 3 or 4 by the head at run time) from operand `load` (of statement node `node`): rows
  // along iterator `x_it` from `x0` while `x_ok`, columns along `y_it` from `y0` below `y_end`;
  // `others` declares the node's remaining iterators. Chunks of 8 halves: an asynchronous 16-byte
  // copy (cp.async) where memory holds them contiguously at an aligned address, else loaded element
  // by element and stored; zeros outside the domain. The copies land by the next
  // kiln_cp_async_wait.
  auto fill = [&](const std::string& dest, int64_t rows, const std::string& sh,
                  const ScalarExpr& load, const LoopNode& node, const std::string& x_it,
                  const std::string& x0, const std::string& x_ok, const std::string& y_it,
                  const std::string& y0, const std::string& y_end, const std::string& others,
                  const std::string& pad2, bool unrolled) {
    std::set<std::string> driven = driven_iterators(node, y_it);
    const bool vector = driven.size() == 1 && contiguous_along(load, *driven.begin());
    const std::string p3 = pad2 + "  ", p4 = p3 + "  ", p5 = p4 + "  ", p6 = p5 + "  ";
    const std::string to = "&" + cell(dest, rows, v("x"), v("y"));
    const bool wide = sh != "3";  // up to 16 chunks a row
    std::string t = pad2 + (unrolled ? "#pragma unroll\n" : "#pragma unroll 1\n") + pad2 +
                    "for (int " + v("p") + " = 0; " + v("p") + " < " +
                    str(rows * (wide ? 16 : 8) / kCudaBlockThreads) + "; ++" + v("p") + ") {\n";
    t += p3 + "const int " + v("e") + " = threadIdx.x + " + str(kCudaBlockThreads) + " * " +
         v("p") + ";\n";
    // (rows << sh is a multiple of the block: the same p leaves for every thread.)
    if (sh == v("sh"))
      t += p3 + "if (" + v("e") + " >= (" + str(rows) + " << " + sh + ")) break;\n";
    t += p3 + "const int " + v("x") + " = " + v("e") + " >> " + sh + ", " + v("y") + " = (" +
         v("e") + " & ((1 << " + sh + ") - 1)) * 8;\n";
    if (!vector) t += p3 + "uint4 " + v("u") + " = make_uint4(0, 0, 0, 0);\n";
    t += p3 + "bool " + v("done") + " = false;\n";
    t += p3 + "{\n" + p4 + "const int64_t " + x_it + " = " + x0 + " + " + v("x") + ";\n";
    t += p4 + "if (" + x_ok + ") {\n";
    reset();
    const std::string at = render_index(c, load.buffer, load.index);
    const std::string element =
        p5 + "  const int64_t " + y_it + " = " + y0 + " + " + v("y") + " + " + v("i") + ";\n";
    if (vector) {
      t += p5 + "if (" + y0 + " + " + v("y") + " + 7 < " + y_end + ") {\n";
      t += p5 + "  const int64_t " + y_it + " = " + y0 + " + " + v("y") + ";\n" + p5 + "  " +
           others + "\n" + bind_iterators(node.args, p5 + "  ");
      t += p5 + "  const " + T + "* " + v("a") + " = &" + at + ";\n";
      t += p5 + "  if (((uint64_t)" + v("a") + " & 15) == 0) {\n" + p5 + "    kiln_cp_async16(" +
           to + ", " + v("a") + ");\n" + p5 + "    " + v("done") + " = true;\n" + p5 + "  }\n" +
           p5 + "}\n";
      // The edge: a chunk that crosses y_end or lies at an unaligned address, element by
      // element into shared memory in a rolled loop (unrolled in every fill, the edges were a
      // quarter of attention's NVRTC time); a chunk wholly past y_end is zeros below.
      t += p5 + "if (!" + v("done") + " && " + y0 + " + " + v("y") + " < " + y_end + ") {\n";
      t += p6 + "#pragma unroll 1\n" + p6 + "for (int " + v("i") + " = 0; " + v("i") + " < 8; ++" +
           v("i") + ") {\n";
      t += p6 + "  const int64_t " + y_it + " = " + y0 + " + " + v("y") + " + " + v("i") + ";\n";
      t += p6 + "  " + T + " " + v("ev") + " = 0;\n";
      t += p6 + "  if (" + y_it + " < " + y_end + ") {\n" + p6 + "    " + others + "\n" +
           bind_iterators(node.args, p6 + "    ");
      t += p6 + "    " + v("ev") + " = " + at + ";\n" + p6 + "  }\n";
      t += p6 + "  (" + to + ")[" + v("i") + "] = " + v("ev") + ";\n" + p6 + "}\n";
      t += p6 + v("done") + " = true;\n" + p5 + "}\n";
      t += p4 + "}\n" + p3 + "}\n";
      t += p3 + "if (!" + v("done") + ") *(uint4*)" + to + " = make_uint4(0, 0, 0, 0);\n";
      return t + pad2 + "}\n";
    }
    t += p5 + "#pragma unroll\n" + p5 + "for (int " + v("i") + " = 0; " + v("i") + " < 8; ++" +
         v("i") + ") {\n";
    t += element;
    t += p5 + "  if (" + y_it + " < " + y_end + ") {\n" + p5 + "    " + others + "\n" +
         bind_iterators(node.args, p5 + "    ");
    t += p5 + "    ((" + T + "*)&" + v("u") + ")[" + v("i") + "] = " + at + ";\n" + p5 + "  }\n" +
         p5 + "}\n";
    t += p4 + "}\n" + p3 + "}\n";
    t += p3 + "if (!" + v("done") + ") *(uint4*)" + to + " = " + v("u") + ";\n";
    return t + pad2 + "}\n";
  };
  // Only the copies of every key block are unrolled; those of a tile's start and of a head
  // longer than 128 stay rolled loops (NVRTC's time grows with each unrolled copy).
  auto fill_q = [&](const std::string& d0, const std::string& pad2) {
    return fill(v("sq"), kRows, v("sh"), *f->a, score_node, "c1", v("r0"), row_ok, "c4", d0, v("D"),
                "const int64_t c3 = 0; (void)c3;", pad2, false);
  };
  auto fill_k = [&](const std::string& j, const std::string& d, const std::string& stage,
                    const std::string& pad2, bool unrolled) {
    const std::string dest = wg ? "(" + v("sk") + " + (" + stage + ") * " + str(kWgKStage / 2) + ")"
                                : v("sk") + "[" + stage + "]";
    return fill(dest, kKeys, v("sh"), *f->b, score_node, "c3", j, "c3 < " + v("J"), "c4", d, v("D"),
                "const int64_t c1 = 0; (void)c1;", pad2, unrolled);
  };
  auto fill_v = [&](const std::string& j, const std::string& stage, const std::string& pad2,
                    bool unrolled) {
    const std::string dest =
        wg ? "(" + v("sv") + " + (" + stage + ") * " + str(wg_v_stage_bytes(kLanes) / 2) + ")"
           : v("sv") + "[" + stage + "]";
    return fill(dest, kKeys, kLanes > 64 ? "4" : "3", *f->v, out_node, "c3", j, "c3 < " + v("J"),
                "c2", v("l0"), v("C"), "const int64_t c1 = 0; (void)c1;", pad2, unrolled);
  };
  s += in + "const int64_t " + v("Dm") + " = " + v("D") + " > 0 ? " + v("D") + " : 1;\n";
  // Key blocks where the score expression is -inf for every row of the tile and key of the
  // block (a causal mask's upper triangle) add nothing and are skipped: `advance` moves a block
  // start on to the next block that may hold a finite score.
  const std::string may = may_be_finite(c.sizes, mx, f->domain, n, max_node, rank);
  auto advance = [&](const std::string& j, const std::string& pad2) {
    if (may == "1") return std::string();
    return pad2 + "for (; " + j + " < " + v("J") + "; " + j + " += " + str(kKeys) + ") {\n" + pad2 +
           "  const int64_t " + v("klo") + " = " + j + ", " + v("khi") + " = " + j + " + " +
           str(kKeys - 1) + " < " + v("J") + " ? " + j + " + " + str(kKeys - 1) + " : " + v("J") +
           " - 1;\n" + pad2 + "  if (" + may + ") break;\n" + pad2 + "}\n";
  };
  if (may != "1")
    s += in + "const int64_t " + v("rlo") + " = " + v("r0") + ", " + v("rhi") + " = " + v("r0") +
         " + " + str(kRows - 1) + " < " + row_count + " ? " + v("r0") + " + " + str(kRows - 1) +
         " : " + row_count + " - 1;\n";
  // The shared-memory addresses this thread's ldmatrix reads, at the first row, key, head
  // element and lane: each read is one of them plus a constant (and a stage's offset).
  const std::string q = v("q"), w = v("w"), t_ = v("t");
  if (wg) {
    // The warpgroup's 64 rows of q (128-byte rows), the first stage of k and of v.
    s += in + "const uint32_t " + v("aq") + " = kiln_smem_addr(" + v("sq") + ") + (" + w +
         " / 4) * " + str(64 * 128) + ";\n";
    s += in + "const uint32_t " + v("ak") + " = kiln_smem_addr(" + v("sk") + "), " + v("av") +
         " = kiln_smem_addr(" + v("sv") + ");\n";
    // q's matrix descriptor, once: each step's is it moved on (kiln_wgmma_desc_at).
    s += in + "const uint64_t " + v("qdesc") + " = kiln_wgmma_desc(" + v("aq") + ", 16, 1024);\n";
  } else {
    s += in + "const uint32_t " + v("aq") + " = kiln_smem_addr(&" + v("sq") + "[" + w + " * 16 + " +
         q + " % 16][(" + q + " / 16) * 8]);\n";
    s += in + "const uint32_t " + v("ak") + " = kiln_smem_addr(&" + v("sk") + "[0][(" + q +
         " / 16) * 8 + " + q + " % 8][(" + q + " / 8) % 2 * 8]);\n";
    s += in + "const uint32_t " + v("av") + " = kiln_smem_addr(&" + v("sv") + "[0][" + q +
         " % 16][(" + q + " / 16) * 8]);\n";
  }
  // Copies and stores reach the tensor cores' reads (the async proxy) through a proxy fence.
  const std::string landed = wg ? "kiln_fence_proxy_async();\n" : "";
  s += in + "int64_t " + v("j1") + " = 0;\n" + advance(v("j1"), in);
  // Keys and values by the TMA (the tile's staged operands: scheduler/online_softmax.h) where
  // this launch encoded their maps and each box covers what the tile reads: thread 0 issues
  // each key block's boxes into a stage, with a "full" and an "empty" mbarrier per stage; else
  // every thread's cp.async copies, a block barrier a key block.
  const bool tma =
      wg && n.staged.size() == 2 && c.options.tensor_maps > 0 && !c.options.bounds_checks;
  const std::string T_ = v("tma"), full = v("full"), empty = v("empty"), it = v("it");
  const softmax_tile::TmaStages stages{N, tma ? first_tensor_map(c.nest, n) : 0, kLanes, kKSt,
                                       kVStage};
  if (tma)
    s += softmax_tma_setup(c, n, score_node, out_node, *f->b, *f->v, stages.first_map, in) + in +
         "__shared__ __align__(8) uint64_t " + full + "[" + str(S) + "], " + empty + "[" + str(S) +
         "];\n" + in + "const uint32_t " + v("fbar") + " = kiln_smem_addr(&" + full + "[0]), " +
         v("ebar") + " = kiln_smem_addr(&" + empty + "[0]);\n";
  // The barriers' shared addresses, once a tile (a barrier x is 8 bytes on).
  auto bar = [&](const std::string& base, const std::string& x) {
    return v(base) + " + 8u * (uint32_t)(" + x + ")";
  };
  // The previous tile's products may still read shared memory (none waits after them).
  s += in + "__syncthreads();\n";
  if (tma) {
    s += in + "if (" + T_ + " && threadIdx.x == 0) {\n";
    s +=
        in2 + "for (int " + v("i") + " = 0; " + v("i") + " < " + str(S) + "; ++" + v("i") + ") {\n";
    s += in3 + "kiln_mbar_init(" + bar("fbar", v("i")) + ", 1);\n";
    s += in3 + "kiln_mbar_init(" + bar("ebar", v("i")) + ", " + str(kCudaBlockThreads / 32) +
         ");\n" + in2 + "}\n" + in2 + "kiln_mbar_fence_init();\n";
    s += in2 + "if (" + v("j1") + " < " + v("J") + ")\n" +
         softmax_tile::tma_issue(n, stages, v("j1"), "0", in3) + in + "}\n";
  }
  // The first copies: q (the whole head up to 128; a longer one chunk by chunk in the loop),
  // the first block's keys and values into stage 0.
  if (head_above(kHead) == "0")
    s += fill_q("0", in);
  else if (head_above(kHead) != "1")
    s += in + "if (" + v("D") + " <= " + str(kHead) + ") {\n" + fill_q("0", in2) + in + "}\n";
  s += in + "if (" + (tma ? "!" + T_ + " && " : "") + v("j1") + " < " + v("J") + ") {\n" +
       fill_k(v("j1"), "0", "0", in2, false) + fill_v(v("j1"), "0", in2, false) + in + "}\n";
  s += in + "kiln_cp_async_commit();\n";
  // With the TMA, q has landed and the barriers are initialised before any warp reads them.
  if (tma)
    s += in + "if (" + T_ + ") {\n" + in2 + "kiln_cp_async_wait_all();\n" + in2 + landed + in2 +
         "__syncthreads();\n" + in + "}\n";

  // Per block of keys: its copies have landed and every warp is done with the previous block;
  // the next block's copies go to the other stage while this one's products run.
  const std::string st = v("st");
  // The cp.async copies alternate between two stages; the TMA's go round all S, the stage and
  // the barriers' parities from the block's count (one register fewer than a stage counter).
  const std::string next = st + " ^ 1", ns = v("ns");
  if (tma) {
    s += in + "unsigned " + it + " = 0;\n";
    s += in + "for (int64_t " + v("j0") + " = " + v("j1") + ", " + v("jx") + "; " + v("j0") +
         " < " + v("J") + "; " + v("j0") + " = " + v("jx") + ", ++" + it + ") {\n";
    s += in2 + "const unsigned " + st + " = " + T_ + " ? " + it + " % " + str(S) + "u : " + it +
         " & 1u;\n";
  } else {
    s += in + "int " + st + " = 0;\n";
    s += in + "for (int64_t " + v("j0") + " = " + v("j1") + ", " + v("jx") + "; " + v("j0") +
         " < " + v("J") + "; " + v("j0") + " = " + v("jx") + ", " + st + " = " + next + ") {\n";
  }
  s += in2 + v("jx") + " = " + v("j0") + " + " + str(kKeys) + ";\n" + advance(v("jx"), in2);
  if (tma) {
    // The next block's stage last held block it + 1 - S, released by every warp after its
    // products. Every thread waits for that release, whether or not a block follows (only
    // thread 0 needs it, but a wait on a path ptxas cannot prove uniform makes it serialise the
    // warpgroup instructions), then thread 0 copies.
    s += in2 + "if (" + T_ + ") {\n";
    s += in3 + "const unsigned " + ns + " = (" + st + " + 1u) % " + str(S) + "u;\n";
    s += in3 + "if (" + it + " + 1 >= " + str(S) + ") kiln_mbar_wait(" + bar("ebar", ns) +
         ", (uint32_t)(((" + it + " + 1) / " + str(S) + " - 1) & 1));\n";
    s += in3 + "if (threadIdx.x == 0 && " + v("jx") + " < " + v("J") + ")\n" +
         softmax_tile::tma_issue(n, stages, v("jx"), ns, in4);
    s += in3 + "kiln_mbar_wait(" + bar("fbar", st) + ", (uint32_t)((" + it + " / " + str(S) +
         ") & 1));\n";
    s += in2 + "} else {\n";
  }
  const std::string inc = tma ? in3 : in2, inc2 = inc + "  ";
  s += inc + "kiln_cp_async_wait_all();\n" + (wg ? inc + landed : "") + inc + "__syncthreads();\n";
  s += inc + "if (" + v("jx") + " < " + v("J") + ") {\n" + fill_k(v("jx"), "0", next, inc2, true) +
       fill_v(v("jx"), next, inc2, true) + inc + "}\n";
  s += inc + "kiln_cp_async_commit();\n";
  if (tma) s += in2 + "}\n";
  s += in2 + "const uint32_t " + v("kst") + " = " + v("ak") + " + " + st + " * " + str(kKSt) +
       ", " + v("vst") + " = " + v("av") + " + " + st + " * " + str(kVStage) + ";\n";
  // The stage's descriptors of k and v, once a block (each step's moved on from them).
  if (wg)
    s += in2 + "const uint64_t " + v("kdesc") + " = kiln_wgmma_desc(" + v("kst") + ", 16, 1024), " +
         v("vdesc") + " = kiln_wgmma_desc(" + v("vst") + ", " + str(kKeys * 128) + ", 1024);\n";
  // The block's factors along the keys (a gate on the values, g[j]), the same for every row:
  // each lane of a warp computes those of keys q and q + 32, read before the products so that
  // the loads run beside them; the weights take theirs by shuffle.
  if (!f->key_factors.empty()) {
    reset();
    const std::string u = v("ku"), kf = v("kf");
    s += in2 + "float " + kf + "[2];\n" + in2 + "#pragma unroll\n" + in2 + "for (int " + u +
         " = 0; " + u + " < 2; ++" + u + ") {\n";
    s += in3 + "const int64_t c1 = 0, c2 = 0, c3 = " + v("j0") + " + " + u + " * 32 + " + q +
         ";\n" + in3 + "(void)c1;\n" + in3 + "(void)c2;\n";
    s += in3 + kf + "[" + u + "] = 0.f;\n" + in3 + "if (c3 < " + v("J") + ") {\n" +
         bind_iterators(out_node.args, in4);
    std::string g;
    for (const ScalarExpr* kfe : f->key_factors)
      g += (g.empty() ? "" : " * ") + ("(float)(" + render_value(c, *kfe) + ")");
    s += in4 + kf + "[" + u + "] = " + g + ";\n" + in3 + "}\n" + in2 + "}\n";
  }
  s += in2 + "float " + v("s") + "[8][4];\n";
  // (Warpgroup products overwrite them with the first step.)
  if (!wg)
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + t_ + " = 0; " + t_ + " < 8; ++" + t_ +
         ")\n" + in2 + "  " + v("s") + "[" + t_ + "][0] = " + v("s") + "[" + t_ +
         "][1] = " + v("s") + "[" + t_ + "][2] = " + v("s") + "[" + t_ + "][3] = 0.f;\n";
  // The scores on tensor cores, over the head in chunks of 128: one chunk, staged before the
  // loop, up to 128; a longer head copies each chunk of q and k (but k's first) here, waiting.
  if (one_chunk)
    s += in2 + "{\n" + in3 + "const int64_t " + v("d0") + " = 0;\n";
  else
    s += in2 + "for (int64_t " + v("d0") + " = 0; " + v("d0") + " < " + v("Dm") + "; " + v("d0") +
         " += " + str(kHead) + ") {\n";
  if (head_above(kHead) != "0")
    s += in3 + "if (" + head_above(kHead) + ") {\n" + in4 + "__syncthreads();\n" +
         fill_q(v("d0"), in4) + in4 + "if (" + v("d0") + " > 0) {\n" +
         fill_k(v("j0"), v("d0"), st, in4 + "  ", false) + in4 + "}\n" + in4 +
         "kiln_cp_async_commit();\n" + in4 + "kiln_cp_async_wait_all();\n" +
         (wg ? in4 + landed : "") + in4 + "__syncthreads();\n" + in3 + "}\n";
  s += in3 + "const int64_t " + v("dk") + " = " + v("D") + " - " + v("d0") + ";\n";
  const MmaInstruction *score_mma = nullptr, *value_mma = nullptr;
  if (wg) {
    score_mma = find_warpgroup_mma(half, half, DType::f32, static_cast<int>(kKeys));
    value_mma = find_warpgroup_mma(half, half, DType::f32, static_cast<int>(kLanes));
    if (!score_mma || !value_mma)
      throw std::logic_error("no warpgroup instruction for the online-softmax tile");
  }
  const TileProducts products{N,         kind,      kLanes,
                              score_mma, value_mma, one_chunk ? head_above(64) : ""};
  s += score_products(products, in3) + in2 + "}\n";

  // The score expression per element: s[t][e] is row g + 8 (e / 2) of the warp, key 8t + 2u +
  // e % 2 of the block.
  const std::string e = v("e");
  // (`tiles`: 8 score tiles of a key block, or kOTiles output tiles in the epilogue.)
  auto element = [&](const std::string& body, const std::string& pad2, int64_t tiles = 8) {
    return softmax_tile::each_element(N, body, pad2, tiles);
  };
  const std::string row_of = softmax_tile::element_row(N), col_of = softmax_tile::element_col(N);
  const std::string se = v("s") + "[" + t_ + "][" + e + "]";
  std::vector<const ScalarExpr*> loads;
  collect_loads(*mx.value, loads);
  auto bind_score = [&] {
    reset();
    for (const ScalarExpr* l : loads)
      if (l->buffer == score.buffer) c.bound[l] = se;
    if (folded) c.bound[f->scaled_score] = se;
  };
  auto score_of = [&](const ScalarExpr& x, const std::string& pad2) {
    std::string r;
    std::string shared = bind_shared(c, x);
    for (size_t from = 0, to; from < shared.size(); from = to + 1) {
      to = std::min(shared.find('\n', from), shared.size());
      if (to > from) r += pad2 + shared.substr(from, to - from) + "\n";
    }
    return r;
  };
  // Inside: every key of the block and both of the thread's rows exist, the domain's bounds
  // hold and a where's condition (when bounded) is true for the warp's 16 rows and every key of
  // the block: no guard, and the where's value alone. Most blocks of a long sequence.
  bool value_only = false;
  const std::string sure = sure_inside(
      c.sizes, mx, f->domain, max_node, rank, "(" + v("r0") + " + " + w + " * 16)",
      "(" + v("r0") + " + " + w + " * 16 + 15)", v("j0"), "(" + v("j0") + " + 63)", value_only);
  const ScalarExpr& inner = value_only ? *mx.value->args[1] : *mx.value;
  bind_score();
  std::string x = in4 + "  const int64_t c1 = " + row_of + ", c3 = " + v("j0") + " + " + col_of +
                  ";\n" + bind_iterators(max_node.args, in4 + "  ");
  x += score_of(inner, in4 + "  ");
  if (const std::string value = render_value(c, inner); value != se)
    x += in4 + "  " + se + " = (float)(" + value + ");\n";
  if (sure != "0")
    s += in2 + "if (" + v("J") + " - " + v("j0") + " >= " + str(kKeys) + " && " + v("rok") +
         "[0] && " + v("rok") + "[1]" + (sure == "1" ? "" : " && " + sure) + ") {\n" +
         element(x, in3) + in2 + "} else {\n";
  else
    s += in2 + "{\n";
  // Elsewhere (outside the domain, past the keys, on a row that does not exist): -inf.
  bind_score();
  x = in4 + "  float " + v("x") + " = -KILN_INF;\n";
  x += in4 + "  if (" + v("rok") + "[" + e + " / 2] && " + v("j0") + " + " + col_of + " < " +
       v("J") + ") {\n";
  x += in4 + "    const int64_t c1 = " + row_of + ", c3 = " + v("j0") + " + " + col_of + ";\n" +
       bind_iterators(max_node.args, in4 + "    ");
  x += score_of(*mx.value, in4 + "    ");
  std::string inside;
  for (const IntExpr& bound : f->domain)
    inside += (inside.empty() ? "" : " && ") + ("(" + int_expr_to_c(bound, c.sizes) + ") >= 0");
  if (!inside.empty()) x += in4 + "    if (" + inside + ")\n  ";
  x += in4 + "    " + v("x") + " = (float)(" + render_value(c, *mx.value) + ");\n" + in4 + "  }\n";
  x += in4 + "  " + se + " = " + v("x") + ";\n";
  s += element(x, in3) + in2 + "}\n";
  // The block's row maxima over the 4 threads holding a row (lanes 4g..4g+3), the rescale of
  // the running sum and output by W(m, m') = exp2(m C - m' C), then the block's weights.
  s += in2 + "float " + v("mx") + "[2] = {" + v("m") + "[0], " + v("m") + "[1]}, " + v("mc") +
       "[2], " + v("rs") + "[2];\n";
  s += element(in2 + "  " + v("mx") + "[" + e + " / 2] = fmaxf(" + v("mx") + "[" + e + " / 2], " +
                   se + ");\n",
               in2);
  const std::string h = v("h");
  s += in2 + "#pragma unroll\n" + in2 + "for (int " + h + " = 0; " + h + " < 2; ++" + h + ") {\n";
  s += in3 + v("mx") + "[" + h + "] = fmaxf(" + v("mx") + "[" + h +
       "], __shfl_xor_sync(0xffffffffu, " + v("mx") + "[" + h + "], 1));\n";
  s += in3 + v("mx") + "[" + h + "] = fmaxf(" + v("mx") + "[" + h +
       "], __shfl_xor_sync(0xffffffffu, " + v("mx") + "[" + h + "], 2));\n";
  // A row with no finite score yet weighs against 0: a score of -inf then weighs exp2(-inf) = 0
  // (C > 0), and no difference is inf - inf.
  s += in3 + "const float " + v("safe") + " = " + v("mx") + "[" + h +
       "] == -KILN_INF ? 0.f : " + v("mx") + "[" + h + "];\n";
  s += in3 + v("mc") + "[" + h + "] = " + v("safe") + " * " + wc + ";\n";
  s += in3 + "const float " + v("sc") + " = kiln_ex2(fmaf(" + v("m") + "[" + h + "], " + wc +
       ", -" + v("mc") + "[" + h + "]));\n";
  s += in3 + v("l") + "[" + h + "] *= " + v("sc") + ";\n" + in3 + v("rs") + "[" + h +
       "] = " + v("sc") + ";\n";
  s += in3 + v("m") + "[" + h + "] = " + v("mx") + "[" + h + "];\n" + in3 + v("ms") + "[" + h +
       "] = " + v("safe") + ";\n";
  s += in2 + "}\n";
  // The output rescaled only where a row of the warp has a new maximum: where none has, every
  // factor is exactly exp2(0) = 1 (most blocks of a long row), and the warp skips the products.
  const std::string rs = v("rs");
  s += in2 + "if (__any_sync(0xffffffffu, " + rs + "[0] != 1.f || " + rs + "[1] != 1.f)) {\n";
  s += in3 + "#pragma unroll\n" + in3 + "for (int " + t_ + " = 0; " + t_ + " < " + str(kOTiles) +
       "; ++" + t_ + ") {\n";
  for (int x = 0; x < 4; ++x)
    s += in4 + v("o") + "[" + t_ + "][" + str(x) + "] *= " + rs + "[" + str(x / 2) + "];\n";
  s += in3 + "}\n" + in2 + "}\n";
  std::string p = in2 + "  const float " + v("pe") + " = kiln_ex2(fmaf(" + se + ", " + wc + ", -" +
                  v("mc") + "[" + e + " / 2]));\n";
  p += in2 + "  " + v("l") + "[" + e + " / 2] += " + v("pe") + ";\n" + in2 + "  " + se + " = " +
       v("pe") + ";\n";
  s += element(p, in2);
  // The factors along the keys scale the weights P·V reads: key 8t + 2u + o of the block is
  // lane 8 (t % 4) + 2u + o's, in its kf[t / 4] (0 past the keys, where the weight is 0).
  if (!f->key_factors.empty()) {
    const std::string o = v("o2"), g = v("g");
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + t_ + " = 0; " + t_ + " < 8; ++" + t_ +
         ")\n" + in2 + "#pragma unroll\n" + in2 + "for (int " + o + " = 0; " + o + " < 2; ++" + o +
         ") {\n";
    s += in3 + "const float " + g + " = __shfl_sync(0xffffffffu, " + t_ + " < 4 ? " + v("kf") +
         "[0] : " + v("kf") + "[1], (" + t_ + " % 4) * 8 + (" + q + " % 4) * 2 + " + o + ");\n";
    s += in3 + v("s") + "[" + t_ + "][" + o + "] *= " + g + ";\n" + in3 + v("s") + "[" + t_ + "][" +
         o + " + 2] *= " + g + ";\n" + in2 + "}\n";
  }
  // The factors along the rows and keys (a dropout mask) scale the weights P·V reads, at
  // elements whose row and key exist (elsewhere the weight is 0 already).
  if (!f->weight_factors.empty()) {
    reset();
    std::string g;
    for (const ScalarExpr* kf : f->weight_factors)
      g += (g.empty() ? "" : " * ") + ("(float)(" + render_value(c, *kf) + ")");
    p = in2 + "  if (" + v("rok") + "[" + e + " / 2] && " + v("j0") + " + " + col_of + " < " +
        v("J") + ") {\n";
    p += in2 + "    const int64_t c1 = " + row_of + ", c2 = 0, c3 = " + v("j0") + " + " + col_of +
         ";\n" + in2 + "    (void)c2;\n" + bind_iterators(out_node.args, in2 + "    ");
    p += in2 + "    " + se + " *= " + g + ";\n" + in2 + "  }\n";
    s += element(p, in2);
  }
  s += value_products(products, in2);
  // The block's products are done with its stage (both waited for): released for the TMA.
  if (tma)
    s += in2 + "if (" + T_ + " && threadIdx.x % 32 == 0) kiln_mbar_arrive(" + bar("ebar", st) +
         ");\n";
  s += in + "}\n";
  if (folded)  // the rows' maxima in X's units, for the epilogue and the row factors
    s += in + v("m") + "[0] *= " + ks + ";\n" + in + v("m") + "[1] *= " + ks + ";\n";

  s += softmax_tile_end(c, n, *f, nodes, invariants, depth);
  return s + pad + "}\n";
}

}  // namespace kiln
