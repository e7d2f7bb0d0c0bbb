/* The pack of a plain weight of x · wᵀ in bf16 (w[n][k], k contiguous) into the k pairs that
 * vdpbf16ps reads: per 64-lane tile, word (k / 2) * 64 + lane holds w[lane][k] | w[lane][k + 1]
 * << 16 (the layout backends/c_style_matrix.cpp's fill writes for a 256-lane block of 1024 k).
 * Four loop orders over the same words, timed against each other in one process: the experiment
 * behind docs/performance.md "Issue 30's CPU targets, quiet" (what the bf16 x · wᵀ gap is not).
 *   kiln      lanes outer, k pairs inner (what the scheduler builds: reads along k)
 *   k_outer   k pairs outer, lanes inner (stores along the lanes, reads strided by K)
 *   block16   16 lanes x 16 pairs: 16 rows of 64 bytes read, written as 16 runs of 16 words
 *   block8    16 lanes x 8 pairs
 * Build and run (one thread):
 *   clang-19 -O3 -march=native tools/perf/bf16_pack.c -o /tmp/bf16_pack && /tmp/bf16_pack
 * Prints each variant's best time for packing all N = 1024 lanes of K = 1024 (4 blocks of 256
 * lanes), after checking that every variant writes the words the first one does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { K = 1024, N = 1024, BLOCK = 256, TILE = 64 };
static uint16_t w[N * K];
static uint32_t packed[BLOCK / TILE * (K / 2) * TILE] __attribute__((aligned(64)));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static inline uint32_t pair(int64_t lane, int64_t k) {
  return (uint32_t)w[lane * K + k] | (uint32_t)w[lane * K + k + 1] << 16;
}

static inline uint32_t* word(int64_t base, int64_t lane, int64_t p) {
  const int64_t tile = (lane - base) / TILE;
  return &packed[tile * (K / 2) * TILE + p * TILE + (lane - base) % TILE];
}

__attribute__((noinline)) static void kiln(int64_t base) {
  for (int64_t lane = base; lane < base + BLOCK; ++lane)
    for (int64_t k = 0; k < K; k += 2)
      *word(base, lane, k / 2) = pair(lane, k);
}

__attribute__((noinline)) static void k_outer(int64_t base) {
  for (int64_t t = base; t < base + BLOCK; t += TILE)
    for (int64_t k = 0; k < K; k += 2)
      for (int64_t lane = t; lane < t + TILE; ++lane)
        *word(base, lane, k / 2) = pair(lane, k);
}

static inline void block(int64_t base, int lanes, int pairs) {
  for (int64_t l0 = base; l0 < base + BLOCK; l0 += lanes)
    for (int64_t p0 = 0; p0 < K / 2; p0 += pairs) {
      uint32_t t[16][16];
      for (int l = 0; l < lanes; ++l)
        memcpy(t[l], &w[(l0 + l) * K + 2 * p0], 4 * (size_t)pairs);
      for (int p = 0; p < pairs; ++p)
        for (int l = 0; l < lanes; ++l)
          *word(base, l0 + l, p0 + p) = t[l][p];
    }
}

__attribute__((noinline)) static void block16(int64_t base) {
  block(base, 16, 16);
}

__attribute__((noinline)) static void block8(int64_t base) {
  block(base, 16, 8);
}

int main(void) {
  srand(1);
  for (int i = 0; i < N * K; ++i)
    w[i] = (uint16_t)rand();
  static uint32_t want[sizeof packed / sizeof *packed];
  void (*const variant[])(int64_t) = {kiln, k_outer, block16, block8};
  const char* const name[] = {"kiln", "k_outer", "block16", "block8"};
  for (int v = 0; v < 4; ++v) {
    memset(packed, 0, sizeof packed);
    variant[v](BLOCK);
    if (v == 0)
      memcpy(want, packed, sizeof packed);
    else if (memcmp(want, packed, sizeof packed) != 0)
      printf("%s: different words\n", name[v]);
    double best = 1e9;
    for (int r = 0; r < 50; ++r) {
      const double t0 = now();
      for (int64_t base = 0; base < N; base += BLOCK)
        variant[v](base);
      const double t = now() - t0;
      if (t < best) best = t;
    }
    printf("%-8s %.3f ms for all %d lanes of %d k\n", name[v], best * 1e3, N, K);
  }
  return 0;
}
