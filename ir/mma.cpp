#include "ir/mma.h"

namespace kiln {

namespace {

FragmentTerm lane(int div, int mod, int scale) {
  return {false, div, mod, scale};
}
FragmentTerm element(int div, int mod, int scale) {
  return {true, div, mod, scale};
}

/** m16n8k16 with 16-bit a and b (f16 or bf16) into f32: the PTX ISA's fragment figures. */
MmaInstruction m16n8k16(DType t) {
  MmaInstruction i;
  const std::string type = t == DType::bf16 ? "bf16" : "f16";
  i.name = "m16n8k16." + type;
  i.ptx = "mma.sync.aligned.m16n8k16.row.col.f32." + type + "." + type + ".f32";
  i.m = 16;
  i.n = 8;
  i.k = 16;
  i.a = i.b = t;
  i.acc = DType::f32;
  // a: 4 registers of 2 values; register r holds rows q / 4 (+ 8 for r odd), columns
  // 2 (q % 4) + 0..1 (+ 8 for r ≥ 2).
  i.fa = {16,
          16,
          8,
          {lane(4, 8, 1), element(2, 2, 8)},
          {lane(1, 4, 2), element(1, 2, 1), element(4, 2, 8)}};
  // b: 2 registers of 2 values; rows (k) 2 (q % 4) + 0..1 (+ 8 for the second), column q / 4.
  i.fb = {16, 8, 4, {lane(1, 4, 2), element(1, 2, 1), element(2, 2, 8)}, {lane(4, 8, 1)}};
  // The accumulator: 4 values; rows q / 4 (+ 8 for e ≥ 2), columns 2 (q % 4) + e % 2.
  i.fc = {16, 8, 4, {lane(4, 8, 1), element(2, 2, 8)}, {lane(1, 4, 2), element(1, 2, 1)}};
  i.acc_rows = 2;
  i.acc_cols = 2;
  i.ldmatrix = true;
  i.min_sm = 80;
  return i;
}

/** wgmma m64nNk16 with 16-bit a and b into f32 (sm_90a): each warp w of the group holds rows
 *  16 w + q / 4 (+ 8 for (e / 2) odd) of the accumulator, columns 8 (e / 4) + 2 (q % 4) + e % 2:
 *  the m16n8 accumulator repeated along n (the PTX ISA's figure for m64nNk16). */
MmaInstruction m64nk16(DType t, int n) {
  MmaInstruction i;
  const std::string type = t == DType::bf16 ? "bf16" : "f16";
  i.name = "m64n" + std::to_string(n) + "k16." + type;
  i.ptx = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + type + "." + type;
  i.m = 64;
  i.n = n;
  i.k = 16;
  i.a = i.b = t;
  i.acc = DType::f32;
  i.fc = {64,
          n,
          n / 2,
          {lane(32, 4, 16), lane(4, 8, 1), element(2, 2, 8)},
          {element(4, n / 8, 8), lane(1, 4, 2), element(1, 2, 1)}};
  // A thread's accumulators of one instruction are one row of n / 2 (element e at (0, e)).
  i.acc_rows = 1;
  i.acc_cols = n / 2;
  i.min_sm = 90;
  i.warpgroup = true;
  return i;
}

}  // namespace

const std::vector<MmaInstruction>& mma_instructions() {
  static const std::vector<MmaInstruction> table = [] {
    std::vector<MmaInstruction> t = {m16n8k16(DType::f16), m16n8k16(DType::bf16)};
    for (DType d : {DType::f16, DType::bf16})
      for (int n : {64, 128, 256})
        t.push_back(m64nk16(d, n));
    return t;
  }();
  return table;
}

const MmaInstruction* find_mma(DType a, DType b, DType acc) {
  for (const MmaInstruction& i : mma_instructions())
    if (!i.warpgroup && i.a == a && i.b == b && i.acc == acc) return &i;
  return nullptr;
}

const MmaInstruction* find_warpgroup_mma(DType a, DType b, DType acc, int n) {
  for (const MmaInstruction& i : mma_instructions())
    if (i.warpgroup && i.a == a && i.b == b && i.acc == acc && i.n == n) return &i;
  return nullptr;
}

std::string fragment_coordinate(const std::vector<FragmentTerm>& terms, const std::string& lane,
                                const std::string& element) {
  // An operand other than a name or a number is parenthesised.
  auto wrap = [](const std::string& x) {
    return x.find_first_of(" +-*/%") == std::string::npos ? x : "(" + x + ")";
  };
  std::string out;
  for (const FragmentTerm& t : terms) {
    std::string x = wrap(t.element ? element : lane);
    if (t.div != 1) x = "(" + x + " / " + std::to_string(t.div) + ")";
    x = "(" + x + " % " + std::to_string(t.mod) + ")";
    if (t.scale != 1) x += " * " + std::to_string(t.scale);
    out += (out.empty() ? "" : " + ") + x;
  }
  return out.empty() ? "0" : "(" + out + ")";
}

int fragment_coordinate(const std::vector<FragmentTerm>& terms, int lane, int element) {
  int v = 0;
  for (const FragmentTerm& t : terms)
    v += ((t.element ? element : lane) / t.div) % t.mod * t.scale;
  return v;
}

}  // namespace kiln
