/** \file
 * Scheduling one kernel, in two steps. First isl computes a schedule: statement domains with
 * the size variables as parameters, access relations from the statements' index expressions
 * (intersected with their domains; non-affine accesses over-approximated to the whole buffer),
 * memory-based dependences by relation algebra, and `isl_schedule_constraints_compute_schedule`
 * with fusion. Then the transform list (scheduler/transforms.h) runs in order: tiling on the
 * schedule tree, the AST from `isl_ast_build_node_from_schedule` converted to the loop IR
 * (ir/loop_ir.h) with each loop's band annotations, then accumulator promotion
 * (scheduler/promote_accumulators.h) and the mappings (scheduler/map_loops.h).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"
#include "scheduler/transforms.h"

namespace kiln {

/** Knobs of the scheduler; the command line's --config fills them, the backend says what loops
 *  may be mapped to. */
struct ScheduleOptions {
  std::vector<int64_t> tile_sizes = {32, 32, 32};  ///< per band dimension; 0 disables tiling
  bool tile = true;
  /** Bands with fewer members stay untiled — tiling a row-wise 2-D band (softmax, layernorm)
   *  buys little and multiplies isl's AST time — except in kernels with a contraction (matmul,
   *  conv2d), where 2-D bands are tiled too. */
  int min_tile_depth = 3;
  bool parallel = true;  ///< PARALLEL: map coincident loops to threads where the backend can
  /** CPU: parallel loops sink below the reductions of their body (scheduler/interchange.h). */
  bool sink = true;
  /** CPU: contractions keep a register tile of this shape (scheduler/register_tile.h; MICRO);
   *  rows = 0 turns it off. Kernels it applies to are not tiled by isl. */
  RegisterTileShape micro;
  /** GPU: contractions run in block tiles of this shape (scheduler/gpu_tile.h; GPU_TILE);
   *  rows = 0 turns it off. Kernels it applies to are not tiled by isl. */
  GpuTileShape gpu_tile;
  /** GPU: the lanes of the output a block of the fused attention kernel computes (64 or 128;
   *  GPU_ATTN), 0 for softmax_tile_shape's choice from the head (scheduler/softmax_tile.h). */
  int attention_lanes = 0;
  /** With attention_lanes 0: a fused attention kernel whose head is known only at run time is
   *  compiled at 128 lanes too, each launch taking the lanes its head calls for
   *  (scheduler/softmax_tile.h softmax_launch_head); false: 64 lanes only. */
  bool attention_variants = true;
  /** Set by the pipeline where it schedules one of those variants: its index in
   *  softmax_lane_variants (scheduler/softmax_tile.h softmax_variant_shape); -1: none. */
  int attention_variant = -1;
  /** GPU_TMA: where the target has the TMA (sm_90a), warpgroup tiles' and the fused attention
   *  kernel's stages filled by it (GpuTileShape::tma, SoftmaxTileShape::tma); false: cp.async. */
  bool gpu_tma = true;
  /** MICRO=auto: the program's shape is automatic_tile_shape(plan, full_width_bytes) instead
   *  of `micro`. */
  bool micro_auto = true;
  /** The widest vectors, in bytes, the target runs at full width (driver/host_cpu.h sets it
   *  for host runtimes: 64 on AVX-512 machines with full-width units); MICRO=auto's one-loop
   *  tile takes them. 32 when the target is not known (goldens, the C++ API's defaults). */
  int full_width_bytes = 32;
  /** MICRO=auto: the bytes of b's packed block (RegisterTileShape::block_bytes), half the
   *  target's L2 (driver/host_cpu.h pack_block_bytes sets it for host runtimes). */
  int64_t pack_block_bytes = 512 << 10;
  /** SIMD=auto: float loops mapped to vector lanes run at `full_width_bytes` a vector; else at
   *  `simd_bytes` (32: the C compiler's preferred width under Kiln's flags; 64: AVX-512). */
  bool simd_auto = true;
  int simd_bytes = 32;
  /** MATRIX=auto: `amx_bf16` follows the target (driver/host_cpu.h sets it for host runtimes on
   *  CPUs with AMX-BF16 whose tile data the OS grants); MATRIX=1 sets it, MATRIX=0 clears it. The
   *  register tile then runs bf16 contractions on the matrix unit (scheduler/register_tile.h). */
  bool amx_auto = true;
  bool amx_bf16 = false;
  bool amx_int8 = false;  ///< likewise for AMX-INT8 (i8 and u8 products summing in i32)
  /** VNNI=auto: `dot_bytes` follows the target (driver/host_cpu.h dot_vector_bytes for host
   *  runtimes); VNNI=64 or 32 sets it, VNNI=0 clears it. 8-bit products then run on vectors of
   *  that many bytes with vpdpbusd (vpmaddwd on widened bytes without VNNI) where the target
   *  has no AMX-INT8
   *  (RegisterTileShape::dot_bytes). */
  bool dot_auto = true;
  int dot_bytes = 0;
  /** BF16DOT=auto: `bf16_dot_bytes` follows the target (driver/host_cpu.h
   *  bf16_dot_vector_bytes); BF16DOT=64 or 32 sets it, BF16DOT=0 clears it. Products of two bf16
   *  values summing in f32 then run on vectors of that many bytes with vdpbf16ps where the
   *  target has no AMX-BF16 (RegisterTileShape::bf16_dot_bytes). */
  bool bf16_dot_auto = true;
  int bf16_dot_bytes = 0;
  /** CPU: outputs written once stream (non-temporal stores) when they have at least this many
   *  bytes (scheduler/stream_stores.h; STREAM); 0: never. */
  int64_t stream_bytes = int64_t{16} << 20;
  /** CPU: the middle passes of a row prefetch the next row's lines (scheduler/prefetch_rows.h;
   *  PREFETCH). */
  bool prefetch_rows = true;
  /** CPU: register tiles read f16, bf16 or strided row operands from a pack of their rows
   *  (RegisterTileShape::pack_rows; PACK_ROWS). */
  bool pack_rows = true;
  bool vectorize = true;  ///< VECTORIZE: map innermost loops to vector lanes where it can
  /** What the backend can map loops to (backends/backend.h): threads (OpenMP) and vector lanes;
   *  PARALLEL and VECTORIZE take effect only where it can. */
  bool backend_threads = false;
  bool backend_simd = false;
  /** A GPU backend: loops map to blocks and threads (scheduler/map_gpu.h), always, since a GPU
   *  kernel that maps nothing would run on every thread; f16 and bf16 reductions accumulate in
   *  registers, as a block reduction needs. */
  bool backend_gpu = false;
  /** What the GPU target runs beyond SIMT code and shared memory, which the transforms consult
   *  (Backend::configure clears what a target lacks): tensor-core instructions (mma.sync and
   *  wgmma, ir/mma.h) for gpu_tile, asynchronous copies into shared memory (cp.async: a tile's
   *  pipeline of stages) and the fused attention kernel (online_softmax, built on both). CUDA
   *  has all three; OpenCL none: its contractions take SIMT block tiles of one stage and
   *  attention runs as separate kernels (docs/decisions.md, "OpenCL C is a sibling of the CUDA
   *  renderer"). */
  bool gpu_tensor_cores = true;
  bool gpu_async_copy = true;
  bool gpu_fused_attention = true;
  /** GPU: short rows of a block body taken by groups of a block's threads, barriers and
   *  reductions within a group (scheduler/group_rows.h); the launch geometry counts on it
   *  (backends/cuda_renderer.h). OpenCL: off (a work-group's barrier is the whole group's). */
  bool gpu_row_groups = true;
  int max_collapse = 2;    ///< parallel loops mapped together, the outermost included
  bool debug_isl = false;  ///< print isl objects to stderr (--debug 5)
  /** The isl operations a kernel's dependences, schedule and AST may take (isl's
   *  isl_ctx_set_max_operations; 0: no bound). Past it the kernel is scheduled in program order
   *  (isl::sequential_schedule, LoopNest::program_order) under a fresh bound of the same size,
   *  and past that too scheduling fails. The default is 8x what the costliest composite of ops/
   *  takes (attention, about 128k); a softmax behind a reversed permutation of rank 16 takes
   *  under 1M and 8 s, of rank 24 falls back (docs/decisions.md). */
  unsigned long max_operations = 1'000'000;
  /** The same bound in wall-clock time (isl::Ctx::limit_time; 0: none): a safety net for
   *  ILPs whose pivots grow costly (a specialised kernel took 110 s within 1M operations).
   *  Past it the kernel falls back to program order like past max_operations. Unlike the
   *  operation bound it depends on the machine, so it is set far above any schedule that
   *  succeeds in the tests (milliseconds). */
  unsigned long max_milliseconds = 5000;
};

/** The transform list for kernel `k` under `opt`. */
std::vector<Transform> transform_list(const ScheduleOptions& opt, const KernelPlan& plan,
                                      const Kernel& k);

/** What scheduling produced, with its timing. */
struct ScheduledKernel {
  LoopNest nest;
  std::vector<Transform> transforms;  ///< the list that was applied
  std::string schedule_text;  ///< isl's schedule tree; filled only with debug_isl (--debug 5)
  double milliseconds = 0;
};

/** Schedules `k` over the buffers of `plan`. Throws std::runtime_error on an isl failure, and
 *  when even the program-order fallback runs past opt.max_operations. */
ScheduledKernel schedule_kernel(const KernelPlan& plan, const Kernel& k,
                                const ScheduleOptions& opt);

/** Checks at start that the process calls the isl this build linked (libLLVM exports another
 *  isl; link order decides). Returns an error message, empty when all is well. */
std::string check_isl_build();

}  // namespace kiln
