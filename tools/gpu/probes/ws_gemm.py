#!/usr/bin/env python3
"""Writes ws_gemm.cu: a standalone probe of warp-specialised Hopper GEMM tiles against the design
Kiln renders today (every thread copies with cp.async, a block barrier each k block; see
wgmma_gemm.py). Three kernels, each 128 x BN tiles, 64-deep stages of 128-byte swizzled rows,
wgmma from shared memory, a persistent loop over tiles:
  base  256 threads, the design Kiln renders;
  ws    384 threads: warpgroup 0 copies with cp.async and signals each stage's mbarrier through
        cp.async.mbarrier.arrive.noinc, warpgroups 1-2 wait on it, multiply, and release the
        stage on a second mbarrier; setmaxnreg moves registers from the copier to the multipliers;
  tma   the same, one thread of warpgroup 0 copying each stage with TMA (cp.async.bulk.tensor).
Checked against a reference kernel, timed against cuBLAS. On the GPU machine:
  python3 ws_gemm.py > w.cu && nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a w.cu \
    -lcublas -lcuda -o w && ./w
"""
import sys

def wgmma(n, trans_b):
    regs = n // 2
    d = ", ".join(f"%{i}" for i in range(regs))
    ops = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return f'''
__device__ __forceinline__ void wgmma_n{n}_t{trans_b}(float* d, uint64_t da, uint64_t db) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n"
               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{d}}}, %{regs}, %{regs+1}, p, 1, 1, 0, {trans_b};\\n}}\\n"
               : {ops}
               : "l"(da), "l"(db));
}}'''

src = r'''
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#define CK(x) do { auto e_ = (x); if (e_ != 0) { printf("%s:%d error %d (%s)\n", __FILE__, __LINE__, (int)e_, #x); exit(1); } } while (0)

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(uint32_t s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void bar_init(uint32_t b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint32_t b) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(b) : "memory");
}
__device__ __forceinline__ void bar_arrive_cp_async(uint32_t b) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(b) : "memory");
}
__device__ __forceinline__ void bar_expect(uint32_t b, uint32_t bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}" ::"r"(b), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t b, uint32_t parity) {
  asm volatile("{\n.reg .pred p;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}" ::"r"(b), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
template <int R> __device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }
template <int R> __device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }
'''
for n in (128, 256):
    for t in (0, 1):
        src += wgmma(n, t)
src += r'''

template <int BN, int TB>
__device__ __forceinline__ void steps(float* d, uint32_t abase, uint32_t bbase) {
  #pragma unroll
  for (int s = 0; s < 4; ++s) {
    const uint64_t da = desc(abase + s * 32, 16, 1024);
    const uint64_t db = TB ? desc(bbase + s * 2048, 64 * 64 * 2, 1024) : desc(bbase + s * 32, 16, 1024);
    if (BN == 256) { if (TB) wgmma_n256_t1(d, da, db); else wgmma_n256_t0(d, da, db); }
    else { if (TB) wgmma_n128_t1(d, da, db); else wgmma_n128_t0(d, da, db); }
  }
}

// One stage's cp.async copies by `threads` threads numbered `tid`: a [128][64] of A and B as
// [64][BN] (TB, in atoms of 64 lanes) or [BN][64], 128-byte rows swizzled.
template <int BN, int TB, int threads, int U = 64>
__device__ __forceinline__ void copy_stage(int tid, uint32_t as, uint32_t bs, const __half* a, const __half* b,
                                           int r0, int n0, int k0, int N, int K) {
  #pragma unroll U
  for (int p = 0; p < 128 * 8 / threads; ++p) {
    const int e = tid + threads * p, row = e / 8, ch = e % 8;
    cp16(as + (row * 64 + ((ch ^ (row % 8)) * 8)) * 2, a + (size_t)(r0 + row) * K + k0 + ch * 8);
  }
  if (TB) {
    #pragma unroll U
    for (int p = 0; p < 64 * BN / 8 / threads; ++p) {
      const int e = tid + threads * p, kr = e / (BN / 8), cn = e % (BN / 8), atom = cn / 8, ch = cn % 8;
      cp16(bs + (atom * (64 * 64) + kr * 64 + ((ch ^ (kr % 8)) * 8)) * 2, b + (size_t)(k0 + kr) * N + n0 + cn * 8);
    }
  } else {
    #pragma unroll U
    for (int p = 0; p < BN * 8 / threads; ++p) {
      const int e = tid + threads * p, row = e / 8, ch = e % 8;
      cp16(bs + (row * 64 + ((ch ^ (row % 8)) * 8)) * 2, b + (size_t)(n0 + row) * K + k0 + ch * 8);
    }
  }
}

template <int BN>
__device__ __forceinline__ void store(const float* d, __half* c, int r0, int n0, int wg, int M, int N) {
  const int w = (threadIdx.x / 32) % 4, q = threadIdx.x % 32;
  #pragma unroll
  for (int i = 0; i < BN / 2; i += 2) {
    const int row = r0 + wg * 64 + w * 16 + q / 4 + 8 * ((i / 2) % 2);
    const int col = n0 + (i / 4) * 8 + (q % 4) * 2;
    if (row < M && col < N) *(__half2*)&c[(size_t)row * N + col] = __floats2half2_rn(d[i], d[i + 1]);
  }
}

// The design Kiln renders: 256 threads copy and multiply, a barrier each k block.
template <int BN, int TB, int S>
__global__ void __launch_bounds__(256, 1) base(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                                               const __half* a, const __half* b, __half* c, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char sh[];
  constexpr int A_BYTES = 128 * 64 * 2, B_BYTES = BN * 64 * 2;
  const uint32_t As = smem(sh), Bs = As + S * A_BYTES;
  const int tiles_n = N / BN, tiles = (M / 128) * tiles_n, wg = threadIdx.x / 128, nb = K / 64;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int r0 = (t / tiles_n) * 128, n0 = (t % tiles_n) * BN;
    float d[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    #pragma unroll
    for (int i = 0; i < S - 2; ++i) { if (i < nb) copy_stage<BN, TB, 256>(threadIdx.x, As + i * A_BYTES, Bs + i * B_BYTES, a, b, r0, n0, i * 64, N, K); commit(); }
    for (int blk = 0; blk < nb; ++blk) {
      cp_wait<S - 3>();
      proxy_fence();
      __syncthreads();
      const int w = (blk + S - 2) % S;
      if (blk + S - 2 < nb) copy_stage<BN, TB, 256>(threadIdx.x, As + w * A_BYTES, Bs + w * B_BYTES, a, b, r0, n0, (blk + S - 2) * 64, N, K);
      commit();
      const int st = blk % S;
      wg_fence();
      steps<BN, TB>(d, As + st * A_BYTES + wg * 64 * 128, Bs + st * B_BYTES);
      wg_commit();
      wg_wait<1>();
    }
    wg_wait<0>();
    cp_wait<0>();
    __syncthreads();
    store<BN>(d, c, r0, n0, wg, M, N);
  }
}

// Warp-specialised: warpgroup 0 fills stages (cp.async by its 128 threads, or TMA by one),
// warpgroups 1 and 2 multiply 64 rows each. full[s]: the stage is filled; empty[s]: both
// multiplying warpgroups are done reading it (one arrival a warp).
template <int BN, int TB, int S, bool TMA, int PREG, int CREG>
__global__ void __launch_bounds__(384, 1) ws(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                                             const __half* a, const __half* b, __half* c, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char sh[];
  constexpr int A_BYTES = 128 * 64 * 2, B_BYTES = BN * 64 * 2;
  const uint32_t As = smem(sh), Bs = As + S * A_BYTES, full = Bs + S * B_BYTES, empty = full + 8 * S;
  const int tiles_n = N / BN, tiles = (M / 128) * tiles_n, wg = threadIdx.x / 128, nb = K / 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) { bar_init(full + 8 * s, TMA ? 1 : 128); bar_init(empty + 8 * s, 8); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {
    regs_dec<PREG>();
    if (TMA && threadIdx.x != 0) return;
    int it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int r0 = (t / tiles_n) * 128, n0 = (t % tiles_n) * BN;
      for (int blk = 0; blk < nb; ++blk, ++it) {
        const int st = it % S, use = it / S;
        if (use > 0) bar_wait(empty + 8 * st, (use - 1) & 1);
        if (TMA) {
          bar_expect(full + 8 * st, A_BYTES + B_BYTES);
          tma2d(As + st * A_BYTES, &ta, blk * 64, r0, full + 8 * st);
          if (TB) {
            #pragma unroll
            for (int atom = 0; atom < BN / 64; ++atom) tma2d(Bs + st * B_BYTES + atom * 8192, &tb, n0 + atom * 64, blk * 64, full + 8 * st);
          } else {
            tma2d(Bs + st * B_BYTES, &tb, blk * 64, n0, full + 8 * st);
          }
        } else {
          copy_stage<BN, TB, 128, 4>(threadIdx.x, As + st * A_BYTES, Bs + st * B_BYTES, a, b, r0, n0, blk * 64, N, K);
          bar_arrive_cp_async(full + 8 * st);
        }
      }
    }
    return;
  }
  regs_inc<CREG>();
  const int cw = wg - 1;
  int it = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int r0 = (t / tiles_n) * 128, n0 = (t % tiles_n) * BN;
    float d[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    int prev = -1;
    for (int blk = 0; blk < nb; ++blk, ++it) {
      const int st = it % S;
      bar_wait(full + 8 * st, (it / S) & 1);
      if (!TMA) proxy_fence();
      wg_fence();
      steps<BN, TB>(d, As + st * A_BYTES + cw * 64 * 128, Bs + st * B_BYTES);
      wg_commit();
      wg_wait<1>();
      if (prev >= 0 && threadIdx.x % 32 == 0) bar_arrive(empty + 8 * prev);
      prev = st;
    }
    wg_wait<0>();
    if (prev >= 0 && threadIdx.x % 32 == 0) bar_arrive(empty + 8 * prev);
    store<BN>(d, c, r0, n0, cw, M, N);
  }
}


// TMA without warp specialisation: 256 threads multiply as in `base`; thread 0 also issues each
// stage's TMA copies AHEAD blocks ahead, into the stage the warps released (empty[s], one arrival
// a warp after its wgmma on the stage completed). No block barrier in the k loop.
template <int BN, int TB, int S, int AHEAD>
__global__ void __launch_bounds__(256, 1) tma1(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                                               const __half* a, const __half* b, __half* c, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char sh[];
  constexpr int A_BYTES = 128 * 64 * 2, B_BYTES = BN * 64 * 2;
  const uint32_t As = smem(sh), Bs = As + S * A_BYTES, full = Bs + S * B_BYTES, empty = full + 8 * S;
  const int tiles_n = N / BN, tiles = (M / 128) * tiles_n, wg = threadIdx.x / 128, nb = K / 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) { bar_init(full + 8 * s, 1); bar_init(empty + 8 * s, 8); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  int it = 0, issued = 0;  // blocks consumed and blocks issued, counted over every tile
  auto issue = [&](int r0, int n0, int blk) {
    const int st = issued % S, use = issued / S;
    if (use > 0) bar_wait(empty + 8 * st, (use - 1) & 1);
    bar_expect(full + 8 * st, A_BYTES + B_BYTES);
    tma2d(As + st * A_BYTES, &ta, blk * 64, r0, full + 8 * st);
    if (TB) {
      #pragma unroll
      for (int atom = 0; atom < BN / 64; ++atom) tma2d(Bs + st * B_BYTES + atom * 8192, &tb, n0 + atom * 64, blk * 64, full + 8 * st);
    } else {
      tma2d(Bs + st * B_BYTES, &tb, blk * 64, n0, full + 8 * st);
    }
    ++issued;
  };
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int r0 = (t / tiles_n) * 128, n0 = (t % tiles_n) * BN;
    float d[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    if (threadIdx.x == 0)
      for (int i = 0; i < AHEAD && i < nb; ++i) issue(r0, n0, i);
    int prev = -1;
    for (int blk = 0; blk < nb; ++blk, ++it) {
      const int st = it % S;
      bar_wait(full + 8 * st, (it / S) & 1);
      wg_fence();
      steps<BN, TB>(d, As + st * A_BYTES + wg * 64 * 128, Bs + st * B_BYTES);
      wg_commit();
      wg_wait<1>();
      if (prev >= 0 && threadIdx.x % 32 == 0) bar_arrive(empty + 8 * prev);
      prev = st;
      if (threadIdx.x == 0 && blk + AHEAD < nb) issue(r0, n0, blk + AHEAD);
    }
    wg_wait<0>();
    if (prev >= 0 && threadIdx.x % 32 == 0) bar_arrive(empty + 8 * prev);
    store<BN>(d, c, r0, n0, wg, M, N);
  }
}

__global__ void ref(const __half* a, const __half* b, float* c, int M, int N, int K, int tb) {
  int i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
  if (i >= M || j >= N) return;
  float s = 0;
  for (int k = 0; k < K; ++k) s += __half2float(a[(size_t)i * K + k]) * __half2float(tb ? b[(size_t)k * N + j] : b[(size_t)j * K + k]);
  c[(size_t)i * N + j] = s;
}

CUtensorMap tmap(const __half* p, int inner, int outer, int box_inner, int box_outer) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  cuuint64_t strides[1] = {(cuuint64_t)inner * 2};
  cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
  cuuint32_t es[2] = {1, 1};
  CK(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void*)p, dims, strides, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

typedef void (*Kern)(CUtensorMap, CUtensorMap, const __half*, const __half*, __half*, int, int, int);

void run(const char* name, Kern kern, int threads, int BN, int TB, int S, bool ws, int M, int N, int K,
         const __half* a, const __half* b, __half* c, float* r, cublasHandle_t h, int sms) {
  const int bytes = S * (128 * 64 * 2 + BN * 64 * 2) + (ws ? 16 * S : 0);
  CK(cudaFuncSetAttribute((const void*)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  CUtensorMap ta = tmap(a, K, M, 64, 128);
  CUtensorMap tb = TB ? tmap(b, N, K, 64, 64) : tmap(b, K, N, 64, BN);
  const int tiles = (M / 128) * (N / BN);
  const int grid = std::min(tiles, sms);
  CK(cudaMemset(c, 0xff, (size_t)M * N * 2));
  kern<<<grid, threads, bytes>>>(ta, tb, a, b, c, M, N, K);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  if (M <= 4096) ref<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(a, b, r, M, N, K, TB);
  CK(cudaDeviceSynchronize());
  std::vector<__half> hc((size_t)M * N); std::vector<float> hr((size_t)M * N);
  CK(cudaMemcpy(hc.data(), c, hc.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), r, hr.size() * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0; size_t bad = 0;
  for (size_t i = 0; i < hc.size() && M <= 4096; ++i) { double x = __half2float(hc[i]), y = hr[i]; if (!(x == x)) ++bad; num += (x - y) * (x - y); den += y * y; }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> tk, tc;
  __half one = __float2half(1.f), zero = __float2half(0.f);
  for (int rep = 0; rep < 21; ++rep) {
    cudaEventRecord(e0); kern<<<grid, threads, bytes>>>(ta, tb, a, b, c, M, N, K); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); tk.push_back(ms);
    cudaEventRecord(e0);
    // row-major C = A·B  <=>  column-major Cᵀ = Bᵀ·Aᵀ
    CK(cublasGemmEx(h, TB ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, b, CUDA_R_16F, TB ? N : K, a, CUDA_R_16F, K, &zero, c, CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1); tc.push_back(ms);
  }
  std::sort(tk.begin(), tk.end()); std::sort(tc.begin(), tc.end());
  double tf = 2.0 * M * N * K / (tk[10] * 1e-3) / 1e12;
  printf("%-34s %5dx%5dx%5d relerr %.2e nan %zu  kiln %.3f ms (%.0f TF)  cublas %.3f ms  ratio %.2f\n", name, M, N, K, sqrt(num / den), bad, tk[10], tf, tc[10], tc[10] / tk[10]);
  fflush(stdout);
}

#define RUN(label, K_, threads, BN, TB, S, ws) run(label, (Kern)K_, threads, BN, TB, S, ws, sz, sz, sz, a, b, c, r, hd, sms)
int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int M = 8192;
  __half *a, *b, *c; float* r;
  CK(cudaMalloc(&a, (size_t)M * M * 2)); CK(cudaMalloc(&b, (size_t)M * M * 2)); CK(cudaMalloc(&c, (size_t)M * M * 2)); CK(cudaMalloc(&r, (size_t)M * M * 4));
  std::vector<__half> h((size_t)M * M);
  srand(1); for (auto& x : h) x = __float2half((rand() / (float)RAND_MAX - 0.5f));
  CK(cudaMemcpy(a, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  for (auto& x : h) x = __float2half((rand() / (float)RAND_MAX - 0.5f));
  CK(cudaMemcpy(b, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  cublasHandle_t hd; cublasCreate(&hd);
  for (int sz : {4096, 8192}) {
    RUN("base n256 tb S4", (base<256, 1, 4>), 256, 256, 1, 4, false);
    RUN("ws cp.async n256 tb S4 40/232", (ws<256, 1, 4, false, 40, 232>), 384, 256, 1, 4, true);
    RUN("tma1 n256 tb S4 ahead2", (tma1<256, 1, 4, 2>), 256, 256, 1, 4, true);
    RUN("tma1 n256 tb S4 ahead3", (tma1<256, 1, 4, 3>), 256, 256, 1, 4, true);
    RUN("ws tma n256 tb S4 40/232", (ws<256, 1, 4, true, 40, 232>), 384, 256, 1, 4, true);
    RUN("base n256 kmajor S4", (base<256, 0, 4>), 256, 256, 0, 4, false);
    RUN("tma1 n256 kmajor S4 ahead2", (tma1<256, 0, 4, 2>), 256, 256, 0, 4, true);
    RUN("ws tma n256 kmajor S4", (ws<256, 0, 4, true, 40, 232>), 384, 256, 0, 4, true);
    RUN("ws tma n256 tb S3", (ws<256, 1, 3, true, 40, 232>), 384, 256, 1, 3, true);
    RUN("tma1 n256 tb S3 ahead2", (tma1<256, 1, 3, 2>), 256, 256, 1, 3, true);
    RUN("ws tma n128 tb S6", (ws<128, 1, 6, true, 40, 232>), 384, 128, 1, 6, true);
  }
  return 0;
}
'''
sys.stdout.write(src)
