/* Times two builds of one kernel against each other, alternating which runs first, for an A/B
 * of generated code (tools/perf/ab_kernel.sh builds it). Usage:
 *   ab_kernel REPEATS BUFFER_BYTES SIZE...   (the sizes in the kernel plan's size-variable order)
 * Every buffer argument (inputs, outputs, temps: up to 16) gets BUFFER_BYTES of memory; the first
 * is filled with values in [-0.5, 0.5) as f32. Prints both medians and minimums in ms. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void kernel_a(void* const* buffers, const int64_t* sizes);
void kernel_b(void* const* buffers, const int64_t* sizes);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s REPEATS BUFFER_BYTES SIZE...\n", argv[0]);
    return 2;
  }
  int reps = atoi(argv[1]);
  size_t bytes = (size_t)atoll(argv[2]);
  int64_t sizes[16];
  for (int k = 3; k < argc && k < 19; ++k) sizes[k - 3] = atoll(argv[k]);
  void* buffers[16];
  for (int k = 0; k < 16; ++k) buffers[k] = calloc(bytes, 1);
  float* x = buffers[0];
  srand(1);
  for (size_t i = 0; i < bytes / sizeof(float); ++i) x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  double* ta = malloc(reps * sizeof(double));
  double* tb = malloc(reps * sizeof(double));
  for (int w = 0; w < 5; ++w) {
    kernel_a(buffers, sizes);
    kernel_b(buffers, sizes);
  }
  for (int r = 0; r < reps; ++r) {
    double t0 = now_ms();
    if (r % 2) kernel_a(buffers, sizes); else kernel_b(buffers, sizes);
    double t1 = now_ms();
    if (r % 2) kernel_b(buffers, sizes); else kernel_a(buffers, sizes);
    double t2 = now_ms();
    ta[r] = r % 2 ? t1 - t0 : t2 - t1;
    tb[r] = r % 2 ? t2 - t1 : t1 - t0;
  }
  qsort(ta, reps, sizeof(double), by_value);
  qsort(tb, reps, sizeof(double), by_value);
  printf("A median %.4f ms (min %.4f), B median %.4f ms (min %.4f), A/B %.3f\n", ta[reps / 2],
         ta[0], tb[reps / 2], tb[0], ta[reps / 2] / tb[reps / 2]);
  return 0;
}
