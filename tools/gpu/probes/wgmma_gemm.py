#!/usr/bin/env python3
"""Writes wgmma_gemm.cu: a standalone probe of the Hopper warpgroup GEMM tile Kiln's CUDA
renderer emits (wgmma.mma_async from 128-byte-swizzled shared memory fed by cp.async), with a
check against a reference kernel and a timing against cuBLAS. Build on the GPU machine:
  python3 wgmma_gemm.py > w.cu && nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a w.cu -lcublas -o w && ./w
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
#include <vector>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#define CK(x) do { auto e_ = (x); if (e_ != 0) { printf("%s:%d error %d (%s)\n", __FILE__, __LINE__, (int)e_, #x); exit(1); } } while (0)

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem(s)), "l"(g) : "memory");
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
'''
for n in (128, 256):
    for t in (0, 1):
        src += wgmma(n, t)
src += r'''

// C[M][N] = A[M][K] · B, B as [K][N] (TB = 1, N-major for wgmma) or [N][K] (TB = 0, K-major).
// 256 threads: two warpgroups, each 64 rows x BN. Depth 64 (one 128-byte swizzled row of f16).
template <int BN, int TB, int S, int INFLIGHT>
__global__ void __launch_bounds__(256, 1) gemm(const __half* a, const __half* b, __half* c, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char sh[];
  constexpr int BM = 128, D = 64;
  constexpr int A_BYTES = BM * D * 2, B_BYTES = BN * D * 2;
  __half* As = (__half*)sh;
  __half* Bs = (__half*)(sh + S * A_BYTES);
  const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
  const int wg = threadIdx.x / 128, w = (threadIdx.x / 32) % 4, q = threadIdx.x % 32;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    const int r0 = (t / tiles_n) * BM, n0 = (t % tiles_n) * BN;
    float d[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    const int nb = (K + D - 1) / D;
    auto load = [&](int blk, int st) {
      const int k0 = blk * D;
      __half* as = As + st * (BM * D);
      #pragma unroll
      for (int p = 0; p < BM * 8 / 256; ++p) {
        const int e = threadIdx.x + 256 * p, row = e / 8, ch = e % 8;
        cp16(as + row * 64 + ((ch ^ (row % 8)) * 8), a + (size_t)(r0 + row) * K + k0 + ch * 8);
      }
      __half* bs = Bs + st * (BN * D);
      if (TB) {
        #pragma unroll
        for (int p = 0; p < D * BN / 8 / 256; ++p) {
          const int e = threadIdx.x + 256 * p, kr = e / (BN / 8), cn = e % (BN / 8), atom = cn / 8, ch = cn % 8;
          cp16(bs + atom * (64 * D) + kr * 64 + ((ch ^ (kr % 8)) * 8), b + (size_t)(k0 + kr) * N + n0 + cn * 8);
        }
      } else {
        #pragma unroll
        for (int p = 0; p < BN * 8 / 256; ++p) {
          const int e = threadIdx.x + 256 * p, row = e / 8, ch = e % 8;
          cp16(bs + row * 64 + ((ch ^ (row % 8)) * 8), b + (size_t)(n0 + row) * K + k0 + ch * 8);
        }
      }
    };
    constexpr int AHEAD = INFLIGHT ? S - 2 : S - 1;
    #pragma unroll
    for (int i = 0; i < AHEAD; ++i) { if (i < nb) load(i, i); commit(); }
    for (int blk = 0; blk < nb; ++blk) {
      cp_wait<AHEAD - 1>();
      proxy_fence();
      __syncthreads();
      if (blk + AHEAD < nb) load(blk + AHEAD, (blk + AHEAD) % S);
      commit();
      const int st = blk % S;
      const uint32_t abase = smem(As + st * (BM * D)) + wg * 64 * 128;
      const uint32_t bbase = smem(Bs + st * (BN * D));
      wg_fence();
      #pragma unroll
      for (int s = 0; s < D / 16; ++s) {
        const uint64_t da = desc(abase + s * 32, 16, 1024);
        const uint64_t db = TB ? desc(bbase + s * 2048, 64 * D * 2, 1024) : desc(bbase + s * 32, 16, 1024);
        if (BN == 256) { if (TB) wgmma_n256_t1(d, da, db); else wgmma_n256_t0(d, da, db); }
        else { if (TB) wgmma_n128_t1(d, da, db); else wgmma_n128_t0(d, da, db); }
      }
      wg_commit();
      if (INFLIGHT) wg_wait<1>(); else wg_wait<0>();
    }
    wg_wait<0>();
    cp_wait<0>();
    __syncthreads();
    #pragma unroll
    for (int i = 0; i < BN / 2; i += 2) {
      const int row = r0 + wg * 64 + w * 16 + q / 4 + 8 * ((i / 2) % 2);
      const int col = n0 + (i / 4) * 8 + (q % 4) * 2;
      if (row < M && col < N) *(__half2*)&c[(size_t)row * N + col] = __floats2half2_rn(d[i], d[i + 1]);
    }
  }
}

__global__ void ref(const __half* a, const __half* b, float* c, int M, int N, int K, int tb) {
  int i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
  if (i >= M || j >= N) return;
  float s = 0;
  for (int k = 0; k < K; ++k) s += __half2float(a[(size_t)i * K + k]) * __half2float(tb ? b[(size_t)k * N + j] : b[(size_t)j * K + k]);
  c[(size_t)i * N + j] = s;
}

template <int BN, int TB, int S, int INFLIGHT>
void run(const char* name, int M, int N, int K, const __half* a, const __half* b, __half* c, float* r, cublasHandle_t h, int sms) {
  auto kern = gemm<BN, TB, S, INFLIGHT>;
  const int bytes = S * (128 * 64 * 2 + BN * 64 * 2);
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const int tiles = ((M + 127) / 128) * ((N + BN - 1) / BN);
  const int grid = tiles;
  CK(cudaMemset(c, 0xff, (size_t)M * N * 2));
  kern<<<grid, 256, bytes>>>(a, b, c, M, N, K);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  ref<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(a, b, r, M, N, K, TB);
  CK(cudaDeviceSynchronize());
  std::vector<__half> hc((size_t)M * N); std::vector<float> hr((size_t)M * N);
  CK(cudaMemcpy(hc.data(), c, hc.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), r, hr.size() * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0; size_t bad = 0;
  for (size_t i = 0; i < hc.size(); ++i) { double x = __half2float(hc[i]), y = hr[i]; if (!(x == x)) ++bad; num += (x - y) * (x - y); den += y * y; }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> tk, tc;
  __half one = __float2half(1.f), zero = __float2half(0.f);
  for (int rep = 0; rep < 30; ++rep) {
    cudaEventRecord(e0); kern<<<grid, 256, bytes>>>(a, b, c, M, N, K); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); tk.push_back(ms);
    cudaEventRecord(e0);
    // row-major C = A·B  <=>  column-major Cᵀ = Bᵀ·Aᵀ
    CK(cublasGemmEx(h, TB ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, b, CUDA_R_16F, TB ? N : K, a, CUDA_R_16F, K, &zero, c, CUDA_R_16F, N, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1); tc.push_back(ms);
  }
  std::sort(tk.begin(), tk.end()); std::sort(tc.begin(), tc.end());
  double tf = 2.0 * M * N * K / (tk[15] * 1e-3) / 1e12;
  printf("%-28s %5dx%5dx%5d relerr %.2e nan %zu  kiln %.3f ms (%.0f TF)  cublas %.3f ms  ratio %.2f\n", name, M, N, K, sqrt(num / den), bad, tk[15], tf, tc[15], tc[15] / tk[15]);
}

int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int M = 8192, N = 8192, K = 8192;
  __half *a, *b, *c; float* r;
  CK(cudaMalloc(&a, (size_t)M * K * 2)); CK(cudaMalloc(&b, (size_t)K * N * 2)); CK(cudaMalloc(&c, (size_t)M * N * 2)); CK(cudaMalloc(&r, (size_t)M * N * 4));
  std::vector<__half> h((size_t)M * K);
  srand(1); for (auto& x : h) x = __float2half((rand() / (float)RAND_MAX - 0.5f));
  CK(cudaMemcpy(a, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  for (auto& x : h) x = __float2half((rand() / (float)RAND_MAX - 0.5f));
  CK(cudaMemcpy(b, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  cublasHandle_t hd; cublasCreate(&hd);
  for (int sz : {4096, 8192}) {
    run<256, 1, 4, 1>("n256 tb S4 inflight1", sz, sz, sz, a, b, c, r, hd, sms);
    run<256, 1, 4, 0>("n256 tb S4 inflight0", sz, sz, sz, a, b, c, r, hd, sms);
    run<128, 1, 6, 1>("n128 tb S6 inflight1", sz, sz, sz, a, b, c, r, hd, sms);
    run<128, 1, 4, 1>("n128 tb S4 inflight1", sz, sz, sz, a, b, c, r, hd, sms);
    run<256, 0, 4, 1>("n256 kmajor S4 inflight1", sz, sz, sz, a, b, c, r, hd, sms);
    run<128, 0, 6, 1>("n128 kmajor S6 inflight1", sz, sz, sz, a, b, c, r, hd, sms);
  }
  return 0;
}
'''
src = src.replace("#include <vector>", "#include <vector>\n#include <algorithm>\n#include <cmath>")
sys.stdout.write(src)
