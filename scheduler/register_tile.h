/** \file
 * Register tiling of contractions, a transform of the loop IR for CPU backends.
 *
 * After `sink` (interchange.h) a contraction reads `for i { for j S0; for k for j S1; for j S2 }`:
 * the row loop `i` around a reduction nest whose innermost loop `j` runs unit-stride along the
 * result. Each update loads and stores its element. This step strip-mines `i` by R rows and `j`
 * by L lanes and holds the R×L elements in vector registers while the reduction loops run, in
 * blocks of D iterations of the outer reduction loop:
 *
 *     for (kt = 0; kt < K; kt += D)                  // k blocks
 *       for (jt = 0; jt < N - (L - 1); jt += L)      // full lane tiles
 *         for (it = lo; it < hi; it += R)            // row tiles, the last with the rows left
 *           alloc tile(S1 at i = it + 0..R-1, rows below min(R, hi - it), j = jt + 0..L-1)
 *             for (k = kt; k < min(kt + D, K); k++) S1   // R×L/V vector FMAs per k
 *       for (jt = last full tile; jt < N; jt += V)   // the lanes left, a vector at a time
 *         for (it = lo; it < hi; it += R)            // masked to min(V, N - jt) lanes
 *           alloc tile(... j = jt + 0..V-1, lanes below min(V, N - jt)) ...
 *
 * Where the reduction is one loop and the rows share an operand (b's rows in a matmul), the
 * order is BLIS's instead: b's lanes in blocks of B lanes (B × D elements fill about half of L2,
 * RegisterTileShape::block_bytes), and in each k block of each lane block b's panel is packed
 * for all its lane tiles first, then the row tiles run over it, each row tile sweeping the lane
 * tiles (a's rows stay in L1 across them, b's block in L2 across the rows):
 *
 *     for (jc = 0; jc < N; jc += B)                  // lane blocks  } across threads,
 *       for (ic = 0; ic < M; ic += C)                // row blocks   } collapsed
 *         for (kt = 0; kt < K; kt += D)              // k blocks
 *           pack P = b[kt.., jc..jc+B)               // filled lane tile by lane tile
 *             for (it = ic; ...) for (jt = jc; ...; jt += L) alloc tile(...) reading P at jt
 *           pack for the lanes left, the same way, a vector at a time
 *
 * Where a's rows are f16 or bf16, or do not lie along k (a[k, i] of aᵀ · b), each row tile
 * copies them for its k block first (`pack A = a[it..it+R, kt..]`, widened to f32, filled along
 * whichever of k and the rows a lies along), and its lane tiles read them there
 * (RegisterTileShape::pack_rows): a conversion once per row tile instead of once per lane
 * tile, and R contiguous rows of D values instead of D rows of a apart.
 *
 * Each (lane block, row block) packs its own panel: no pack is shared between threads, there
 * are pairs enough for the threads whether the rows are few (decode) or the lanes, and b is
 * packed M / C times (C = 128 row tiles: under 1 % of the work). The loops inside a pair stay
 * serial.
 * Two copies of the reduction per k block (docs/decisions.md, "Two copies of a register tile"):
 * rows past a tile's row count compute on the last row's operands and are not stored; lanes
 * past its lane count are neither read nor written.
 *
 * The update's operands that move along `j` are loaded as vectors, the others are scalars
 * broadcast across the lanes (a row of `a`: one broadcast per row and k; a row of `b`: one
 * vector per k shared by the rows). It applies where the statement is a sum reduction of f32
 * or f64 whose lane-varying part is loads, +, × and negation (ir/kernel_ir.h, lane_value), the
 * row loop is coincident and drives one statement iterator by +1 that the written element
 * moves with, the lane loop is the one `sink` put innermost and the reduction loops' bounds
 * use neither. Every iteration of the original nest runs exactly once, in the same order of k
 * per element, so the sums are those of the untiled nest.
 *
 * On a CPU with a matrix unit (AMX-BF16) a one-loop contraction whose update is
 * `acc += a * b` with a and b loads of bf16 buffers (f32 sums, a's load free of the lanes, b's
 * of the rows) runs on it instead, and with AMX-INT8 one of i8 or u8 loads each widened to i32
 * (i32 sums, exact), in the same order with tiles of 32 rows by 32 lanes:
 *
 *     for (jc ...; jc += 256) for (ic ...; ic += 512)    // across threads, collapsed
 *       for (kt = 0; kt < K; kt += 1024)
 *         matrix pack B = b[kt.., jc..jc+256), k pairs (int8: quads) side by side
 *           for (it = ic; ...; it += 32)
 *             matrix pack A = a[it..it+32, kt..] as it is (bf16 or 8 bits)
 *               for (jt = jc; ...; jt += 32) alloc matrix tile (32 × 32 sums, 64 bytes of k a step)
 *
 * Each pack's fill is a loop nest in the IR whose innermost loop is the one its operand moves
 * along unit-stride (k for a row-major a; the lanes for b = `b[k, n]`, k for b = `w[j, k]`).
 * Products of two bf16 values are exact in f32; the unit adds them in its own order within a
 * pair of k and flushes denormals to zero, so the sums differ from the vector tile's by rounding
 * only (docs/decisions.md, "AMX tiles").
 * Lanes and rows past a tile's counts compute on whatever the packs hold there and are never
 * stored; the k rows past the last block's end up to a multiple of 32 are zeros.
 *
 * Where the target has VNNI and no AMX-INT8 (RegisterTileShape::dot_bytes) the 8-bit product
 * takes the same nest with its tiles in vector registers: 6 rows by 4 vectors of 16 i32 sums
 * (64 lanes; 6 × 2 vectors of 8 with 32-byte AVX-VNNI), b's block packed in quads of k as for
 * AMX-INT8 (the same fill), a's 6 rows per row tile as they are. Per k quad a tile loads 4 of
 * b's vectors and broadcasts each row's 4 bytes as one 32-bit value into `vpdpbusd` (unsigned
 * bytes by signed ones, four products summed into each i32 lane, wrapping: exact). The signs
 * of a and b pick its form, recorded on the tile and both packs (ir/loop_ir.h, DotSigns): u8 ·
 * i8 as it is; i8 · u8 with the roles swapped; i8 · i8 with a packed xor 0x80 (a + 128) and
 * 128 × b's column sums, summed by b's fill, taken off each lane per k block; u8 · u8 with b
 * packed xor 0x80 (b − 128) and 128 × a's row sums, summed by a's fill, added to each row.
 * Rows past a tile's count read the last row's bytes. A target without VNNI (AVX2, AVX-512
 * without VNNI) takes the same tiles: the generated dot product widens the bytes to 16 bits
 * and sums them with two `vpmaddwd` (exact too). Only with none of these (VNNI=0, off x86)
 * does an i32 sum keep no tile (docs/decisions.md, "VNNI tiles").
 *
 * Likewise, where the target has AVX512-BF16 and no AMX-BF16 (RegisterTileShape::bf16_dot_bytes)
 * a bf16 product summing in f32 takes the same nest with tiles of 6 rows by 4 vectors of 16 f32
 * sums, b's block packed in pairs of k as for AMX-BF16, a's rows as bf16: per k pair a tile
 * loads 4 of b's vectors and broadcasts each row's pair into `vdpbf16ps` (docs/decisions.md,
 * "bf16 dot-product tiles").
 *
 * A row block of at most RegisterTileShape::along_k_rows rows (a decode step) whose lane
 * operand lies contiguous along k and not along the lanes (w[j, k] of x · wᵀ, not a kept const
 * weight) and whose every operand that moves with k lies contiguous along it takes the
 * dot-product form instead of the pack, over the whole of k (no k blocks: nothing is packed):
 *
 *     for (jc ...) for (ic ...)                      // across threads, collapsed
 *       if (M - ic <= along_k_rows && K > 0)
 *         for (jt = jc; jt < min(jc + B, N); jt += J)      // J = 4 lanes (2 with AVX2)
 *           for (it = ic; ...; it += R)                    // R = along_k_rows rows
 *             alloc tile (R × J vectors of V partial sums along k)
 *               for (k = 0; k < K - (V - 1); k += V) S    // R + J vector loads, R × J FMAs
 *               for (k = K - K % V; k < K; k++) S         // the k left, on the summed scalars
 *       else
 *         the k blocks with their packs, as above
 *
 * Each element's sum is then taken in another order (V interleaved partial sums, added up at
 * the end), exact only up to rounding as any vectorised reduction's. Rows and lanes past the
 * tile's counts compute on the last existing row's and lane's operands and are not stored.
 *
 * The nest right after the reduction in the row loop (`for j S2`: a bias, an activation)
 * runs on each tile instead of in a pass of its own when it reads the reduced buffer only at
 * the tile's elements: after the tile's store in the last k block, over the tile's rows and
 * lanes; the nest itself runs only when no k block does (docs/decisions.md, "An epilogue runs
 * on each register tile after its last k block").
 */
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** The register tile's shape: `rows` rows of `vectors` vectors of `vector_bytes` each, over
 *  blocks of `depth` iterations of the outer reduction loop. */
struct RegisterTileShape {
  int rows = 3;
  int vectors = 8;
  int depth = 256;
  int vector_bytes = 32;
  /** Bytes of b's packed block where the reduction is one loop: depth × (a number of lane tiles)
   *  elements, well inside a core's L2, so that the block stays there while every row tile runs
   *  over it (the N block of BLIS). A local array: 512 KiB leaves room on a thread's stack. */
  int64_t block_bytes = 512 << 10;
  /** Row tiles per row block (BLIS's M block): each (lane block, row block) packs b's block
   *  anew, so more rows cost less packing and fewer pairs for the threads to share. */
  int block_row_tiles = 128;
  /** A row block of at most this many row tiles (the rows of a decode step or a small batch)
   *  reads the lane operand where it lies instead of packing it, where it lies along the lanes:
   *  f32 M = 1, N = K = 4096 on one Zen 5 core 4.97 -> 3.15 ms (torch 2.6–2.9 ms); at M = 24 the
   *  fastest runs 5.5 ms direct against 7.1 packed; at 1024³ and 2048³ the pack is as fast or
   *  faster. 0: always pack. */
  int direct_row_tiles = 4;
  /** Each row tile copies its row operands (the loads that move along the rows and along k,
   *  not the lanes: a's rows) for one k block into a local pack, which its lane tiles then
   *  read, where one of them is f16 or bf16 (widened once per row tile and k block, not once
   *  per lane tile) or does not lie contiguous along k (a[k, i] of aᵀ · b: its k rows a row of
   *  a apart, which a power-of-two row length puts in one L1 set). false: read them in place. */
  bool pack_rows = true;
  /** A row block of few row tiles that reads its lane operand in place (direct_row_tiles: a
   *  decode step's b[k, n]) prefetches the lines of each tile's lanes this many k rows ahead:
   *  read in place, those rows lie a row of b apart, a new page at every k that the hardware's
   *  prefetchers do not cross. 0: no prefetch (PREFETCH=0). */
  int prefetch_k = 16;
  /** A row block of at most this many rows (a decode step) whose lane operand lies along k
   *  and not along the lanes (w[j, k] of x · wᵀ, a plain weight) runs its reduction along k
   *  instead of packing that operand transposed at every call: tiles of these rows by 4 lanes
   *  (2 with 32-byte vectors), each element a vector of partial sums over consecutive k, every
   *  operand read where it lies, one horizontal sum per element at the end (the dot-product
   *  form, file comment). 0: always pack. */
  int along_k_rows = 4;
  /** The target's matrix unit multiplies bf16 pairs into f32 (AMX-BF16, its tile data granted
   *  by the OS; MATRIX=auto): one-loop contractions of two bf16 values take matrix-unit tiles of
   *  32 × 32 sums over packs of both operands instead of vector registers (file comment). */
  bool amx_bf16 = false;
  /** Likewise with AMX-INT8: products of i8 or u8 values widened to i32, summing in i32. */
  bool amx_int8 = false;
  /** The k block, lanes per lane block and rows per row block of matrix-unit tiles. The unit
   *  is fast enough that a tile's sums leaving registers between k blocks would cost more than
   *  its products (at 256 k, 1024³ took 5.5 ms, the sums' 4 MiB going to memory and back four
   *  times): k blocks of 1024, b's bf16 block of 256 lanes by 1024 k a quarter of L2. */
  int64_t matrix_depth = 1024;
  int64_t matrix_block_lanes = 256;
  int64_t matrix_block_rows = 512;
  /** The target's vectors of this many bytes take dot products of unsigned by signed bytes
   *  into i32 (VNNI `vpdpbusd`: 64 with AVX512-VNNI, 32 with AVX-VNNI; without VNNI the
   *  generated code widens the bytes for `vpmaddwd`: 64 with AVX512BW, 32 with AVX2;
   *  VNNI=auto), 0: none. Where it has no AMX-INT8, one-loop contractions of two 8-bit
   *  integers summing in i32 then take the matrix unit's nest with tiles of dot_rows rows by
   *  dot_vectors such vectors of sums in vector registers (file comment), over k blocks of
   *  matrix_depth as well (1024 k took 2.29 ms at 1024³ on one Zen 5 core, 512 k 2.41 ms,
   *  256 k 2.48 ms). */
  int dot_bytes = 0;
  int dot_rows = 6;
  int dot_vectors = 4;
  /** Likewise for products of two bf16 values summing in f32 where the target has no AMX-BF16:
   *  vectors of this many bytes take dot products of bf16 pairs into f32 (AVX512-BF16
   *  `vdpbf16ps`; BF16DOT=auto), 0: none (the f32 register tile then runs them, the packs
   *  widening bf16 to f32). The tiles are dot_rows rows by dot_vectors vectors of f32 sums, b's
   *  block packed in pairs of k as for AMX-BF16. */
  int bf16_dot_bytes = 0;
};

/** The vectors a row of a bf16 dot tile holds (RegisterTileShape::bf16_dot_bytes): AVX512-BF16
 *  comes with 32 vector registers, so 6 rows of 4 keep 24 sums and leave room for b's 4 vectors
 *  and a's broadcast, at either width. */
constexpr int kBf16DotVectors = 4;

/** Whether statement `s` is a sum reduction of f32 or f64 whose value computes across vector
 *  lanes along the statement iterators `lanes` (lane_value) and does not read the element it
 *  updates; or a matrix_statement for the matrix units `bf16` and `int8` the target has. */
bool tileable_statement(const KernelPlan& plan, const Statement& s,
                        const std::set<std::string>& lanes, bool bf16 = false, bool int8 = false);

/** Whether statement `s` is a product the matrix unit runs (file comment): `acc += a * b` with
 *  a and b loads of bf16 (each as it is or cast to f32) summing in f32 (when `bf16`), or loads
 *  of i8 or u8 each cast to i32 summing in i32 (when `int8`). */
bool matrix_statement(const KernelPlan& plan, const Statement& s, bool bf16, bool int8);

/** The load of factor `f` of such a product summing in `sum` (f32 or i32), or null. */
const ScalarExpr* matrix_factor(const KernelPlan& plan, const ScalarExpr& f, DType sum);

/** The register tile shape for a program (MICRO=auto). Where some reduction it may tile runs
 *  over several loops (a convolution's c, r and s, whose rows of 56 lanes take a tile of 32
 *  and one of the 24 lanes left): rows of 2 64-byte vectors over k blocks of 256, 8 rows where
 *  the target runs 64-byte operations at full width (32 registers), else 6. Otherwise, for a
 *  one-loop contraction (matmul, which packs b's panel): 6 rows of 4 64-byte vectors where the
 *  target runs 64-byte operations at full width (`full_width_bytes` 64: 24 of AVX-512's 32
 *  registers accumulate), 3 rows of 8 32-byte vectors elsewhere (AVX2; and AVX-512 machines
 *  that run 64-byte operations in two halves, where a 64-byte broadcast of a costs a
 *  multiply-add port and a 32-byte one does not; docs/decisions.md). One width serves the
 *  whole program: the renderer emits one set of vector types. */
RegisterTileShape automatic_tile_shape(const KernelPlan& plan, int full_width_bytes = 32);

/** Register-tiles the contractions of `nest` (the loop IR of kernel `k` of `plan`); returns how
 *  many reduction nests it tiled. */
int register_tile(const KernelPlan& plan, const Kernel& k, LoopNest& nest,
                  const RegisterTileShape& shape);

/** Whether kernel `k` has a statement register_tile may apply to (a sum reduction of f32 or f64
 *  over a domain of rank 3 or more whose value is loads, +, × and negation): schedule_kernel
 *  then leaves its bands to this step rather than to isl's tiling. */
bool has_register_tile_candidate(const KernelPlan& plan, const Kernel& k, bool bf16 = false,
                                 bool int8 = false);

}  // namespace kiln
