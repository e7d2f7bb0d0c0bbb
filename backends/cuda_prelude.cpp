#include "backends/cuda_prelude.h"

namespace kiln {

const char* const kCudaPreludeHead =
    R"KILN(/* The shared functions' f16 <-> f32 are renamed: the tail defines the hardware ones. */
#define kiln_f32_to_f16 kiln_f32_to_f16_bits
#define kiln_f16_to_f32 kiln_f16_to_f32_bits
#define KILN_INF __int_as_float(0x7f800000)
#define KILN_NAN __int_as_float(0x7fc00000)
#define KILN_INT64_MIN (-9223372036854775807LL - 1)
#define KILN_INT64_MAX 9223372036854775807LL
#define KILN_RINTF rintf
#define KILN_FN __device__ __forceinline__
/* A kernel's parameter as a grid constant (sm_70 and later): addresses taken of it (the TMA's
   tensor maps) are the parameter's own, not a copy's. */
#if __CUDA_ARCH__ >= 700
#define KILN_GRID_CONSTANT __grid_constant__
#else
#define KILN_GRID_CONSTANT
#endif
#define KILN_REASSOC
#define restrict __restrict__
/* The blocks per SM a kernel with a block tile is compiled to fit (its registers per thread):
   two (at most 128 registers), one for f64 tiles, which would spill; NVRTC flags may set them
   (-DKILN_TILE_MIN_BLOCKS=1). */
#ifndef KILN_TILE_MIN_BLOCKS
#define KILN_TILE_MIN_BLOCKS 2
#endif
#ifndef KILN_TILE_MIN_BLOCKS_F64
#define KILN_TILE_MIN_BLOCKS_F64 1
#endif
/* Thread loops are unrolled by 4 (backends/cuda_renderer.h); NVRTC flags may define
   KILN_THREAD_UNROLL empty to leave them to the compiler. */
#ifndef KILN_THREAD_UNROLL
#define KILN_THREAD_UNROLL _Pragma("unroll 4")
#endif
/* The same for attention's kernel (backends/cuda_attention.cpp): two blocks per SM (16 warps, 2 x
   86 KiB of shared memory), at most 128 registers: none spilled for the plain and causal kernels,
   a few bytes for score expressions with more terms (ALiBi, a soft-cap); 1 gives ~160-220
   registers and 8 warps an SM. (Before the double-buffered kernel, two blocks spilled 650 bytes a
   thread: 1.64 ms against 1.12 on an H100.) */
#ifndef KILN_ATTENTION_MIN_BLOCKS
#define KILN_ATTENTION_MIN_BLOCKS 2
#endif
/* An attention tile of 128 lanes (a head of 65-128 elements known when compiling) on mma.sync
   keeps 64 accumulators a thread and 102 KiB of shared memory: one block an SM. (On warpgroup
   instructions it takes KILN_ATTENTION_MIN_BLOCKS: 96 KiB, 128 registers.) */
#ifndef KILN_ATTENTION_MIN_BLOCKS_WIDE
#define KILN_ATTENTION_MIN_BLOCKS_WIDE 1
#endif
)KILN";

const char* const kCudaPreludeTail = R"KILN(
/* Warp shuffles for every compute type; the narrow integers travel as int. */
KILN_FN float kiln_shfl_down(float v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KILN_FN double kiln_shfl_down(double v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KILN_FN int64_t kiln_shfl_down(int64_t v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KILN_FN uint64_t kiln_shfl_down(uint64_t v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KILN_FN int32_t kiln_shfl_down(int32_t v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KILN_FN uint32_t kiln_shfl_down(uint32_t v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
KILN_FN int16_t kiln_shfl_down(int16_t v, int d) { return (int16_t)__shfl_down_sync(0xffffffffu, (int)v, d); }
KILN_FN uint16_t kiln_shfl_down(uint16_t v, int d) { return (uint16_t)__shfl_down_sync(0xffffffffu, (int)v, d); }
KILN_FN int8_t kiln_shfl_down(int8_t v, int d) { return (int8_t)__shfl_down_sync(0xffffffffu, (int)v, d); }
KILN_FN uint8_t kiln_shfl_down(uint8_t v, int d) { return (uint8_t)__shfl_down_sync(0xffffffffu, (int)v, d); }

/* The combines of the reductions, as the statements accumulate (NaN-propagating max). */
struct kiln_sum { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct kiln_prod {
  template <class T> __device__ T operator()(T a, T b) const { return a * b; }
  /* u16 * u16 would promote to a signed int that can overflow */
  __device__ uint16_t operator()(uint16_t a, uint16_t b) const { return (uint16_t)((uint32_t)a * b); }
};
struct kiln_max {
  __device__ float operator()(float a, float b) const { return kiln_max_f32(a, b); }
  __device__ double operator()(double a, double b) const { return kiln_max_f64(a, b); }
  template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

/* Combines one value per thread of the block (blockDim.x a multiple of 32, at most 1024); the
   result is thread 0's. Every thread of the block must call it. */
template <class T, class Op>
KILN_FN T kiln_block_reduce(T v, T identity, Op op) {
  __shared__ T part[32];
  for (int d = 16; d > 0; d >>= 1) v = op(v, kiln_shfl_down(v, d));
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31u;
  __syncthreads(); /* an earlier reduction of this type has read `part` */
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? part[lane] : identity;
    for (int d = 16; d > 0; d >>= 1) v = op(v, kiln_shfl_down(v, d));
  }
  return v;
}

/* The barrier of a row group (scheduler/group_rows.h) of `threads` consecutive threads, a warp
   or the whole block: the warp's own sync, or the block's. (Named barriers for groups between
   the two would hold barrier resources that limit the blocks a multiprocessor runs.) */
KILN_FN void kiln_group_sync(int64_t threads) {
  if (threads == 32) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

/* Combines one value per thread of a row group of `threads` threads, a warp or the whole
   block; the result is the group's first thread's. Every thread of the group must call it. */
template <class T, class Op>
KILN_FN T kiln_group_reduce(T v, T identity, Op op, int64_t threads) {
  if (threads != 32) return kiln_block_reduce(v, identity, op);
  for (int d = 16; d > 0; d >>= 1) v = op(v, kiln_shfl_down(v, d));
  return v;
}

/* The barrier of a block's interleaved row groups (LoopNode::lanes_apart) of `lanes` threads
   each, a warp or more apart: the block's, none where each row has one thread. */
KILN_FN void kiln_lanes_sync(int64_t lanes) {
  if (lanes > 1) __syncthreads();
}

/* Combines one value per lane of a block's interleaved row groups, group g of the block's
   G = blockDim.x / `lanes` being threads g, g + G, ...: the result is the group's first
   thread's (thread g), its lanes combined in order. Every thread of the block must call it
   (blockDim.x at most 256). */
template <class T, class Op>
KILN_FN T kiln_lanes_reduce(T v, Op op, int64_t lanes) {
  __shared__ T part[256];
  if (lanes <= 1) return v;
  const unsigned groups = blockDim.x / (unsigned)lanes;
  __syncthreads(); /* an earlier combine of this type has read `part` */
  part[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x < groups)
    for (unsigned l = 1; l < (unsigned)lanes; ++l) v = op(v, part[threadIdx.x + l * groups]);
  return v;
}

/* Four consecutive elements of a block tile's shared operands, 16-byte aligned: one 16-byte
   shared load for floats (backends/cuda_tile.cpp). */
template <class T>
KILN_FN void kiln_lds4(T* dst, const T* src) {
  for (int i = 0; i < 4; ++i) dst[i] = src[i];
}
template <>
KILN_FN void kiln_lds4<float>(float* dst, const float* src) {
  const float4 v = *(const float4*)src;
  dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
}
template <>
KILN_FN void kiln_lds4<double>(double* dst, const double* src) {
  const double2 a = *(const double2*)src, b = *(const double2*)(src + 2);
  dst[0] = a.x, dst[1] = a.y, dst[2] = b.x, dst[3] = b.y;
}

/* 16 bytes from a 16-byte aligned address: one load (backends/cuda_tile.cpp). */
template <class T>
KILN_FN void kiln_ld16(T* dst, const T* src) {
  const uint4 v = *(const uint4*)src;
  memcpy(dst, &v, 16);
}
/* Two floats as two f16 (bf16) in one register, `lo` in the low half, rounded to nearest even:
   an mma.sync operand fragment (backends/cuda_attention.cpp). */
KILN_FN uint32_t kiln_pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
KILN_FN uint32_t kiln_pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
/* 2^x by the hardware's approximation, subnormal results flushed to zero (ex2.approx.ftz: one
   instruction where exp2f takes four to keep subnormals): attention's softmax weights, which are
   at most 1 and summed (backends/cuda_attention.cpp). */
KILN_FN float kiln_ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
/* 16 bytes of registers to a 16-byte aligned address: one store (backends/cuda_tile.cpp). */
template <class T>
KILN_FN void kiln_st16(T* dst, const T* src) {
  for (int i = 0; i < (int)(16 / sizeof(T)); ++i) dst[i] = src[i];
}
template <>
KILN_FN void kiln_st16<float>(float* dst, const float* src) {
  *(float4*)dst = make_float4(src[0], src[1], src[2], src[3]);
}
template <>
KILN_FN void kiln_st16<double>(double* dst, const double* src) {
  *(double2*)dst = make_double2(src[0], src[1]);
}
template <>
KILN_FN void kiln_st16<uint16_t>(uint16_t* dst, const uint16_t* src) {
  *(uint4*)dst = make_uint4(src[0] | (uint32_t)src[1] << 16, src[2] | (uint32_t)src[3] << 16,
                            src[4] | (uint32_t)src[5] << 16, src[6] | (uint32_t)src[7] << 16);
}
/* Asynchronous 16-byte copies from global to shared memory (backends/cuda_attention.cpp): the
   copies issued since the last commit form a group; wait_all waits for every group, wait_one
   for all but the newest. */
KILN_FN uint32_t kiln_smem_addr(const void* p);
KILN_FN void kiln_cp_async16(void* smem, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(kiln_smem_addr(smem)),
               "l"(global)
               : "memory");
}
/* The same to a shared-memory address (kiln_smem_addr's). */
KILN_FN void kiln_cp_async16_to(uint32_t smem, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(global) : "memory");
}
/* The same, `bytes` (16 or 0) of them read, the rest of the 16 zeros: an edge tile's chunk
 * outside the operand, from an address inside it. */
KILN_FN void kiln_cp_async16_zfill(uint32_t smem, const void* global, uint32_t bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(global),
               "r"(bytes)
               : "memory");
}
KILN_FN void kiln_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
KILN_FN void kiln_cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
KILN_FN void kiln_cp_async_wait_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
/* Waits for all but the newest N groups (a block tile's pipeline, backends/cuda_tile.cpp). */
template <int N>
KILN_FN void kiln_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
/* The shared-memory address of a generic pointer into shared memory (for ldmatrix). */
KILN_FN uint32_t kiln_smem_addr(const void* p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* Hopper's warpgroup instructions (sm_90a; backends/cuda_tile.cpp). A shared-memory matrix
   descriptor: the start address, the leading and stride byte offsets (16-byte units) and the
   128-byte swizzle (ir/loop_ir.h StagedOperand::swizzle). */
KILN_FN uint64_t kiln_wgmma_desc(uint32_t addr, uint32_t leading, uint32_t stride) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(leading >> 4) << 16 |
         (uint64_t)(stride >> 4) << 32 | 1ull << 62;
}
/* Descriptor `d` moved on by `bytes` (a multiple of 16): a shared address stays below 256 KiB,
   so its 14-bit field takes the sum without a carry: one 32-bit add. */
KILN_FN uint64_t kiln_wgmma_desc_at(uint64_t d, uint32_t bytes) {
  return (d & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)d + (bytes >> 4));
}
/* Orders the block's earlier register and shared-memory writes before the next wgmma. */
KILN_FN void kiln_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
KILN_FN void kiln_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
/* Waits until at most N groups of this warpgroup's wgmma are running. */
template <int N>
KILN_FN void kiln_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* Ties register r to the order of the asm statements around it: the accumulators of wgmma,
   which run asynchronously, are read only after the wait that ends them. */
KILN_FN void kiln_fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
/* Makes this thread's shared-memory writes (cp.async and stores) visible to the tensor cores'
   reads, which go through the async proxy. */
KILN_FN void kiln_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif

/* f32 -> f16 by the hardware conversion (cvt.rn: round to nearest even, subnormals kept), a NaN
   as the shared software one writes it (quiet, its sign kept): the same bits for every input,
   in a few instructions where the software one takes a branch per class of value (an unrolled
   epilogue of 32 conversions was a sixth of attention's NVRTC time). */
#undef kiln_f32_to_f16
KILN_FN uint16_t kiln_f32_to_f16(float x) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return x != x ? (uint16_t)((__float_as_uint(x) >> 16 & 0x8000u) | 0x7e00u) : h;
}

/* f16 -> f32 by the hardware conversion alone: exact for every number, subnormals too, and a
   NaN for a NaN, whose payload is the hardware's (the shared software conversion keeps it; no
   comparison of results tells NaNs apart). One instruction for every f16 value a kernel reads:
   rebuilding the software NaN took ten more, three quarters of an f16 row's instructions. */
#undef kiln_f16_to_f32
KILN_FN float kiln_f16_to_f32(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

template <class To, class From>
KILN_FN To kiln_bitcast(From a) {
  To b;
  memcpy(&b, &a, sizeof b);
  return b;
}
)KILN";

const char* const kCudaBoundsCheck = R"(
/* --config CHECK=1: every buffer access checks its element index. */
extern "C" __device__ volatile int64_t kiln_check_record[4];
__device__ volatile int64_t kiln_check_record[4];
KILN_FN int64_t kiln_check(int64_t offset, int64_t count, int64_t buffer) {
  if (offset < 0 || offset >= count) {
    kiln_check_record[0] = buffer;
    kiln_check_record[1] = offset;
    kiln_check_record[2] = count;
    kiln_check_record[3] = 1;
    __trap();
  }
  return offset;
}
/* A gathered (flag 2) or scattered (flag 3) position i along a dimension of n (ir/kernel_ir.h
   kGatherVar). */
KILN_FN int64_t kiln_check_index(int64_t i, int64_t n, int64_t buffer, int64_t flag) {
  if (i < 0 || i >= n) {
    kiln_check_record[0] = buffer;
    kiln_check_record[1] = i;
    kiln_check_record[2] = n;
    kiln_check_record[3] = flag;
    __trap();
  }
  return i;
}
)";

const char* const kCudaTmaHelpers =
    R"KILN(/* The TMA's copies and their mbarriers (sm_90; backends/cuda_tile.cpp). A stage's "full"
   barrier completes a phase when its copies' bytes have landed, its "empty" one when every warp
   has released it. Barrier arguments are shared-memory addresses (kiln_smem_addr). */
KILN_FN void kiln_mbar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* After initialising a tile's barriers: visible to the TMA, and global memory written before it
   by this kernel's threads visible to the TMA's reads. */
KILN_FN void kiln_mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async;" ::: "memory");
}
KILN_FN void kiln_mbar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(bar)
               : "memory");
}
KILN_FN void kiln_mbar_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}"
               ::"r"(bar), "r"(bytes) : "memory");
}
KILN_FN void kiln_mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n.reg .pred p;\nKILN_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra KILN_WAIT;\n}" ::"r"(bar), "r"(parity) : "memory");
}
/* One box of a tensor map into shared memory at `dst`, its bytes counted on `bar`. */
KILN_FN void kiln_tma_load(uint32_t dst, const void* map, uint32_t bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}
KILN_FN void kiln_tma_load(uint32_t dst, const void* map, uint32_t bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2),
               "r"(bar) : "memory");
}
KILN_FN void kiln_tma_load(uint32_t dst, const void* map, uint32_t bar, int c0, int c1, int c2,
                           int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst), "l"(map), "r"(c0), "r"(c1),
               "r"(c2), "r"(c3), "r"(bar) : "memory");
}
KILN_FN void kiln_tma_load(uint32_t dst, const void* map, uint32_t bar, int c0, int c1, int c2,
                           int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(dst), "l"(map), "r"(c0), "r"(c1),
               "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
)KILN";

}  // namespace kiln
