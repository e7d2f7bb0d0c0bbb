/** \file
 * The "opencl" runtime: OpenCL C (backends/opencl_renderer.h) built from source by the
 * platform's compiler, the program's binary the artifact Kiln caches, kernels launched on one
 * in-order queue. The OpenCL ICD loader is not linked: libOpenCL.so.1 is dlopened at first use,
 * with the few types, constants and entry points used declared below, so Kiln builds without
 * OpenCL and every call that needs a device fails with "no OpenCL device found (REASON)".
 *
 * The device: $KILN_OPENCL_DEVICE, an index into every platform's devices in order or a
 * case-insensitive part of "PLATFORM DEVICE" names; else the first GPU, else the first CPU (PoCL,
 * Debian's pocl-opencl-icd), else the first device.
 *
 * Kernels take every buffer (a `__global` pointer: the cl_mem `alloc` returned), then every size
 * (a `long`), one argument each, then where the kernel has one more parameter its `__local`
 * scratch (8 bytes a work-item plus its block tiles' local memory, which the module's kernel
 * `<symbol>_shared_bytes` writes once at lookup, or the launch's dynamic shared bytes), and
 * launch with global size grid × block and local size block, as the CUDA path's geometry says
 * (include/kiln/plugin_api.h).
 * Buffers are cl_mem handles: Kiln never offsets device pointers. Launches are enqueued at once;
 * copies block; `synchronize` is clFinish. kiln_device_ms is the profiled time from the first
 * launch since the last wait to the last.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "include/kiln/plugin_api.h"

/* ---- The few OpenCL declarations used (Khronos cl.h, OpenCL 1.2). ---- */
typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct _cl_platform_id* cl_platform_id;
typedef struct _cl_device_id* cl_device_id;
typedef struct _cl_context* cl_context;
typedef struct _cl_command_queue* cl_command_queue;
typedef struct _cl_mem* cl_mem;
typedef struct _cl_program* cl_program;
typedef struct _cl_kernel* cl_kernel;
typedef struct _cl_event* cl_event;

enum {
  CL_SUCCESS = 0,
  CL_DEVICE_NOT_FOUND = -1,
  CL_BUILD_PROGRAM_FAILURE = -11,
  CL_PLATFORM_NAME = 0x0902,
  CL_PLATFORM_VERSION = 0x0901,
  CL_DEVICE_TYPE = 0x1000,
  CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
  CL_DEVICE_GLOBAL_MEM_SIZE = 0x101F,
  CL_DEVICE_NAME = 0x102B,
  CL_DRIVER_VERSION = 0x102D,
  CL_DEVICE_VERSION = 0x102F,
  CL_DEVICE_OPENCL_C_VERSION = 0x103D,
  CL_PROGRAM_BINARY_SIZES = 0x1165,
  CL_PROGRAM_BINARIES = 0x1166,
  CL_PROGRAM_BUILD_LOG = 0x1183,
  CL_KERNEL_NUM_ARGS = 0x1191,
  CL_PROFILING_COMMAND_START = 0x1282,
  CL_PROFILING_COMMAND_END = 0x1283,
};
#define CL_DEVICE_TYPE_CPU ((cl_bitfield)1 << 1)
#define CL_DEVICE_TYPE_GPU ((cl_bitfield)1 << 2)
#define CL_DEVICE_TYPE_ALL ((cl_bitfield)0xFFFFFFFF)
#define CL_MEM_READ_WRITE ((cl_bitfield)1 << 0)
#define CL_QUEUE_PROFILING_ENABLE ((cl_bitfield)1 << 1)

#define CL_FUNCTIONS(X)                                                                            \
  X(get_platforms, "clGetPlatformIDs", cl_int (*)(cl_uint, cl_platform_id*, cl_uint*))             \
  X(platform_info, "clGetPlatformInfo",                                                            \
    cl_int (*)(cl_platform_id, cl_uint, size_t, void*, size_t*))                                   \
  X(get_devices, "clGetDeviceIDs",                                                                 \
    cl_int (*)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*))                     \
  X(device_info, "clGetDeviceInfo", cl_int (*)(cl_device_id, cl_uint, size_t, void*, size_t*))     \
  X(create_context, "clCreateContext",                                                             \
    cl_context (*)(const intptr_t*, cl_uint, const cl_device_id*, void*, void*, cl_int*))          \
  X(create_queue, "clCreateCommandQueue",                                                          \
    cl_command_queue (*)(cl_context, cl_device_id, cl_bitfield, cl_int*))                          \
  X(program_source, "clCreateProgramWithSource",                                                   \
    cl_program (*)(cl_context, cl_uint, const char**, const size_t*, cl_int*))                     \
  X(program_binary, "clCreateProgramWithBinary",                                                   \
    cl_program (*)(cl_context, cl_uint, const cl_device_id*, const size_t*, const unsigned char**, \
                   cl_int*, cl_int*))                                                              \
  X(build, "clBuildProgram",                                                                       \
    cl_int (*)(cl_program, cl_uint, const cl_device_id*, const char*, void*, void*))               \
  X(build_info, "clGetProgramBuildInfo",                                                           \
    cl_int (*)(cl_program, cl_device_id, cl_uint, size_t, void*, size_t*))                         \
  X(program_info, "clGetProgramInfo", cl_int (*)(cl_program, cl_uint, size_t, void*, size_t*))     \
  X(release_program, "clReleaseProgram", cl_int (*)(cl_program))                                   \
  X(create_kernel, "clCreateKernel", cl_kernel (*)(cl_program, const char*, cl_int*))              \
  X(release_kernel, "clReleaseKernel", cl_int (*)(cl_kernel))                                      \
  X(kernel_info, "clGetKernelInfo", cl_int (*)(cl_kernel, cl_uint, size_t, void*, size_t*))        \
  X(set_arg, "clSetKernelArg", cl_int (*)(cl_kernel, cl_uint, size_t, const void*))                \
  X(enqueue, "clEnqueueNDRangeKernel",                                                             \
    cl_int (*)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*,  \
               cl_uint, const cl_event*, cl_event*))                                               \
  X(finish, "clFinish", cl_int (*)(cl_command_queue))                                              \
  X(create_buffer, "clCreateBuffer", cl_mem (*)(cl_context, cl_bitfield, size_t, void*, cl_int*))  \
  X(release_mem, "clReleaseMemObject", cl_int (*)(cl_mem))                                         \
  X(write, "clEnqueueWriteBuffer",                                                                 \
    cl_int (*)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void*, cl_uint,            \
               const cl_event*, cl_event*))                                                        \
  X(read, "clEnqueueReadBuffer",                                                                   \
    cl_int (*)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void*, cl_uint, const cl_event*, \
               cl_event*))                                                                         \
  X(copy, "clEnqueueCopyBuffer",                                                                   \
    cl_int (*)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*, \
               cl_event*))                                                                         \
  X(profiling, "clGetEventProfilingInfo", cl_int (*)(cl_event, cl_uint, size_t, void*, size_t*))   \
  X(release_event, "clReleaseEvent", cl_int (*)(cl_event))

#define CL_FIELD(field, name, type) __typeof__(type) field;
static struct { CL_FUNCTIONS(CL_FIELD) } cl;
#define CL_NAME(field, name, type) {name, offsetof(__typeof__(cl), field)},
static const struct {
  const char* name;
  size_t offset;
} kClSymbols[] = {CL_FUNCTIONS(CL_NAME)};

/* ---- State: the device, its context and queue, the events of the launches in flight. ---- */
static struct {
  pthread_once_t once;
  int ok;
  char reason[512];
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  char platform[256], platform_version[256], name[256], version[256], c_version[256];
  char driver[128];
  cl_bitfield type;
  cl_uint units;
  cl_ulong memory;
  cl_event first, last; /* the first and last launch since the last wait */
  double ms;            /* their device time after the wait; negative when unknown */
} dev = {.once = PTHREAD_ONCE_INIT, .ms = -1};

/** A module: the built program and the kernels looked up in it. */
typedef struct kmodule {
  cl_program program;
  struct kfunc** funcs;
  int count;
} kmodule;
/** A kernel: what lookup returns and launch takes. */
typedef struct kfunc {
  cl_kernel kernel;
  cl_uint num_args;      /* buffers, sizes, then (Kiln's renderer) the `__local` scratch */
  unsigned shared_bytes; /* its block tiles' local memory, past the reductions' scratch */
  char name[];
} kfunc;

static char* format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}

/** The name of an OpenCL error code (those a plugin meets), else its number. */
static const char* cl_text(cl_int rc) {
  static __thread char text[64];
  static const struct {
    cl_int code;
    const char* name;
  } names[] = {{-1, "CL_DEVICE_NOT_FOUND"},         {-2, "CL_DEVICE_NOT_AVAILABLE"},
               {-3, "CL_COMPILER_NOT_AVAILABLE"},   {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
               {-5, "CL_OUT_OF_RESOURCES"},         {-6, "CL_OUT_OF_HOST_MEMORY"},
               {-11, "CL_BUILD_PROGRAM_FAILURE"},   {-30, "CL_INVALID_VALUE"},
               {-33, "CL_INVALID_DEVICE"},          {-36, "CL_INVALID_COMMAND_QUEUE"},
               {-38, "CL_INVALID_MEM_OBJECT"},      {-42, "CL_INVALID_BINARY"},
               {-43, "CL_INVALID_BUILD_OPTIONS"},   {-44, "CL_INVALID_PROGRAM"},
               {-46, "CL_INVALID_KERNEL_NAME"},     {-48, "CL_INVALID_KERNEL"},
               {-49, "CL_INVALID_ARG_INDEX"},       {-50, "CL_INVALID_ARG_VALUE"},
               {-51, "CL_INVALID_ARG_SIZE"},        {-52, "CL_INVALID_KERNEL_ARGS"},
               {-53, "CL_INVALID_WORK_DIMENSION"},  {-54, "CL_INVALID_WORK_GROUP_SIZE"},
               {-55, "CL_INVALID_WORK_ITEM_SIZE"},  {-56, "CL_INVALID_GLOBAL_OFFSET"},
               {-61, "CL_INVALID_BUFFER_SIZE"},     {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
               {-1001, "CL_PLATFORM_NOT_FOUND_KHR"}};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (names[i].code == rc) return names[i].name;
  snprintf(text, sizeof text, "OpenCL error %d", rc);
  return text;
}

/* ---- The device. ---- */
static void device_text(cl_device_id d, cl_uint what, char* out, size_t size) {
  out[0] = 0;
  if (cl.device_info(d, what, size, out, NULL) != CL_SUCCESS) snprintf(out, size, "?");
  out[size - 1] = 0;
}

/** Picks the device: KILN_OPENCL_DEVICE (an index or part of a name), else the first GPU, else
 *  the first CPU, else the first device; fills dev.device and dev.platform or dev.reason. */
static int choose_device(void) {
  cl_platform_id platforms[16];
  cl_uint np = 0;
  cl_int rc = cl.get_platforms(16, platforms, &np);
  if (rc != CL_SUCCESS || np == 0) {
    snprintf(dev.reason, sizeof dev.reason, "clGetPlatformIDs: %s",
             rc == CL_SUCCESS ? "no platforms" : cl_text(rc));
    return 0;
  }
  const char* want = getenv("KILN_OPENCL_DEVICE");
  char* end = NULL;
  long index = want && *want ? strtol(want, &end, 10) : -1;
  int by_index = want && *want && end && *end == 0;
  cl_device_id best = NULL, first_cpu = NULL, first_any = NULL;
  cl_platform_id best_p = NULL, cpu_p = NULL, any_p = NULL;
  long at = 0;
  for (cl_uint p = 0; p < np && !best; ++p) {
    cl_device_id devices[16];
    cl_uint nd = 0;
    if (cl.get_devices(platforms[p], CL_DEVICE_TYPE_ALL, 16, devices, &nd) != CL_SUCCESS) continue;
    char pname[256] = "";
    cl.platform_info(platforms[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    pname[sizeof pname - 1] = 0;
    for (cl_uint d = 0; d < nd && !best; ++d, ++at) {
      cl_bitfield type = 0;
      cl.device_info(devices[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      char dname[256], both[600];
      device_text(devices[d], CL_DEVICE_NAME, dname, sizeof dname);
      snprintf(both, sizeof both, "%s %s", pname, dname);
      if (want && *want) {
        int match = by_index ? at == index : strcasestr(both, want) != NULL;
        if (match) best = devices[d], best_p = platforms[p];
        continue;
      }
      if (type & CL_DEVICE_TYPE_GPU) best = devices[d], best_p = platforms[p];
      if ((type & CL_DEVICE_TYPE_CPU) && !first_cpu) first_cpu = devices[d], cpu_p = platforms[p];
      if (!first_any) first_any = devices[d], any_p = platforms[p];
    }
  }
  if (!best && want && *want) {
    snprintf(dev.reason, sizeof dev.reason, "KILN_OPENCL_DEVICE=%s matches no device", want);
    return 0;
  }
  if (!best) best = first_cpu ? first_cpu : first_any, best_p = first_cpu ? cpu_p : any_p;
  if (!best) {
    snprintf(dev.reason, sizeof dev.reason, "clGetDeviceIDs: no devices");
    return 0;
  }
  dev.device = best;
  cl.platform_info(best_p, CL_PLATFORM_NAME, sizeof dev.platform, dev.platform, NULL);
  cl.platform_info(best_p, CL_PLATFORM_VERSION, sizeof dev.platform_version, dev.platform_version,
                   NULL);
  dev.platform[sizeof dev.platform - 1] = dev.platform_version[sizeof dev.platform_version - 1] = 0;
  return 1;
}

static void device_init(void) {
  void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(dev.reason, sizeof dev.reason, "%s", dlerror());
    return;
  }
  for (size_t i = 0; i < sizeof kClSymbols / sizeof *kClSymbols; ++i) {
    void* p = dlsym(lib, kClSymbols[i].name);
    if (!p) {
      snprintf(dev.reason, sizeof dev.reason, "libOpenCL.so.1 lacks %s", kClSymbols[i].name);
      return;
    }
    memcpy((char*)&cl + kClSymbols[i].offset, &p, sizeof p);
  }
  if (!choose_device()) return;
  device_text(dev.device, CL_DEVICE_NAME, dev.name, sizeof dev.name);
  device_text(dev.device, CL_DEVICE_VERSION, dev.version, sizeof dev.version);
  device_text(dev.device, CL_DEVICE_OPENCL_C_VERSION, dev.c_version, sizeof dev.c_version);
  device_text(dev.device, CL_DRIVER_VERSION, dev.driver, sizeof dev.driver);
  cl.device_info(dev.device, CL_DEVICE_TYPE, sizeof dev.type, &dev.type, NULL);
  cl.device_info(dev.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof dev.units, &dev.units, NULL);
  cl.device_info(dev.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof dev.memory, &dev.memory, NULL);
  cl_int rc = CL_SUCCESS;
  dev.context = cl.create_context(NULL, 1, &dev.device, NULL, NULL, &rc);
  if (!dev.context) {
    snprintf(dev.reason, sizeof dev.reason, "clCreateContext: %s", cl_text(rc));
    return;
  }
  dev.queue = cl.create_queue(dev.context, dev.device, CL_QUEUE_PROFILING_ENABLE, &rc);
  if (!dev.queue) {
    snprintf(dev.reason, sizeof dev.reason, "clCreateCommandQueue: %s", cl_text(rc));
    return;
  }
  dev.ok = 1;
}

static int ready(char** error) {
  pthread_once(&dev.once, device_init);
  if (!dev.ok) {
    *error = format("no OpenCL device found (%s)", dev.reason);
    return 0;
  }
  return 1;
}

static const char* opencl_compiler_version(void) {
  static char text[640];
  pthread_once(&dev.once, device_init);
  if (dev.ok)
    snprintf(text, sizeof text, "%s; %s", dev.platform_version, dev.c_version);
  else
    snprintf(text, sizeof text, "OpenCL (no device)");
  return text;
}

static const char* opencl_target(void) {
  static char text[1024];
  pthread_once(&dev.once, device_init);
  if (dev.ok)
    snprintf(text, sizeof text, "%s %s, %s, driver %s", dev.platform, dev.name, dev.version,
             dev.driver);
  else
    snprintf(text, sizeof text, "(no OpenCL device)");
  return text;
}

/* ---- Programs. ---- */
/** The build log of `program` on the device, allocated; empty when there is none. */
static char* build_log(cl_program program) {
  size_t size = 0;
  cl.build_info(program, dev.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
  char* log = calloc(size + 1, 1);
  if (log && size) cl.build_info(program, dev.device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
  return log;
}

/** Builds `program` with `options`; else sets `*error` to what failed and the build log. */
static int build_program(cl_program program, const char* options, const char* what, char** error) {
  cl_int rc = cl.build(program, 1, &dev.device, options, NULL, NULL);
  if (rc == CL_SUCCESS) return 1;
  char* log = build_log(program);
  *error = format("%s failed: %s%s%s", what, cl_text(rc), log && *log ? "\n" : "", log ? log : "");
  free(log);
  return 0;
}

/** Compiles OpenCL C: the program built from source with the descriptor's flags (spaces between
 *  them), its binary for the device the artifact. */
static int opencl_compile(const char* source, const char* flags, kiln_blob* artifact,
                          char** error) {
  if (!ready(error)) return 1;
  size_t options_size = 1;
  for (const char* f = flags; *f; f += strlen(f) + 1)
    options_size += strlen(f) + 1;
  char* options = calloc(options_size, 1);
  for (const char* f = flags; *f; f += strlen(f) + 1) {
    if (*options) strcat(options, " ");
    strcat(options, f);
  }
  cl_int rc = CL_SUCCESS;
  size_t length = strlen(source);
  cl_program program = cl.program_source(dev.context, 1, &source, &length, &rc);
  if (!program) {
    free(options);
    *error = format("clCreateProgramWithSource: %s", cl_text(rc));
    return 1;
  }
  int ok = build_program(program, options, "clBuildProgram", error);
  free(options);
  size_t size = 0;
  if (ok && (rc = cl.program_info(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL)) !=
                CL_SUCCESS) {
    *error = format("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES): %s", cl_text(rc));
    ok = 0;
  }
  unsigned char* bytes = ok ? malloc(size ? size : 1) : NULL;
  if (ok && (rc = cl.program_info(program, CL_PROGRAM_BINARIES, sizeof bytes, &bytes, NULL)) !=
                CL_SUCCESS) {
    *error = format("clGetProgramInfo(CL_PROGRAM_BINARIES): %s", cl_text(rc));
    ok = 0;
  }
  cl.release_program(program);
  if (!ok) {
    free(bytes);
    return 1;
  }
  artifact->data = bytes;
  artifact->size = size;
  return 0;
}

static void* opencl_load(const void* artifact, size_t size, char** error) {
  if (!ready(error)) return NULL;
  if (size == 0) {
    *error = format("an empty program binary");
    return NULL;
  }
  cl_int status = CL_SUCCESS, rc = CL_SUCCESS;
  const unsigned char* bytes = artifact;
  cl_program program = cl.program_binary(dev.context, 1, &dev.device, &size, &bytes, &status, &rc);
  if (!program || rc != CL_SUCCESS || status != CL_SUCCESS) {
    if (program) cl.release_program(program);
    *error = format("clCreateProgramWithBinary: %s", cl_text(rc != CL_SUCCESS ? rc : status));
    return NULL;
  }
  if (!build_program(program, "", "clBuildProgram (from the binary)", error)) {
    cl.release_program(program);
    return NULL;
  }
  kmodule* m = calloc(1, sizeof *m);
  m->program = program;
  return m;
}

/** The local memory kernel `symbol`'s block tiles take (backends/opencl_renderer.cpp), as the
 *  module's kernel `<symbol>_shared_bytes` writes it: 0 where there is none, -1 where its launch
 *  failed. (OpenCL C 1.2 has no program-scope variable the host can read, as CUDA's
 *  `<symbol>_shared_bytes` is.) */
static long long query_shared_bytes(cl_program program, const char* symbol) {
  char* name = format("%s_shared_bytes", symbol);
  cl_int rc = CL_SUCCESS;
  cl_kernel k = name ? cl.create_kernel(program, name, &rc) : NULL;
  free(name);
  if (!k) return 0;
  cl_uint value = 0;
  cl_mem out = cl.create_buffer(dev.context, CL_MEM_READ_WRITE, sizeof value, NULL, &rc);
  size_t one = 1;
  rc = out ? cl.set_arg(k, 0, sizeof out, &out) : rc;
  if (out && rc == CL_SUCCESS) rc = cl.enqueue(dev.queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
  if (out && rc == CL_SUCCESS)
    rc = cl.read(dev.queue, out, 1, 0, sizeof value, &value, 0, NULL, NULL);
  if (out) cl.release_mem(out);
  cl.release_kernel(k);
  return out && rc == CL_SUCCESS ? (long long)value : -1;
}

/** A kernel of the module, or NULL for a symbol that is none (Kiln asks for optional ones). */
static void* opencl_lookup(void* module, const char* symbol) {
  kmodule* m = module;
  for (int i = 0; i < m->count; ++i)
    if (strcmp(m->funcs[i]->name, symbol) == 0) return m->funcs[i];
  cl_int rc = CL_SUCCESS;
  cl_kernel k = cl.create_kernel(m->program, symbol, &rc);
  if (!k) return NULL;
  const long long shared = query_shared_bytes(m->program, symbol);
  if (shared < 0) {
    cl.release_kernel(k);
    return NULL;
  }
  kfunc* f = malloc(sizeof *f + strlen(symbol) + 1);
  f->kernel = k;
  f->shared_bytes = (unsigned)shared;
  f->num_args = 0;
  cl.kernel_info(k, CL_KERNEL_NUM_ARGS, sizeof f->num_args, &f->num_args, NULL);
  strcpy(f->name, symbol);
  kfunc** grown = realloc(m->funcs, (m->count + 1) * sizeof *grown);
  if (!grown) {
    cl.release_kernel(k);
    free(f);
    return NULL;
  }
  m->funcs = grown;
  m->funcs[m->count++] = f;
  return f;
}

static void opencl_unload(void* module) {
  kmodule* m = module;
  if (!m) return;
  if (dev.ok) cl.finish(dev.queue);
  for (int i = 0; i < m->count; ++i) {
    cl.release_kernel(m->funcs[i]->kernel);
    free(m->funcs[i]);
  }
  free(m->funcs);
  cl.release_program(m->program);
  free(m);
}

/* ---- Memory. ---- */
static void* opencl_alloc(size_t bytes, char** error) {
  if (!ready(error)) return NULL;
  cl_int rc = CL_SUCCESS;
  cl_mem mem = cl.create_buffer(dev.context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &rc);
  if (!mem) *error = format("clCreateBuffer of %zu bytes: %s", bytes, cl_text(rc));
  return mem;
}

static void opencl_release(void* ptr) {
  if (ptr && dev.ok) cl.release_mem((cl_mem)ptr);
}

static int opencl_copy_to_device(void* dst, const void* src, size_t bytes, char** error) {
  if (!ready(error)) return 1;
  if (bytes == 0) return 0;
  cl_int rc = cl.write(dev.queue, (cl_mem)dst, 1, 0, bytes, src, 0, NULL, NULL);
  if (rc != CL_SUCCESS) *error = format("clEnqueueWriteBuffer: %s", cl_text(rc));
  return rc != CL_SUCCESS;
}

static int opencl_copy_to_host(void* dst, const void* src, size_t bytes, char** error) {
  if (!ready(error)) return 1;
  if (bytes == 0) return 0;
  cl_int rc = cl.read(dev.queue, (cl_mem)src, 1, 0, bytes, dst, 0, NULL, NULL);
  if (rc != CL_SUCCESS) *error = format("clEnqueueReadBuffer: %s", cl_text(rc));
  return rc != CL_SUCCESS;
}

/* ---- Launches. ---- */
static int opencl_launch(void* kernel, void* const* buffers, const int64_t* sizes,
                         const kiln_launch* g, char** error) {
  if (!ready(error)) return 1;
  kfunc* f = kernel;
  cl_int rc = CL_SUCCESS;
  cl_uint arg = 0;
  for (uint32_t b = 0; b < g->num_buffers && rc == CL_SUCCESS; ++b, ++arg)
    rc = cl.set_arg(f->kernel, arg, sizeof(cl_mem), &buffers[b]);
  for (uint32_t s = 0; s < g->num_sizes && rc == CL_SUCCESS; ++s, ++arg)
    rc = cl.set_arg(f->kernel, arg, sizeof(int64_t), &sizes[s]);
  size_t global[3], local[3], items = 1;
  for (int d = 0; d < 3; ++d) {
    local[d] = g->block[d] ? g->block[d] : 1;
    global[d] = (size_t)(g->grid[d] ? g->grid[d] : 1) * local[d];
    items *= local[d];
  }
  /* The kernel's local scratch, when it takes one: 8 bytes a work-item, plus the local memory
   * of its block tiles or any dynamic local memory the launch asks for, the more of the two. */
  const size_t shared = g->shared_bytes > f->shared_bytes ? g->shared_bytes : f->shared_bytes;
  if (rc == CL_SUCCESS && f->num_args > arg)
    rc = cl.set_arg(f->kernel, arg++, 8 * items + shared, NULL);
  if (rc != CL_SUCCESS) {
    *error = format("kernel %s: clSetKernelArg %u (of %u buffers, %u sizes and the scratch): %s",
                    f->name, arg, g->num_buffers, g->num_sizes, cl_text(rc));
    return 1;
  }
  cl_uint dims = global[2] > 1 || local[2] > 1 ? 3 : global[1] > 1 || local[1] > 1 ? 2 : 1;
  cl_event ev = NULL;
  rc = cl.enqueue(dev.queue, f->kernel, dims, NULL, global, local, 0, NULL, &ev);
  if (rc != CL_SUCCESS) {
    *error =
        format("kernel %s (global %zux%zux%zu, local %zux%zux%zu): clEnqueueNDRangeKernel: %s",
               f->name, global[0], global[1], global[2], local[0], local[1], local[2], cl_text(rc));
    return 1;
  }
  if (!dev.first) {
    dev.first = ev;
  } else {
    if (dev.last) cl.release_event(dev.last);
    dev.last = ev;
  }
  return 0;
}

static int opencl_synchronize(char** error) {
  if (!ready(error)) return 1;
  cl_int rc = cl.finish(dev.queue);
  dev.ms = -1;
  if (dev.first) {
    cl_ulong start = 0, end = 0;
    cl_event last = dev.last ? dev.last : dev.first;
    if (cl.profiling(dev.first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
            CL_SUCCESS &&
        cl.profiling(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) == CL_SUCCESS &&
        end >= start)
      dev.ms = (double)(end - start) / 1e6;
    cl.release_event(dev.first);
    if (dev.last) cl.release_event(dev.last);
    dev.first = dev.last = NULL;
  }
  if (rc != CL_SUCCESS) *error = format("clFinish: %s", cl_text(rc));
  return rc != CL_SUCCESS;
}

static const char* opencl_describe_device(void) {
  static char text[1400];
  pthread_once(&dev.once, device_init);
  if (dev.ok)
    snprintf(text, sizeof text, "%s (%s), %s, %u compute units, %.1f GiB, %s, %s", dev.name,
             dev.platform,
             dev.type & CL_DEVICE_TYPE_GPU   ? "GPU"
             : dev.type & CL_DEVICE_TYPE_CPU ? "CPU"
                                             : "device",
             dev.units, dev.memory / (1024.0 * 1024.0 * 1024.0), dev.version, dev.c_version);
  else
    snprintf(text, sizeof text, "no OpenCL device (%s)", dev.reason);
  return text;
}

static void opencl_free_blob(kiln_blob* blob) {
  free(blob->data);
  blob->data = NULL;
  blob->size = 0;
}

static void opencl_free_string(char* s) {
  free(s);
}

static const kiln_plugin kTable = {
    .abi_version = KILN_PLUGIN_ABI_VERSION,
    .name = "opencl",
    .version = "1",
    .compiler_version = opencl_compiler_version,
    .target = opencl_target,
    .compile = opencl_compile,
    .prepare = NULL,
    .configure = NULL, /* the thread count means nothing to a device */
    .load = opencl_load,
    .lookup = opencl_lookup,
    .unload = opencl_unload,
    .alloc = opencl_alloc,
    .release = opencl_release,
    .copy_to_device = opencl_copy_to_device,
    .copy_to_host = opencl_copy_to_host,
    .launch = opencl_launch,
    .synchronize = opencl_synchronize,
    .describe_device = opencl_describe_device,
    .free_blob = opencl_free_blob,
    .free_string = opencl_free_string,
};

__attribute__((visibility("default"))) const kiln_plugin* kiln_plugin_entry(void) {
  return &kTable;
}

/** KILN_PLUGIN_DEVICE_MS: the profiled time, in milliseconds, from the start of the first launch
 *  the last synchronize waited for to the end of the last; -1 when there was none. */
__attribute__((visibility("default"))) double kiln_device_ms(void) {
  return dev.ms;
}

/** KILN_PLUGIN_COPY_DEVICE: copies between two buffers and waits (`kiln bench --vs copy`). */
__attribute__((visibility("default"))) int kiln_copy_device(void* dst, const void* src,
                                                            size_t bytes, char** error) {
  if (!ready(error)) return 1;
  if (bytes == 0) return 0;
  cl_event ev = NULL;
  cl_int rc = cl.copy(dev.queue, (cl_mem)src, (cl_mem)dst, 0, 0, bytes, 0, NULL, &ev);
  if (rc != CL_SUCCESS) {
    *error = format("clEnqueueCopyBuffer: %s", cl_text(rc));
    return 1;
  }
  if (dev.first) cl.release_event(dev.first);
  if (dev.last) cl.release_event(dev.last);
  dev.first = ev, dev.last = NULL;
  return opencl_synchronize(error);
}
