/* Times NVRTC on one CUDA C file the way the cuda plugin calls it (runtimes/cuda/nvrtc.c):
 * dlopen libnvrtc, nvrtcCreateProgram "kiln.cu", nvrtcCompileProgram with the options given,
 * then the CUBIN (or the PTX with --ptx, for a compute_XX architecture: the front end and NVVM
 * without ptxas). Prints one line per compile in ms; the first of a process is the cold one
 * (it includes NVRTC's own start-up). --out FILE writes the last CUBIN or PTX; --log prints
 * NVRTC's log (else only when the compile fails).
 *   cc -O2 tools/perf/nvrtc_probe.c -ldl -o /tmp/nvrtc_probe
 *   /tmp/nvrtc_probe [--repeat N] [--ptx] [--log] [--out FILE] m.cu -- --gpu-architecture=sm_90a
 * ... tools/perf/nvrtc_times.sh runs it over the modules of docs/performance.md.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct _nvrtcProgram* nvrtcProgram;
typedef int (*create_fn)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                         const char* const*);
typedef int (*compile_fn)(nvrtcProgram, int, const char* const*);
typedef int (*size_fn)(nvrtcProgram, size_t*);
typedef int (*get_fn)(nvrtcProgram, char*);
typedef int (*destroy_fn)(nvrtcProgram*);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char* read_all(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* s = malloc(n + 1);
  if (s && fread(s, 1, n, f) != (size_t)n) n = 0;
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

int main(int argc, char** argv) {
  int repeat = 1, ptx = 0, show_log = 0, i = 1;
  const char *out = NULL, *file = NULL;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ptx"))
      ptx = 1;
    else if (!strcmp(argv[i], "--log"))
      show_log = 1;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      out = argv[++i];
    else
      file = argv[i];
  }
  const char* const* options = (const char* const*)argv + i + (i < argc);
  int n_options = argc - i - (i < argc);
  char* source = file ? read_all(file) : NULL;
  if (!source) {
    fprintf(stderr,
            "usage: nvrtc_probe [--repeat N] [--ptx] [--log] [--out FILE] FILE.cu -- OPTIONS\n");
    return 2;
  }
  double t0 = now_ms();
  void* lib = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("/usr/local/cuda/lib64/libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "no NVRTC: %s\n", dlerror());
    return 2;
  }
  create_fn create = (create_fn)dlsym(lib, "nvrtcCreateProgram");
  compile_fn compile = (compile_fn)dlsym(lib, "nvrtcCompileProgram");
  size_fn log_size = (size_fn)dlsym(lib, "nvrtcGetProgramLogSize");
  get_fn log = (get_fn)dlsym(lib, "nvrtcGetProgramLog");
  size_fn out_size = (size_fn)dlsym(lib, ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
  get_fn out_get = (get_fn)dlsym(lib, ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
  destroy_fn destroy = (destroy_fn)dlsym(lib, "nvrtcDestroyProgram");
  printf("dlopen %.1f ms\n", now_ms() - t0);
  for (int r = 0; r < repeat; ++r) {
    nvrtcProgram prog = NULL;
    double start = now_ms();
    create(&prog, source, "kiln.cu", 0, NULL, NULL);
    int rc = compile(prog, n_options, options);
    size_t size = 0;
    out_size(prog, &size);
    char* bytes = malloc(size ? size : 1);
    out_get(prog, bytes);
    double ms = now_ms() - start;
    size_t lsize = 0;
    log_size(prog, &lsize);
    if (lsize > 1 && (rc || show_log)) {
      char* text = malloc(lsize);
      log(prog, text);
      fprintf(stderr, "%s", text);
      free(text);
    }
    printf("compile %.1f ms rc %d bytes %zu\n", ms, rc, size);
    if (out && r == repeat - 1) {
      FILE* f = fopen(out, "wb");
      if (f) fwrite(bytes, 1, ptx && size ? size - 1 : size, f), fclose(f);
    }
    free(bytes);
    destroy(&prog);
    if (rc) return 1;
  }
  return 0;
}
