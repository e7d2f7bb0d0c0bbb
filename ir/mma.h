/** \file
 * Warp-level matrix-multiply-accumulate instructions, described as data: one table entry per
 * instruction shape, with the layout of each fragment over the 32 threads of a warp. A
 * transform (scheduler/gpu_tile.h) chooses an entry for a contraction's block tile; the CUDA
 * renderer prints the instruction and the fragments' coordinates from the entry and decides
 * nothing.
 *
 * A fragment is an m×k (a), k×n (b) or m×n (accumulator) matrix held by a warp: thread q of
 * the warp holds `elements` of it, and element e of thread q sits at row Σ term(q, e) of the
 * row terms and column Σ of the column terms, each term ((q or e) / div) % mod · scale (CuTe's
 * layouts, written out). For m16n8k16 the accumulator's element e of thread q is at row
 * q / 4 + 8 · (e / 2), column 2 · (q % 4) + e % 2 (the PTX ISA's figure for that shape).
 *
 * Hopper's warpgroup instructions (`wgmma.mma_async`, sm_90a) are entries too: four warps (128
 * threads, q their thread index in the group) multiply a and b read from shared memory through
 * matrix descriptors (no register fragments) into accumulators held as `fc` says, and run
 * asynchronously until the group waits for them.
 */
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln {

/** One term of a fragment coordinate: ((thread or element) / div) % mod · scale. */
struct FragmentTerm {
  bool element = false;  ///< the element index e (else the thread's lane q)
  int div = 1, mod = 1, scale = 1;
};

/** Where each thread's elements of a fragment lie in its matrix. */
struct FragmentLayout {
  int rows = 0, cols = 0;  ///< the matrix
  int elements = 0;        ///< per thread
  std::vector<FragmentTerm> row, col;
};

/** A warp-level multiply-accumulate D = A·B + C of one shape and one set of types. */
struct MmaInstruction {
  std::string name;  ///< "m16n8k16.f16", as loop_nest_to_text prints it
  std::string ptx;   ///< the instruction, without operands
  int m = 0, n = 0, k = 0;
  DType a = DType::f16, b = DType::f16, acc = DType::f32;
  FragmentLayout fa, fb, fc;  ///< a (m×k), b (k×n), the accumulator (m×n)
  /** The accumulator's elements of a thread form acc_rows × acc_cols, element e at
   *  (e / acc_cols, e % acc_cols) of that block (so a thread's accumulators of many
   *  instructions tile as a matrix). */
  int acc_rows = 0, acc_cols = 0;
  /** a's and b's fragments are those of 8×8 matrices of 16-bit values that `ldmatrix` loads
   *  (four for a, two for b), so shared memory reaches them through it. */
  bool ldmatrix = false;
  int min_sm = 80;  ///< the oldest architecture that has it (sm_80)
  /** A warpgroup instruction (wgmma): 128 threads, a and b from shared memory through matrix
   *  descriptors (fa and fb are empty), asynchronous; it needs the architecture-specific
   *  target (sm_90a). */
  bool warpgroup = false;
};

/** Every instruction Kiln knows. */
const std::vector<MmaInstruction>& mma_instructions();

/** The warp instruction multiplying a by b into acc, the first of the table (null where none). */
const MmaInstruction* find_mma(DType a, DType b, DType acc);

/** The warpgroup instruction (wgmma) multiplying a by b into acc with n columns (null where
 *  none). */
const MmaInstruction* find_warpgroup_mma(DType a, DType b, DType acc, int n);

/** The coordinate `terms` give to thread `lane` and element `element` (C expressions or
 *  numbers), as C: "(q / 4) % 8 + ((e / 2) % 2) * 8". */
std::string fragment_coordinate(const std::vector<FragmentTerm>& terms, const std::string& lane,
                                const std::string& element);

/** The coordinate for numbers (tests, and checking a layout covers its matrix). */
int fragment_coordinate(const std::vector<FragmentTerm>& terms, int lane, int element);

}  // namespace kiln
