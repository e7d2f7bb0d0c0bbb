/* Loop orders around one register tile, timed against each other in one process: the experiment
 * behind docs/performance.md "Loop orders around the register tile". Every variant runs the same
 * micro-kernel as MICRO=auto on a full-width AVX-512 target (6 rows x 4 vectors of 16 floats,
 * b's panel packed, a broadcast from its rows) and differs only in the loops around it and what
 * is packed where:
 *   kiln    k block (KC) -> lane tile (64) -> pack b's KC x 64 panel -> row tiles (what
 *           scheduler/register_tile builds today)
 *   packa   as kiln, a's k block packed [M/6][KC][6] once per k block
 *   blis    N block (NC) -> k block -> pack b's KC x NC block -> row tiles -> lane tiles (the
 *           order of BLIS and OpenBLAS: a's 6 rows stay in L1 across the lane tiles, b's block
 *           in L2 across the rows)
 * Build and run (one thread; sizes M N K with M % 6 == 0, N % NC == 0, K % KC == 0):
 *   clang-19 -O2 -march=native -ffp-contract=fast tools/perf/gemm_orders.c -o /tmp/gemm_orders
 *   /tmp/gemm_orders 1020 1024 1024 15
 * Prints each variant's median and minimum in ms and GFLOP/s; every variant's result is checked
 * against a plain triple loop on a sample of elements. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define R 6
#define V 4
#define L (16 * V)
#define KC 256
#define NC 1024

typedef float vf __attribute__((vector_size(64), aligned(4)));

static vf load(const float* p) {
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void store(float* p, vf v) {
  memcpy(p, &v, sizeof v);
}

/* y[6][64] (row stride n) += a[6 rows: r * ars + k * aks] x panel[KC][64]; from 0 when first. */
static inline void tile(const float* a, int64_t ars, int64_t aks, const float* panel, float* y,
                        int64_t n, int first) {
  vf c[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++)
      c[r][v] = first ? (vf){0} : load(y + r * n + v * 16);
  for (int64_t k = 0; k < KC; k++) {
    vf b0 = load(panel + k * L), b1 = load(panel + k * L + 16), b2 = load(panel + k * L + 32),
       b3 = load(panel + k * L + 48);
    for (int r = 0; r < R; r++) {
      float s = a[r * ars + k * aks];
      c[r][0] += s * b0;
      c[r][1] += s * b1;
      c[r][2] += s * b2;
      c[r][3] += s * b3;
    }
  }
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++)
      store(y + r * n + v * 16, c[r][v]);
}

static void kiln_order(const float* a, const float* b, float* y, int64_t m, int64_t n, int64_t k,
                       float* scratch) {
  for (int64_t kt = 0; kt < k; kt += KC)
    for (int64_t jt = 0; jt < n; jt += L) {
      for (int64_t q = 0; q < KC; q++)
        memcpy(scratch + q * L, b + (kt + q) * n + jt, L * sizeof(float));
      for (int64_t it = 0; it < m; it += R)
        tile(a + it * k + kt, k, 1, scratch, y + it * n + jt, n, kt == 0);
    }
}

static void packa_order(const float* a, const float* b, float* y, int64_t m, int64_t n, int64_t k,
                        float* scratch) {
  float* pa = scratch + KC * L;
  for (int64_t kt = 0; kt < k; kt += KC) {
    for (int64_t it = 0; it < m; it += R)
      for (int64_t q = 0; q < KC; q++)
        for (int r = 0; r < R; r++)
          pa[it * KC + q * R + r] = a[(it + r) * k + kt + q];
    for (int64_t jt = 0; jt < n; jt += L) {
      for (int64_t q = 0; q < KC; q++)
        memcpy(scratch + q * L, b + (kt + q) * n + jt, L * sizeof(float));
      for (int64_t it = 0; it < m; it += R)
        tile(pa + it * KC, 1, R, scratch, y + it * n + jt, n, kt == 0);
    }
  }
}

static void blis_order(const float* a, const float* b, float* y, int64_t m, int64_t n, int64_t k,
                       float* scratch) {
  for (int64_t jc = 0; jc < n; jc += NC)
    for (int64_t kt = 0; kt < k; kt += KC) {
      for (int64_t jt = 0; jt < NC; jt += L)
        for (int64_t q = 0; q < KC; q++)
          memcpy(scratch + jt * KC + q * L, b + (kt + q) * n + jc + jt, L * sizeof(float));
      for (int64_t it = 0; it < m; it += R)
        for (int64_t jt = 0; jt < NC; jt += L)
          tile(a + it * k + kt, k, 1, scratch + jt * KC, y + it * n + jc + jt, n, kt == 0);
    }
}

typedef void (*order_fn)(const float*, const float*, float*, int64_t, int64_t, int64_t, float*);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void* p, const void* q) {
  double x = *(const double*)p, z = *(const double*)q;
  return (x > z) - (x < z);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s M N K [REPEATS]\n", argv[0]);
    return 2;
  }
  int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = atoll(argv[3]);
  int reps = argc > 4 ? atoi(argv[4]) : 15;
  if (m % R || n % NC || k % KC || reps < 1 || reps > 1000) {
    fprintf(stderr, "M %% %d, N %% %d and K %% %d must be 0; 1 to 1000 repeats\n", R, NC, KC);
    return 2;
  }
  float* a = aligned_alloc(64, (size_t)(m * k) * sizeof(float));
  float* b = aligned_alloc(64, (size_t)(k * n) * sizeof(float));
  float* y = aligned_alloc(64, (size_t)(m * n) * sizeof(float));
  float* scratch = aligned_alloc(64, (size_t)(KC * NC + m * KC) * sizeof(float));
  for (int64_t i = 0; i < m * k; i++)
    a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
  for (int64_t i = 0; i < k * n; i++)
    b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
  const char* names[] = {"kiln", "packa", "blis"};
  order_fn fns[] = {kiln_order, packa_order, blis_order};
  enum { kOrders = 3 };
  double* times = malloc(sizeof(double) * kOrders * (size_t)reps);
  for (int w = 0; w < 2; w++)  // warm-up
    for (int f = 0; f < kOrders; f++)
      fns[f](a, b, y, m, n, k, scratch);
  for (int rep = 0; rep < reps; rep++)
    for (int j = 0; j < kOrders; j++) {  // alternated, the first rotating
      int f = (j + rep) % kOrders;
      double t0 = now_ms();
      fns[f](a, b, y, m, n, k, scratch);
      times[f * reps + rep] = now_ms() - t0;
    }
  int bad = 0;
  for (int f = 0; f < kOrders; f++) {
    memset(y, 0, (size_t)(m * n) * sizeof(float));
    fns[f](a, b, y, m, n, k, scratch);
    for (int64_t s = 0; s < 64; s++) {
      int64_t i = (s * 97) % m, j = (s * 389) % n;
      double want = 0;
      for (int64_t q = 0; q < k; q++)
        want += (double)a[i * k + q] * b[q * n + j];
      if (fabs(y[i * n + j] - want) > 1e-3 * (1 + fabs(want))) bad = 1;
    }
    qsort(times + f * reps, (size_t)reps, sizeof(double), by_value);
    double med = times[f * reps + reps / 2], best = times[f * reps];
    printf("%-6s median %8.2f ms  min %8.2f ms  %6.1f GFLOP/s (median)\n", names[f], med, best,
           2.0 * m * n * k / med / 1e6);
  }
  if (bad) fprintf(stderr, "a variant's result is wrong\n");
  return bad;
}
