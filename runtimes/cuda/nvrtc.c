/** \file
 * The cuda plugin's compiler: NVRTC, dlopened at first use (libnvrtc.so.13, .so.12, .so, then
 * $CUDA_HOME/lib64 and /usr/local/cuda/lib64), compiles a module's CUDA C, program name
 * "kiln.cu", to a CUBIN for kiln_cuda_kiln_cuda_arch(), with the toolkit's include folder (for
 * cuda_fp16.h and cuda_bf16.h) found beside the library; its kernels on every core
 * (--split-compile=0) only where KILN_NVRTC_SPLIT=1 asks. Needs no GPU and no driver.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtimes/cuda/cuda_api.h"

typedef struct _nvrtcProgram* nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_INVALID_OPTION = 5 };

typedef struct nvrtc_api {
  int (*version)(int* major, int* minor);
  int (*create)(nvrtcProgram* prog, const char* src, const char* name, int num_headers,
                const char* const* headers, const char* const* include_names);
  int (*destroy)(nvrtcProgram* prog);
  int (*compile)(nvrtcProgram prog, int num_options, const char* const* options);
  int (*log_size)(nvrtcProgram prog, size_t* size);
  int (*log)(nvrtcProgram prog, char* log);
  int (*cubin_size)(nvrtcProgram prog, size_t* size);
  int (*cubin)(nvrtcProgram prog, char* cubin);
  const char* (*error_string)(int rc);
} nvrtc_api;
static const symbol_slot kNvrtcSymbols[] = {
    {"nvrtcVersion", NULL, offsetof(nvrtc_api, version)},
    {"nvrtcCreateProgram", NULL, offsetof(nvrtc_api, create)},
    {"nvrtcDestroyProgram", NULL, offsetof(nvrtc_api, destroy)},
    {"nvrtcCompileProgram", NULL, offsetof(nvrtc_api, compile)},
    {"nvrtcGetProgramLogSize", NULL, offsetof(nvrtc_api, log_size)},
    {"nvrtcGetProgramLog", NULL, offsetof(nvrtc_api, log)},
    {"nvrtcGetCUBINSize", NULL, offsetof(nvrtc_api, cubin_size)},
    {"nvrtcGetCUBIN", NULL, offsetof(nvrtc_api, cubin)},
    {"nvrtcGetErrorString", NULL, offsetof(nvrtc_api, error_string)},
};

static nvrtc_api nv;
static struct {
  pthread_once_t once;
  int ok;
  int major, minor;
  char reason[1024];
  char include[PATH_MAX + 8]; /* "-I<dir>" of the toolkit headers, or "" */
  int no_split;               /* set once NVRTC has refused kSplitCompile */
} nvrtc = {.once = PTHREAD_ONCE_INIT};

/** NVVM and ptxas compile a module's kernels on a thread each, up to one per core: the same
 *  code as one thread (docs/decisions.md, "Cold NVRTC compiles"). Opt-in (KILN_NVRTC_SPLIT=1):
 *  NVRTC 13.0's split compile now and then never returns, its threads all waiting (docs/
 *  decisions.md, "NVRTC's split compile off by default"). An NVRTC that refuses the option
 *  compiles without it. */
static const char kSplitCompile[] = "--split-compile=0";

/** Takes `dir` (malloc'ed; freed) as the include folder if it holds cuda_fp16.h. */
static int try_include(char* dir) {
  char *header = NULL, real[PATH_MAX];
  int found = dir && asprintf(&header, "%s/cuda_fp16.h", dir) > 0 && access(header, R_OK) == 0 &&
              realpath(dir, real) && strlen(real) + 3 <= sizeof nvrtc.include;
  if (found) snprintf(nvrtc.include, sizeof nvrtc.include, "-I%s", real);
  free(header);
  free(dir);
  return found;
}

static char* path_of(const char* fmt, const char* a, int length) {
  char* s = NULL;
  return asprintf(&s, fmt, length, a) < 0 ? NULL : s;
}

/** Finds the toolkit's include folder: beside the loaded library, then the usual places. */
static void find_include(void* lib) {
  struct link_map* map = NULL;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name[0]) {
    char real[PATH_MAX];
    const char* names[2] = {map->l_name, realpath(map->l_name, real) ? real : NULL};
    for (int i = 0; i < 2 && names[i]; ++i) {
      const char* slash = strrchr(names[i], '/');
      if (slash && try_include(path_of("%.*s/../include", names[i], (int)(slash - names[i]))))
        return;
    }
  }
  const char* home = getenv("CUDA_HOME");
  if (home && *home && try_include(path_of("%.*s/include", home, (int)strlen(home)))) return;
  try_include(strdup("/usr/local/cuda/include"));
}

static void nvrtc_init(void) {
  const char* home = getenv("CUDA_HOME");
  char* candidates[5] = {strdup("libnvrtc.so.13"), strdup("libnvrtc.so.12"), strdup("libnvrtc.so"),
                         NULL, NULL};
  int n = 3;
  if (home && *home) candidates[n++] = path_of("%.*s/lib64/libnvrtc.so", home, (int)strlen(home));
  candidates[n++] = strdup("/usr/local/cuda/lib64/libnvrtc.so");
  void* lib = NULL;
  char tried[900] = "";
  const char* last = "";
  for (int i = 0; i < n; ++i) {
    if (!lib && candidates[i] && !(lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL))) {
      last = dlerror();
      size_t used = strlen(tried);
      snprintf(tried + used, sizeof tried - used, "%s%s", i ? ", " : "", candidates[i]);
    }
    free(candidates[i]);
  }
  if (!lib) {
    snprintf(nvrtc.reason, sizeof nvrtc.reason,
             "NVRTC not found (tried %s; last: %s); install the CUDA toolkit or set CUDA_HOME",
             tried, last);
    return;
  }
  const char* missing =
      kiln_cuda_resolve(lib, kNvrtcSymbols, sizeof kNvrtcSymbols / sizeof *kNvrtcSymbols, &nv);
  if (missing) {
    snprintf(nvrtc.reason, sizeof nvrtc.reason, "the NVRTC library lacks %s", missing);
    return;
  }
  nv.version(&nvrtc.major, &nvrtc.minor);
  find_include(lib);
  nvrtc.ok = 1;
}

static int nvrtc_ready(void) {
  pthread_once(&nvrtc.once, nvrtc_init);
  return nvrtc.ok;
}

const char* kiln_cuda_compiler_version(void) {
  static char text[64];
  if (nvrtc_ready())
    snprintf(text, sizeof text, "NVRTC %d.%d", nvrtc.major, nvrtc.minor);
  else
    snprintf(text, sizeof text, "NVRTC (not found)");
  return text;
}
/** "k1, k2": the names of the source's `__global__ void NAME(` kernels, for messages. */
static char* kernel_names(const char* source) {
  char* out = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&out, &size);
  int n = 0;
  for (const char* p = strstr(source, "__global__"); f && p; p = strstr(p + 10, "__global__")) {
    const char* q = p + 10;
    while (isspace((unsigned char)*q))
      ++q;
    if (strncmp(q, "void", 4) != 0 || isalnum((unsigned char)q[4]) || q[4] == '_') continue;
    for (q += 4; isspace((unsigned char)*q); ++q) {
    }
    if (strncmp(q, "__launch_bounds__", 17) == 0 && (q = strchr(q, ')')) != NULL)
      for (++q; isspace((unsigned char)*q); ++q) {
      }
    const char* start = q;
    while (q && (isalnum((unsigned char)*q) || *q == '_'))
      ++q;
    if (!q || q == start) continue;
    fprintf(f, "%s%.*s", n++ ? ", " : "", (int)(q - start), start);
  }
  if (f) fclose(f);
  return out;
}

int kiln_cuda_compile(const char* source, const char* flags, kiln_blob* artifact, char** error) {
  if (!nvrtc_ready()) {
    *error = kiln_cuda_format("%s", nvrtc.reason);
    return 1;
  }
  char arch_option[96];
  snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", kiln_cuda_arch());
  const char* options[256];
  int n = 0;
  options[n++] = arch_option;
  if (nvrtc.include[0]) options[n++] = nvrtc.include;
  for (const char* f = flags; f && *f && n < 255; f += strlen(f) + 1)
    options[n++] = f;
  const char* want_split = getenv("KILN_NVRTC_SPLIT");
  const int split = want_split && strcmp(want_split, "1") == 0 &&
                    !__atomic_load_n(&nvrtc.no_split, __ATOMIC_RELAXED);
  if (split) options[n++] = kSplitCompile;
  nvrtcProgram prog = NULL;
  int rc = NVRTC_SUCCESS;
  /* A failed compile with kSplitCompile runs once more without it: NVRTC 13.0 refuses the
   * option where it lacks it (then it is dropped for good), and fails some modules with it that
   * compile without it ("error: Failed to read bitcode": the backward composite of attention in
   * f64, eight kernels). A module that is wrong either way is reported from the second try. */
  int first = NVRTC_SUCCESS;
  for (int attempt = 0; attempt < 1 + split; ++attempt) {
    if (attempt) nv.destroy(&prog);
    if ((rc = nv.create(&prog, source, "kiln.cu", 0, NULL, NULL)) != NVRTC_SUCCESS) {
      *error = kiln_cuda_format("nvrtcCreateProgram: %s", nv.error_string(rc));
      return 1;
    }
    rc = nv.compile(prog, n - attempt, options);
    if (attempt == 0) first = rc;
    if (attempt && first == NVRTC_ERROR_INVALID_OPTION && rc != NVRTC_ERROR_INVALID_OPTION)
      __atomic_store_n(&nvrtc.no_split, 1, __ATOMIC_RELAXED);
    if (rc == NVRTC_SUCCESS) break;
  }
  size_t size = 0;
  if (rc != NVRTC_SUCCESS) {
    char* log = NULL;
    if (nv.log_size(prog, &size) == NVRTC_SUCCESS && (log = calloc(1, size + 1))) nv.log(prog, log);
    char* names = kernel_names(source);
    *error = kiln_cuda_format("NVRTC failed to compile kernel%s %s for %s (%s):\n%s",
                              names && strchr(names, ',') ? "s" : "",
                              names && *names ? names : "(none found)", kiln_cuda_arch(),
                              nv.error_string(rc), log ? log : "");
    free(names);
    free(log);
  } else if ((rc = nv.cubin_size(prog, &size)) != NVRTC_SUCCESS ||
             !(artifact->data = malloc(size ? size : 1)) ||
             (rc = nv.cubin(prog, artifact->data)) != NVRTC_SUCCESS) {
    *error = kiln_cuda_format("NVRTC produced no CUBIN for %s: %s", kiln_cuda_arch(),
                              rc ? nv.error_string(rc) : "out of memory");
    free(artifact->data);
    artifact->data = NULL;
    rc = 1;
  } else {
    artifact->size = size;
  }
  nv.destroy(&prog);
  return rc != NVRTC_SUCCESS;
}
