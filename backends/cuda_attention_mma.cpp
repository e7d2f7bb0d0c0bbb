#include "backends/cuda_attention_mma.h"

#include <vector>

namespace kiln::softmax_tile {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

/** ldmatrix.x4 (`trans`: ".trans" or "") of four 8x8 matrices into registers r[0..3] from the
 *  shared-memory address `at`. */
std::string ldmatrix(const std::string& trans, const std::string& r, const std::string& at,
                     const std::string& pad2) {
  return pad2 + "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4" + trans +
         ".shared.b16 {%0, %1, %2, %3}, [%4];\"\n" + pad2 + "             : \"=r\"(" + r +
         "[0]), \"=r\"(" + r + "[1]), \"=r\"(" + r + "[2]), \"=r\"(" + r + "[3])\n" + pad2 +
         "             : \"r\"(" + at + "));\n";
}

/** One mma.sync m16n8k16 of `kind` operands ("f16", "bf16") into the f32 accumulators acc[0..3],
 *  a from registers a[0..3], b from b0 and b1. */
std::string mma(const std::string& kind, const std::string& acc, const std::string& a,
                const std::string& b0, const std::string& b1, const std::string& pad2) {
  std::string t = pad2 + "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + kind + "." +
                  kind + ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n";
  t += pad2 + "             : \"+f\"(" + acc + "[0]), \"+f\"(" + acc + "[1]), \"+f\"(" + acc +
       "[2]), \"+f\"(" + acc + "[3])\n";
  t += pad2 + "             : \"r\"(" + a + "[0]), \"r\"(" + a + "[1]), \"r\"(" + a +
       "[2]), \"r\"(" + a + "[3]), \"r\"(" + b0 + "), \"r\"(" + b1 + "));\n";
  return t;
}

/** One wgmma into accumulators acc[tiles][4] (element 4t + e of the instruction's n / 2), a from
 *  shared memory (descriptor `a`) or from the registers `a_regs`, b from descriptor `b`,
 *  transposed (MN-major) where `trans_b`; the accumulators added to where `add` (C, nonzero),
 *  else overwritten. */
std::string wgmma(const MmaInstruction& ins, const std::string& acc, int64_t tiles,
                  const std::string& a, const std::vector<std::string>& a_regs,
                  const std::string& b, bool trans_b, const std::string& add,
                  const std::string& pad2) {
  std::string regs, outs, ins_a, inputs;
  int next = 0;
  for (int64_t t = 0; t < tiles; ++t)
    for (int e = 0; e < 4; ++e, ++next) {
      regs += (next ? ", %" : "%") + std::to_string(next);
      outs += std::string(next ? ", " : "") + "\"+f\"(" + acc + "[" + str(t) + "][" +
              std::to_string(e) + "])";
    }
  if (a_regs.empty()) {
    ins_a = "%" + std::to_string(next++);
    inputs = "\"l\"(" + a + ")";
  } else {
    for (size_t r = 0; r < a_regs.size(); ++r) {
      ins_a += (r ? ", %" : "{%") + std::to_string(next++);
      inputs += std::string(r ? ", " : "") + "\"r\"(" + a_regs[r] + ")";
    }
    ins_a += "}";
  }
  const std::string ins_b = "%" + std::to_string(next++);
  inputs += ", \"l\"(" + b + ")";
  const std::string ins_add = "%" + std::to_string(next++);
  inputs += ", \"r\"((int)(" + add + "))";
  const std::string imm =
      std::string(a_regs.empty() ? "p, 1, 1, 0, " : "p, 1, 1, ") + (trans_b ? "1" : "0");
  return pad2 + "asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, " + ins_add + ", 0;\\n" +
         ins.ptx + " {" + regs + "}, " + ins_a + ", " + ins_b + ", " + imm + ";\\n}\\n\"\n" + pad2 +
         "             : " + outs + "\n" + pad2 + "             : " + inputs + ");\n";
}

/** The accumulators acc[tiles][4] tied to the order of the asm statements, after the wait
 *  (`t_`, `e`: the loop counters' names). */
std::string fence_operands(const std::string& t_, const std::string& e, const std::string& acc,
                           int64_t tiles, const std::string& pad2) {
  return pad2 + "#pragma unroll\n" + pad2 + "for (int " + t_ + " = 0; " + t_ + " < " + str(tiles) +
         "; ++" + t_ + ")\n" + pad2 + "#pragma unroll\n" + pad2 + "for (int " + e + " = 0; " + e +
         " < 4; ++" + e + ")\n" + pad2 + "  kiln_fence_operand(" + acc + "[" + t_ + "][" + e +
         "]);\n";
}

}  // namespace

// mma.sync m16n8k16 (lane q, g = q / 4, u = q % 4): a (row-major 16 x 16) register 0 holds
// (g, 2u..2u+1), 1 (g + 8, 2u..), 2 (g, 2u + 8..), 3 (g + 8, 2u + 8..); b (16 x 8, k by n)
// register 0 holds (k 2u..2u+1, n g), 1 (k 2u + 8.., n g); the accumulator c[0..1] (g, 2u..2u+1),
// c[2..3] (g + 8, 2u..). ldmatrix.x4 gives matrix i (8 rows of 16 bytes) from the addresses of
// lanes 8i..8i+7, lane q receiving row g's elements 2u, 2u + 1 (.trans: column g's).
// The scores' a: the warp's 16 rows of q, lanes 0-15 address rows 0-15 at k, 16-31 at k + 8;
// b: keys 8t.. of the block for n tile t, lanes 0-7 at k, 8-15 at k + 8, 16-31 the same for
// tile t + 1 (fb[0..1] tile t, fb[2..3] tile t + 1). Rows of q and k are 272 bytes apart.
// Warpgroup products: per step of 16 elements of the head, one m64n64k16 of the warpgroup's
// 64 rows of q by the block's 64 keys, both K-major in their panels (steps 32 bytes apart
// within a 128-byte row, panels of 64 elements 128 rows or 64 keys of 128 bytes apart, 8 rows
// 1 KiB apart), then the scores read only after the instructions end.
std::string score_products(const TileProducts& p, const std::string& in3) {
  auto v = [&](const std::string& x) { return p.name + "_" + x; };
  const std::string kk = v("kk"), t_ = v("t");
  const std::string in4 = in3 + "  ";
  std::string s;
  if (p.score_mma) {
    // The steps of a chunk of dk elements, straight-line (a branch between the instructions of
    // a group makes ptxas fence each one): 4 where dk <= 64, else 8. The copies fill 64 or 128
    // elements of a row, zeros past the head, so the steps past dk add zeros.
    auto steps = [&](int64_t count, const std::string& pad2) {
      std::string t = pad2 + "kiln_wgmma_fence();\n" + pad2 + "#pragma unroll\n" + pad2 +
                      "for (int " + kk + " = 0; " + kk + " < " + str(count) + "; ++" + kk + ") {\n";
      t += wgmma(*p.score_mma, v("s"), 8,
                 "kiln_wgmma_desc_at(" + v("qdesc") + ", " + kk + " / 4 * " + str(kRows * 128) +
                     " + " + kk + " % 4 * 32)",
                 {},
                 "kiln_wgmma_desc_at(" + v("kdesc") + ", " + kk + " / 4 * " + str(kKeys * 128) +
                     " + " + kk + " % 4 * 32)",
                 false, v("d0") + " != 0 || " + kk + " != 0", pad2 + "  ");
      return t + pad2 + "}\n";
    };
    const std::string deep = p.deep.empty() ? v("dk") + " > 64" : p.deep;
    if (deep == "1" || deep == "0")
      s += steps(deep == "1" ? kHead / 16 : 4, in3);
    else
      s += in3 + "if (" + deep + ") {\n" + steps(kHead / 16, in4) + in3 + "} else {\n" +
           steps(4, in4) + in3 + "}\n";
    s += in3 + "kiln_wgmma_commit();\n" + in3 + "kiln_wgmma_wait<0>();\n";
    s += fence_operands(t_, v("e"), v("s"), 8, in3);
  } else {
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + kk + " = 0; " + kk + " < " + str(kHead) +
         "; " + kk + " += 16) {\n";
    s += in4 + "if (" + kk + " >= " + v("dk") + ") break;\n";
    s += in4 + "uint32_t " + v("fa") + "[4];\n";
    s += ldmatrix("", v("fa"), v("aq") + " + " + kk + " * 2", in4);
    s += in4 + "#pragma unroll\n" + in4 + "for (int " + t_ + " = 0; " + t_ + " < 8; " + t_ +
         " += 2) {\n";
    s += in4 + "  uint32_t " + v("fb") + "[4];\n";
    s += ldmatrix("", v("fb"),
                  v("kst") + " + " + t_ + " * " + str(8 * (kHead + kPad) * 2) + " + " + kk + " * 2",
                  in4 + "  ");
    s +=
        mma(p.kind, v("s") + "[" + t_ + "]", v("fa"), v("fb") + "[0]", v("fb") + "[1]", in4 + "  ");
    s += mma(p.kind, v("s") + "[" + t_ + " + 1]", v("fa"), v("fb") + "[2]", v("fb") + "[3]",
             in4 + "  ");
    s += in4 + "}\n" + in3 + "}\n";
  }
  return s;
}

std::string each_element(const std::string& name, const std::string& body, const std::string& pad,
                         int64_t tiles) {
  const std::string t_ = name + "_t", e = name + "_e";
  return pad + "#pragma unroll\n" + pad + "for (int " + t_ + " = 0; " + t_ + " < " + str(tiles) +
         "; ++" + t_ + ")\n" + pad + "#pragma unroll\n" + pad + "for (int " + e + " = 0; " + e +
         " < 4; ++" + e + ") {\n" + body + pad + "}\n";
}

std::string element_row(const std::string& name) {
  return name + "_r0 + " + name + "_w * 16 + " + name + "_q / 4 + (" + name + "_e / 2) * 8";
}

std::string element_col(const std::string& name) {
  return name + "_t * 8 + (" + name + "_q % 4) * 2 + " + name + "_e % 2";
}

std::string head_above(const std::string& name, int64_t head_min, int64_t head_max, int64_t x) {
  if (head_max > 0 && head_min > x) return "1";
  if (head_max > 0 && head_max <= x) return "0";
  return name + "_D > " + std::to_string(x);
}

std::string head_choice(const std::string& cond, const std::string& a, const std::string& b) {
  return cond == "1" ? a : cond == "0" ? b : cond + " ? " + a + " : " + b;
}

std::string value_products(const TileProducts& p, const std::string& in2) {
  auto v = [&](const std::string& x) { return p.name + "_" + x; };
  const std::string kk = v("kk"), t_ = v("t");
  const int64_t kLanes = p.lanes, kOTiles = kLanes / 8;
  const std::string in3 = in2 + "  ", in4 = in3 + "  ";
  std::string s;
  // The weights as the next product's a fragments (the accumulator layout of two n8 tiles, keys
  // 16kk..16kk+7 and 16kk+8..16kk+15, is the a layout of one k16 step: registers 0, 1 from tile
  // 2kk, 2, 3 from tile 2kk + 1), converted in pairs (cvt.rn.f16x2.f32). The values' b
  // fragments through ldmatrix.trans of v[key][lane] (rows 144 bytes apart): lanes 0-7 address
  // keys 16kk.. at lanes 8t.., 8-15 keys 16kk + 8.., 16-31 the same at lanes 8t + 8.. (tile t + 1).
  const std::string pack = p.kind == "bf16" ? "kiln_pack_bf16x2" : "kiln_pack_f16x2";
  auto sv_ = [&](const std::string& tile, int i) {
    return v("s") + "[" + tile + "][" + str(i) + "]";
  };
  const std::string lo = "2 * " + kk, hi = "2 * " + kk + " + 1";
  const std::string pairs = pack + "(" + sv_(lo, 0) + ", " + sv_(lo, 1) + "), " + pack + "(" +
                            sv_(lo, 2) + ", " + sv_(lo, 3) + "), " + pack + "(" + sv_(hi, 0) +
                            ", " + sv_(hi, 1) + "), " + pack + "(" + sv_(hi, 2) + ", " +
                            sv_(hi, 3) + ")";
  if (p.value_mma) {
    // Warpgroup products: the weights from registers (the accumulator layout of the scores is
    // the a layout of one step), all four steps' converted before the first instruction (a
    // register written between the instructions of a group makes ptxas fence each one); v
    // MN-major (transposed by the instruction): 16 keys of 128-byte rows a step, panels of 64
    // lanes 64 keys of 128 bytes apart, 8 keys 1 KiB apart.
    s += in2 + "uint32_t " + v("pa") + "[4][4];\n";
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < 4; ++" + kk +
         ") {\n" + in3 + "const uint32_t " + v("pk") + "[4] = {" + pairs + "};\n" + in3 +
         "#pragma unroll\n" + in3 + "for (int " + v("r") + " = 0; " + v("r") + " < 4; ++" + v("r") +
         ") " + v("pa") + "[" + kk + "][" + v("r") + "] = " + v("pk") + "[" + v("r") + "];\n" +
         in2 + "}\n";
    s += in2 + "kiln_wgmma_fence();\n";
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < 4; ++" + kk +
         ") {\n";
    const std::string pa = v("pa") + "[" + kk + "]";
    s += wgmma(*p.value_mma, v("o"), kOTiles, "", {pa + "[0]", pa + "[1]", pa + "[2]", pa + "[3]"},
               "kiln_wgmma_desc_at(" + v("vdesc") + ", " + kk + " * " + str(16 * 128) + ")", true,
               "1", in3);
    s += in2 + "}\n" + in2 + "kiln_wgmma_commit();\n" + in2 + "kiln_wgmma_wait<0>();\n";
    s += fence_operands(t_, v("e"), v("o"), kOTiles, in2);
  } else {
    s += in2 + "#pragma unroll\n" + in2 + "for (int " + kk + " = 0; " + kk + " < 4; ++" + kk +
         ") {\n";
    s += in3 + "const uint32_t " + v("pa") + "[4] = {" + pairs + "};\n";
    s += in3 + "#pragma unroll\n" + in3 + "for (int " + t_ + " = 0; " + t_ + " < " + str(kOTiles) +
         "; " + t_ + " += 2) {\n";
    s += in4 + "uint32_t " + v("fb") + "[4];\n";
    s += ldmatrix(
        ".trans", v("fb"),
        v("vst") + " + " + kk + " * " + str(16 * (kLanes + kPad) * 2) + " + " + t_ + " * 16", in4);
    s += mma(p.kind, v("o") + "[" + t_ + "]", v("pa"), v("fb") + "[0]", v("fb") + "[1]", in4);
    s += mma(p.kind, v("o") + "[" + t_ + " + 1]", v("pa"), v("fb") + "[2]", v("fb") + "[3]", in4);
    s += in3 + "}\n" + in2 + "}\n";
  }
  return s;
}

}  // namespace kiln::softmax_tile
