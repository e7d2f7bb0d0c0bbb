/* The "cc" runtime: the system C compiler ($CC, else cc) as a subprocess, then dlopen. The
 * artifact is the shared library's bytes; load writes them to a temporary file, dlopens it and
 * unlinks it. The portable fallback when the in-process clang runtime is unavailable. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/plugin_api.h"

extern char** environ;

static const char* kBaseFlags[] = {"-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno"};

static char* format_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}

static const char* compiler(void) {
  const char* cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}

/* Reads a whole file; returns NULL on failure. */
static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char* buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  *size = n;
  return buf;
}

static int write_file(int fd, const void* data, size_t size) {
  const char* p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* Both strings are computed once (pthread_once): compiles may run on several threads at once
 * (concurrent_compile in cc.toml), and each asks for them. */
static char version_line[512];
static void find_compiler_version(void) {
  char* line = version_line;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --version 2>/dev/null", compiler());
  FILE* p = popen(cmd, "r");
  if (!p || !fgets(line, sizeof version_line, p))
    snprintf(line, sizeof version_line, "%s (unknown version)", compiler());
  if (p) pclose(p);
  line[strcspn(line, "\n")] = '\0';
}

static const char* cc_compiler_version(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_compiler_version);
  return version_line;
}

/* The CPU model and the features -march=native reacts to, plus a hash of all flags. */
static char target[1024];
static void find_target(void) {
  static const char* wanted[] = {
      "sse4_2",   "avx",      "avx2",        "fma",         "f16c",        "avx512f",  "avx512bw",
      "avx512vl", "avx512dq", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", NULL};
  char model[256] = "unknown cpu", flags_line[8192] = "";
  FILE* f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  while (f && fgets(line, sizeof line, f)) {
    char* colon = strchr(line, ':');
    if (!colon) continue;
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, "model name", 10)) snprintf(model, sizeof model, "%s", colon + 2);
    if (!strncmp(line, "flags", 5) && !flags_line[0])
      snprintf(flags_line, sizeof flags_line, " %s ", colon + 2);
  }
  if (f) fclose(f);
  unsigned long long hash = 1469598103934665603ull;
  for (const char* c = flags_line; *c; ++c)
    hash = (hash ^ (unsigned char)*c) * 1099511628211ull;
  int n = snprintf(target, sizeof target, "x86_64 %s;", model);
  for (const char** w = wanted; *w && n < (int)sizeof target - 64; ++w) {
    char needle[64];
    snprintf(needle, sizeof needle, " %s ", *w);
    if (strstr(flags_line, needle)) n += snprintf(target + n, sizeof target - n, " %s", *w);
  }
  snprintf(target + n, sizeof target - n, "; flags %016llx", hash);
}

static const char* cc_target(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_target);
  return target;
}

/* Splits $CC on spaces (e.g. "ccache gcc") into argv, followed by flags and files. */
static int build_argv(const char* flags, const char* src, const char* out, char** argv, int cap,
                      char* cc_copy) {
  int n = 0;
  for (char* tok = strtok(cc_copy, " "); tok && n < cap - 8; tok = strtok(NULL, " "))
    argv[n++] = tok;
  for (size_t k = 0; k < sizeof kBaseFlags / sizeof *kBaseFlags; ++k)
    argv[n++] = (char*)kBaseFlags[k];
  for (const char* f = flags; f && *f && n < cap - 6; f += strlen(f) + 1)
    argv[n++] = (char*)f;
  argv[n++] = "-o";
  argv[n++] = (char*)out;
  argv[n++] = (char*)src;
  argv[n++] = "-lm";
  argv[n] = NULL;
  return n;
}

static void remove_dir(const char* dir, const char* const* files, int count) {
  char path[4200];
  for (int k = 0; k < count; ++k) {
    snprintf(path, sizeof path, "%s/%s", dir, files[k]);
    unlink(path);
  }
  rmdir(dir);
}

static int cc_compile(const char* source, const char* flags, kiln_blob* artifact, char** error) {
  const char* tmp = getenv("TMPDIR");
  char dir[4096], src[4200], out[4200], log[4200];
  snprintf(dir, sizeof dir, "%s/kiln-cc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    *error = format_error("cannot create a temporary folder %s: %s", dir, strerror(errno));
    return 1;
  }
  static const char* const files[] = {"kernel.c", "kernel.so", "cc.log"};
  snprintf(src, sizeof src, "%s/kernel.c", dir);
  snprintf(out, sizeof out, "%s/kernel.so", dir);
  snprintf(log, sizeof log, "%s/cc.log", dir);
  int fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write_file(fd, source, strlen(source)) != 0) {
    *error = format_error("cannot write %s: %s", src, strerror(errno));
    if (fd >= 0) close(fd);
    remove_dir(dir, files, 3);
    return 1;
  }
  close(fd);

  char* cc_copy = strdup(compiler());
  char* argv[512];
  build_argv(flags, src, out, argv, 512, cc_copy);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  size_t size = 0;
  if (rc != 0) {
    *error = format_error("cannot run %s: %s", compiler(), strerror(rc));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char* text = read_file(log, &size);
    *error = format_error("%s exited with status %d:\n%s", compiler(),
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1, text ? text : "");
    free(text);
    rc = 1;
  } else {
    artifact->data = read_file(out, &size);
    artifact->size = size;
    if (!artifact->data) {
      *error = format_error("cannot read %s", out);
      rc = 1;
    }
  }
  free(cc_copy);
  remove_dir(dir, files, 3);
  return rc == 0 ? 0 : 1;
}

static void* cc_load(const void* artifact, size_t size, char** error) {
  const char* tmp = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/kiln-module-XXXXXX.so", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemps(path, 3);
  if (fd < 0) {
    *error = format_error("cannot create %s: %s", path, strerror(errno));
    return NULL;
  }
  int bad = write_file(fd, artifact, size);
  close(fd);
  void* handle = bad ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    *error = bad ? format_error("cannot write %s", path) : format_error("dlopen: %s", dlerror());
  unlink(path);
  return handle;
}

static void* cc_lookup(void* module, const char* symbol) {
  return dlsym(module, symbol);
}
static void cc_unload(void* module) {
  dlclose(module);
}

static void* cc_alloc(size_t bytes, char** error) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) *error = format_error("out of memory allocating %zu bytes", bytes);
  return p;
}

static void cc_release(void* ptr) {
  free(ptr);
}

static int cc_copy(void* dst, const void* src, size_t bytes, char** error) {
  if (bytes > 0) memcpy(dst, src, bytes); /* src may be null for an empty tensor */
  return 0;
}

typedef void (*kernel_fn)(void* const*, const int64_t*);

/* The kernels are single-threaded C: no settings to take, and the geometry means nothing. */
static int cc_launch(void* kernel, void* const* buffers, const int64_t* sizes,
                     const kiln_launch* geometry, char** error) {
  (void)geometry;
  (void)error;
  ((kernel_fn)kernel)(buffers, sizes);
  return 0;
}

static int cc_synchronize(char** error) {
  return 0;
}

static const char* cc_describe_device(void) {
  static char line[2048];
  if (!line[0])
    snprintf(line, sizeof line, "host CPU (%s), compiler %s", cc_target(), cc_compiler_version());
  return line;
}

static void cc_free_blob(kiln_blob* blob) {
  free(blob->data);
  blob->data = NULL;
  blob->size = 0;
}

static void cc_free_string(char* s) {
  free(s);
}

static const kiln_plugin kTable = {
    .abi_version = KILN_PLUGIN_ABI_VERSION,
    .name = "cc",
    .version = "1",
    .compiler_version = cc_compiler_version,
    .target = cc_target,
    .compile = cc_compile,
    .prepare = NULL,
    .configure = NULL,
    .load = cc_load,
    .lookup = cc_lookup,
    .unload = cc_unload,
    .alloc = cc_alloc,
    .release = cc_release,
    .copy_to_device = cc_copy,
    .copy_to_host = cc_copy,
    .launch = cc_launch,
    .synchronize = cc_synchronize,
    .describe_device = cc_describe_device,
    .free_blob = cc_free_blob,
    .free_string = cc_free_string,
};

__attribute__((visibility("default"))) const kiln_plugin* kiln_plugin_entry(void) {
  return &kTable;
}
