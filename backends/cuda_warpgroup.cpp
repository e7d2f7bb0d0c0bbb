// The reduction steps of a GPU block tile on Hopper's warpgroup instructions (wgmma, sm_90a):
// descriptors of the staged operands and the instructions, as scheduler/gpu_tile planned them.
#include <string>
#include <vector>

#include "backends/cuda_renderer.h"
#include "ir/mma.h"

namespace kiln {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

}  // namespace

/** One reduction block of a tile on warpgroup instructions (ir/mma.h, LoopNode::mma with
 *  warpgroup set): per k step of the instruction and m64 tile of the warpgroup's rows, one
 *  wgmma reading a and b from this block's stage `stage` through matrix descriptors, then the
 *  block's group committed and all but mma_in_flight groups waited for. An operand held
 *  [rows or lanes][k] (128-byte rows, swizzled) is the instruction's K-major form: its k steps
 *  are 32 bytes apart within the rows, 8 rows 1 KiB apart. One held [k][rows or lanes] is the
 *  MN-major form, transposed by the instruction: k steps 16 rows of 128 bytes apart, blocks of
 *  64 rows or lanes D rows of 128 bytes apart. */
std::string render_warpgroup_steps(const LoopNode& n, const std::vector<bool>& by_lane,
                                   const std::vector<bool>& k_major, const std::string& stage,
                                   const std::string& in) {
  const MmaInstruction& mma = *n.mma;
  const std::string N = n.name;
  const size_t a = by_lane[0] ? 1 : 0, b = 1 - a;
  const int64_t D = n.pack_depth, TM = n.warp_rows / mma.m, steps = D / mma.k;
  const int64_t row_bytes = 128;  // one swizzled row
  // The byte offset of the warpgroup's first row (or lane) `first` in operand q's stage.
  auto origin = [&](size_t q, const std::string& first) {
    return k_major[q] ? "(" + first + ") / 64 * " + str(D * row_bytes)
                      : "(" + first + ") * " + str(row_bytes);
  };
  auto k_step = [&](size_t q) { return k_major[q] ? mma.k * row_bytes : mma.k * 2; };
  auto leading = [&](size_t q) { return k_major[q] ? D * row_bytes : int64_t{16}; };
  std::string s = in + "const uint32_t " + N + "_ua = kiln_smem_addr(" + N + "_s" + str(a) + "[" +
                  stage + "]) + " + origin(a, N + "_wm * " + str(n.warp_rows)) + ";\n";
  s += in + "const uint32_t " + N + "_ub = kiln_smem_addr(" + N + "_s" + str(b) + "[" + stage +
       "]) + " + origin(b, N + "_wn * " + str(n.warp_lanes)) + ";\n";
  s += in + "kiln_wgmma_fence();\n";
  const std::string t = N + "_t", m = N + "_m";
  s += in + "#pragma unroll\n" + in + "for (int " + t + " = 0; " + t + " < " + str(steps) + "; ++" +
       t + ")\n";
  s += in + "#pragma unroll\n" + in + "for (int " + m + " = 0; " + m + " < " + str(TM) + "; ++" +
       m + ") {\n";
  const int elements = mma.fc.elements;
  std::string regs, outs;
  for (int e = 0; e < elements; ++e) {
    regs += (e ? ", %" : "%") + std::to_string(e);
    outs +=
        std::string(e ? ", " : "") + "\"+f\"(" + N + "_acc[" + m + "][" + std::to_string(e) + "])";
  }
  s += in + "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n" + mma.ptx + " {" + regs +
       "}, %" + std::to_string(elements) + ", %" + std::to_string(elements + 1) + ", p, 1, 1, " +
       (k_major[a] ? "1" : "0") + ", " + (k_major[b] ? "1" : "0") + ";\\n}\\n\"\n";
  s += in + "               : " + outs + "\n";
  s += in + "               : \"l\"(kiln_wgmma_desc(" + N + "_ua + " + m + " * " +
       (k_major[a] ? str(D * row_bytes) : str(64 * row_bytes)) + " + " + t + " * " +
       str(k_step(a)) + ", " + str(leading(a)) + ", 1024)), \"l\"(kiln_wgmma_desc(" + N + "_ub + " +
       t + " * " + str(k_step(b)) + ", " + str(leading(b)) + ", 1024)));\n";
  s += in + "}\n";
  s += in + "kiln_wgmma_commit();\n" + in + "kiln_wgmma_wait<" + str(n.mma_in_flight) + ">();\n";
  return s;
}

}  // namespace kiln
