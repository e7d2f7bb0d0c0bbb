/** \file
 * The "cuda" runtime: NVRTC compiles CUDA C to a CUBIN for the present GPU's architecture
 * (nvrtc.c) and the CUDA driver API loads and runs it (this file). Neither is linked:
 * libcuda.so.1 and NVRTC are dlopened at first use, with the few types and entry points used
 * declared in cuda_api.h, so Kiln builds, and runs every command that needs no GPU, on a
 * machine with no driver and no GPU. Without a device every call that needs one fails with
 * "no CUDA device found (REASON)".
 *
 * Kernels follow plugin_api.h's CUDA convention: one by-value struct of `num_buffers` device
 * pointers then `num_sizes` int64_t. Launches are deferred: `launch` records one, and the next
 * synchronize, copy, alloc, release or unload runs the pending sequence on the plugin's stream.
 * One launch runs as cuLaunchKernel; two or more as a CUDA graph (one kernel node after the
 * other), cached by the sequence's shape (kernels and geometries) and replayed with updated
 * parameters. KILN_CUDA_GRAPHS=0 launches one by one; KILN_CUDA_ARCH names the architecture
 * to compile for when no device is present (default sm_90).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/cuda/cuda_api.h"
#include "runtimes/cuda/tensor_maps.h"

static const symbol_slot kCuSymbols[] = {CU_FUNCTIONS(CU_SYMBOL)};

/* ---- State: the loaded libraries, the device, pending launches, cached graphs. ---- */
static cu_api cu;
static struct {
  pthread_once_t once;
  int ok;           /* device, context, stream and events are ready */
  char reason[512]; /* why not */
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUstream external; /* the last caller-given stream, synchronized by synchronize */
  int stream_busy;   /* a flushed sequence may still run on `stream` */
  CUevent start, end;
  int timed; /* start and end bracket the last flushed sequence */
  int major, minor, sms, driver;
  int whole_grid; /* KILN_CUDA_RESIDENT_GRID=0: launch_blocks keeps the geometry's grid */
  size_t memory;
  char name[256];
  char* inflight; /* the kernels of the last flushed sequence, until a synchronize succeeds */
  char* deferred; /* an error of a call that cannot report one (release, unload) */
} dev = {.once = PTHREAD_ONCE_INIT};

typedef struct kmodule kmodule;
/** A kernel: what lookup returns and launch takes. */
typedef struct kfunc {
  CUfunction f;
  long param_bytes;      /* its parameter's size; -1 unknown, -2 more than one parameter */
  unsigned shared_limit; /* dynamic shared memory allowed beyond the default 48 KiB */
  /* dynamic shared memory the kernel itself asks for: its module's u32 `<name>_shared_bytes`
     (a block tile's staged operands, backends/cuda_tile.cpp); launches get at least this */
  unsigned shared_bytes;
  /* its module's u32 `<name>_whole_grid` is nonzero: its tiles' work differs (attention's key
     loop over a causal triangle), so every tile gets a block of its own and the hardware
     balances them, whatever shared memory it asks for */
  unsigned whole_grid;
  /* its module's u32 `<name>_resident_grid` is nonzero: its `block.x` loop strides over rows
     that each take a block's share alike (interleaved row groups, scheduler/map_gpu.h), so its
     launches take at most one resident wave, as a tile kernel's do */
  unsigned resident_grid;
  /* the blocks the device holds at once at `resident_key` (block size, shared bytes); 0 unknown */
  unsigned resident;
  unsigned long resident_key;
  char name[];
} kfunc;
struct kmodule {
  CUmodule m;
  kfunc** funcs;
  int count;
};

/** One recorded launch; `params` is the packed parameter struct. */
typedef struct launch_rec {
  kfunc* k;
  unsigned grid[3], block[3], shared_bytes;
  size_t bytes, cap;
  unsigned char* params;
} launch_rec;
static struct {
  launch_rec* recs;
  int count, cap;
} pending;

/** An instantiated graph for one sequence shape, with the parameters its nodes hold. */
typedef struct graph_entry {
  int count; /* 0: free */
  launch_rec* recs;
  CUgraph graph;
  CUgraphExec exec;
  CUgraphNode* nodes;
  unsigned long long used;
} graph_entry;
enum { kGraphCacheSize = 16 };
static graph_entry graphs[kGraphCacheSize];
static unsigned long long graph_clock;

/* ---- Helpers. ---- */
char* kiln_cuda_format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}

/** "CUDA_ERROR_X: text" for a driver result. */
static const char* cu_text(CUresult rc) {
  static __thread char text[512];
  const char *name = NULL, *str = NULL;
  if (cu.error_name) cu.error_name(rc, &name);
  if (cu.error_string) cu.error_string(rc, &str);
  if (name)
    snprintf(text, sizeof text, "%s: %s", name, str ? str : "?");
  else
    snprintf(text, sizeof text, "CUDA error %d", rc);
  return text;
}

/** Resolves `count` symbols into `api`; returns the first missing name, or NULL. */
const char* kiln_cuda_resolve(void* lib, const symbol_slot* slots, size_t count, void* api) {
  for (size_t i = 0; i < count; ++i) {
    void* p = dlsym(lib, slots[i].name);
    if (!p && slots[i].fallback) p = dlsym(lib, slots[i].fallback);
    if (!p) return slots[i].name;
    memcpy((char*)api + slots[i].offset, &p, sizeof p);
  }
  return NULL;
}

static void set_deferred(char* error) {
  if (!dev.deferred)
    dev.deferred = error;
  else
    free(error);
}

static int take_deferred(char** error) {
  if (!dev.deferred) return 0;
  *error = dev.deferred;
  dev.deferred = NULL;
  return 1;
}

/* ---- The device. ---- */
static void device_init(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(dev.reason, sizeof dev.reason, "%s", dlerror());
    return;
  }
  const char* missing =
      kiln_cuda_resolve(lib, kCuSymbols, sizeof kCuSymbols / sizeof *kCuSymbols, &cu);
  if (missing) {
    snprintf(dev.reason, sizeof dev.reason, "libcuda.so.1 lacks %s: the driver is too old",
             missing);
    return;
  }
  void* p = dlsym(lib, "cuFuncGetParamInfo");
  memcpy(&cu.param_info, &p, sizeof p);
  p = dlsym(lib, "cuModuleGetGlobal_v2");
  memcpy(&cu.module_global, &p, sizeof p);
  p = dlsym(lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  memcpy(&cu.occupancy, &p, sizeof p);
  p = dlsym(lib, "cuTensorMapEncodeTiled");
  memcpy(&cu.tensor_map_encode, &p, sizeof p);
  const char* grid_env = getenv("KILN_CUDA_RESIDENT_GRID");
  dev.whole_grid = grid_env && strcmp(grid_env, "0") == 0;
  int count = 0;
  CUresult rc;
  const char* step;
#define TRY(name, call)                             \
  do {                                              \
    step = name;                                    \
    if ((rc = (call)) != CUDA_SUCCESS) goto failed; \
  } while (0)
  TRY("cuInit", cu.init(0));
  TRY("cuDeviceGetCount", cu.device_count(&count));
  if (count == 0) {
    snprintf(dev.reason, sizeof dev.reason, "cuDeviceGetCount: no devices");
    return;
  }
  TRY("cuDeviceGet", cu.device_get(&dev.dev, 0));
  TRY("cuDeviceGetAttribute",
      cu.device_attribute(&dev.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev.dev));
  TRY("cuDeviceGetAttribute",
      cu.device_attribute(&dev.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev.dev));
  TRY("cuDeviceGetAttribute",
      cu.device_attribute(&dev.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev.dev));
  TRY("cuDeviceGetName", cu.device_name(dev.name, sizeof dev.name, dev.dev));
  TRY("cuDeviceTotalMem", cu.device_memory(&dev.memory, dev.dev));
  TRY("cuDriverGetVersion", cu.driver_version(&dev.driver));
  TRY("cuDevicePrimaryCtxRetain", cu.primary_ctx(&dev.ctx, dev.dev));
  TRY("cuCtxSetCurrent", cu.set_ctx(dev.ctx));
  TRY("cuStreamCreate", cu.stream_create(&dev.stream, CU_STREAM_NON_BLOCKING));
  TRY("cuEventCreate", cu.event_create(&dev.start, CU_EVENT_DEFAULT));
  TRY("cuEventCreate", cu.event_create(&dev.end, CU_EVENT_DEFAULT));
#undef TRY
  dev.ok = 1;
  return;
failed:
  snprintf(dev.reason, sizeof dev.reason, "%s: %s", step, cu_text(rc));
}

/** Readies the device and makes its context current; else sets `*error`. */
static int ready(char** error) {
  pthread_once(&dev.once, device_init);
  if (!dev.ok) {
    *error = kiln_cuda_format("no CUDA device found (%s)", dev.reason);
    return 0;
  }
  cu.set_ctx(dev.ctx);
  return 1;
}

/** The architecture compiled for: the device's, else $KILN_CUDA_ARCH, else sm_90a. A Hopper
 *  device (9.0) gets its architecture-specific target, sm_90a, whose warpgroup instructions
 *  (wgmma) the scheduler then uses: the CUBIN runs on that device only, as every CUBIN Kiln
 *  compiles does. */
const char* kiln_cuda_arch(void) {
  static __thread char text[64];
  pthread_once(&dev.once, device_init);
  const char* env = getenv("KILN_CUDA_ARCH");
  if (dev.ok)
    snprintf(text, sizeof text, "sm_%d%d%s", dev.major, dev.minor,
             dev.major == 9 && dev.minor == 0 ? "a" : "");
  else
    snprintf(text, sizeof text, "%s", env && *env ? env : "sm_90a");
  return text;
}

static const char* cuda_target(void) {
  static char text[512];
  const char* sm = kiln_cuda_arch();
  if (dev.ok)
    snprintf(text, sizeof text, "%s %s, driver %d.%d", sm, dev.name, dev.driver / 1000,
             dev.driver % 1000 / 10);
  else
    snprintf(text, sizeof text, "%s (no device)", sm);
  return text;
}

/* ---- Graphs and the pending sequence. ---- */
static int graphs_enabled(void) {
  const char* env = getenv("KILN_CUDA_GRAPHS");
  return !(env && strcmp(env, "0") == 0);
}

/** The blocks of a launch of `k`: the geometry's, but at most one wave of what the device holds
 *  at once for a kernel that asks for its own dynamic shared memory (a block tile, whose
 *  `block.x` loop strides over its tiles: backends/cuda_renderer.h). The geometry sizes a grid
 *  by points (up to kCudaMaxBlocks); a tile kernel holds one or two blocks a multiprocessor, and
 *  every block past the first wave would start, find no tile of its own left and end, each
 *  taking the multiprocessor's whole shared memory while it does. KILN_CUDA_RESIDENT_GRID=0
 *  launches the geometry as given (to measure the difference). */
static unsigned launch_blocks(kfunc* k, unsigned grid, unsigned block, unsigned shared) {
  if ((!k->shared_bytes && !k->resident_grid) || k->whole_grid || !cu.occupancy || dev.whole_grid)
    return grid;
  unsigned long key = ((unsigned long)block << 32) | shared;
  if (k->resident_key != key) {
    int per_sm = 0;
    k->resident_key = key;
    k->resident = cu.occupancy(&per_sm, k->f, (int)block, shared) == CUDA_SUCCESS && per_sm > 0
                      ? (unsigned)per_sm * (unsigned)dev.sms
                      : 0;
  }
  return k->resident && k->resident < grid ? k->resident : grid;
}

static void graph_free(graph_entry* e) {
  if (!e->count) return;
  if (e->exec) cu.exec_destroy(e->exec);
  if (e->graph) cu.graph_destroy(e->graph);
  for (int i = 0; i < e->count; ++i)
    free(e->recs[i].params);
  free(e->recs);
  free(e->nodes);
  memset(e, 0, sizeof *e);
}

static void graph_cache_clear(void) {
  for (int i = 0; i < kGraphCacheSize; ++i)
    graph_free(&graphs[i]);
}

/** "kernel K (grid AxBxC, block AxBxC)" of one launch. */
static void describe_launch(FILE* f, const launch_rec* r) {
  fprintf(f, "kernel %s (grid %ux%ux%u, block %ux%ux%u)", r->k->name, r->grid[0], r->grid[1],
          r->grid[2], r->block[0], r->block[1], r->block[2]);
}

/** "kernel A (...), kernel B (...)" of `count` launches. */
static char* describe_sequence(const launch_rec* recs, int count) {
  char* out = NULL;
  size_t size = 0;
  FILE* f = open_memstream(&out, &size);
  for (int i = 0; f && i < count; ++i) {
    if (i) fputs(", ", f);
    describe_launch(f, &recs[i]);
  }
  if (f) fclose(f);
  return out;
}

static char* launch_error(const launch_rec* recs, int count, const char* call, CUresult rc) {
  char* who = describe_sequence(recs, count);
  char* e = kiln_cuda_format("%s: %s failed: %s", who ? who : "kernels", call, cu_text(rc));
  free(who);
  return e;
}

static cu_node_params node_params(const launch_rec* r, void** slot) {
  cu_node_params p;
  memset(&p, 0, sizeof p);
  p.func = r->k->f;
  memcpy(p.grid, r->grid, sizeof p.grid);
  memcpy(p.block, r->block, sizeof p.block);
  p.shared_bytes = r->shared_bytes;
  *slot = r->params;
  p.kernel_params = r->bytes ? slot : NULL;
  return p;
}

static int same_shape(const launch_rec* a, const launch_rec* b) {
  return a->k == b->k && !memcmp(a->grid, b->grid, sizeof a->grid) &&
         !memcmp(a->block, b->block, sizeof a->block) && a->shared_bytes == b->shared_bytes &&
         a->bytes == b->bytes;
}

/** Builds, instantiates and caches the graph of `recs` in the least recently used slot. */
static graph_entry* graph_build(const launch_rec* recs, int count, char** error) {
  graph_entry* e = &graphs[0];
  for (int i = 1; i < kGraphCacheSize && e->count; ++i)
    if (!graphs[i].count || graphs[i].used < e->used) e = &graphs[i];
  graph_free(e);
  e->count = count;
  e->recs = calloc(count, sizeof *e->recs);
  e->nodes = calloc(count, sizeof *e->nodes);
  CUresult rc = cu.graph_create(&e->graph, 0);
  if (rc) *error = launch_error(recs, count, "cuGraphCreate", rc);
  for (int i = 0; !rc && i < count; ++i) {
    void* slot;
    cu_node_params p = node_params(&recs[i], &slot);
    rc = cu.graph_add_kernel(&e->nodes[i], e->graph, i ? &e->nodes[i - 1] : NULL, i ? 1 : 0, &p);
    if (rc) *error = launch_error(&recs[i], 1, "cuGraphAddKernelNode", rc);
    e->recs[i] = recs[i];
    e->recs[i].params = malloc(recs[i].bytes ? recs[i].bytes : 1);
    memcpy(e->recs[i].params, recs[i].params, recs[i].bytes);
  }
  if (!rc && (rc = cu.graph_instantiate(&e->exec, e->graph, 0)))
    *error = launch_error(recs, count, "cuGraphInstantiate", rc);
  if (rc) {
    graph_free(e);
    return NULL;
  }
  return e;
}

/** Runs `recs` as a graph: a cached one of the same shape, with its parameters updated. */
static int launch_graph(const launch_rec* recs, int count, char** error) {
  graph_entry* e = NULL;
  for (int i = 0; i < kGraphCacheSize && !e; ++i) {
    graph_entry* g = &graphs[i];
    int same = g->count == count;
    for (int j = 0; same && j < count; ++j)
      same = same_shape(&g->recs[j], &recs[j]);
    if (same) e = g;
  }
  if (!e && !(e = graph_build(recs, count, error))) return 1;
  e->used = ++graph_clock;
  for (int i = 0; i < count; ++i) {
    if (!memcmp(e->recs[i].params, recs[i].params, recs[i].bytes)) continue;
    void* slot;
    cu_node_params p = node_params(&recs[i], &slot);
    CUresult rc = cu.exec_set_params(e->exec, e->nodes[i], &p);
    if (rc) {
      *error = launch_error(&recs[i], 1, "cuGraphExecKernelNodeSetParams", rc);
      graph_free(e);
      return 1;
    }
    memcpy(e->recs[i].params, recs[i].params, recs[i].bytes);
  }
  CUresult rc = cu.graph_launch(e->exec, dev.stream);
  if (rc) *error = launch_error(recs, count, "cuGraphLaunch", rc);
  return rc != CUDA_SUCCESS;
}

static int launch_one(const launch_rec* r, CUstream stream, char** error) {
  void* slot;
  cu_node_params p = node_params(r, &slot);
  CUresult rc = cu.launch_kernel(p.func, p.grid[0], p.grid[1], p.grid[2], p.block[0], p.block[1],
                                 p.block[2], p.shared_bytes, stream, p.kernel_params, NULL);
  if (rc) *error = launch_error(r, 1, "cuLaunchKernel", rc);
  return rc != CUDA_SUCCESS;
}

/** Runs the pending sequence on the plugin's stream, between the timing events. */
static int flush(char** error) {
  int count = pending.count;
  if (count == 0) return 0;
  pending.count = 0; /* the sequence runs once, whatever happens */
  dev.stream_busy = 1;
  free(dev.inflight);
  dev.inflight = describe_sequence(pending.recs, count);
  int timed = cu.event_record(dev.start, dev.stream) == CUDA_SUCCESS;
  int failed = 0;
  if (count > 1 && graphs_enabled())
    failed = launch_graph(pending.recs, count, error);
  else
    for (int i = 0; i < count && !failed; ++i)
      failed = launch_one(&pending.recs[i], dev.stream, error);
  dev.timed = !failed && timed && cu.event_record(dev.end, dev.stream) == CUDA_SUCCESS;
  return failed;
}

/** Waits for `stream`; an error names the kernels of the sequence that was running. */
static int sync_stream(CUstream stream, const char* what, CUresult rc, char** error) {
  if (rc == CUDA_SUCCESS) rc = cu.stream_sync(stream);
  if (rc == CUDA_SUCCESS && stream == dev.stream) dev.stream_busy = 0;
  if (rc == CUDA_SUCCESS) {
    free(dev.inflight);
    dev.inflight = NULL;
    return 0;
  }
  if (dev.inflight)
    *error = kiln_cuda_format("%s: %s failed: %s", dev.inflight, what, cu_text(rc));
  else
    *error = kiln_cuda_format("%s failed: %s", what, cu_text(rc));
  return 1;
}

/** The common prologue of a call that touches the device: ready, no old error, flushed. */
static int begin(char** error) {
  return ready(error) && !take_deferred(error) && !flush(error);
}

/* ---- The table. ---- */
static void* cuda_load(const void* artifact, size_t size, char** error) {
  if (!begin(error)) return NULL;
  static const char kElf[4] = {0x7f, 'E', 'L', 'F'};
  if (size < 4 || memcmp(artifact, kElf, 4) != 0) {
    *error = kiln_cuda_format("the artifact (%zu bytes) is not a CUBIN", size);
    return NULL;
  }
  kmodule* m = calloc(1, sizeof *m);
  CUresult rc = m ? cu.module_load(&m->m, artifact) : 2;
  if (rc) {
    *error = kiln_cuda_format("cuModuleLoadData: %s", cu_text(rc));
    free(m);
    return NULL;
  }
  return m;
}

/** The u32 global `<symbol><suffix>` of module `m` (what a kernel tells its launches), 0 where
 *  the module has none. */
static unsigned module_u32(kmodule* m, const char* symbol, const char* suffix) {
  char global[512];
  CUdeviceptr at;
  size_t bytes = 0;
  unsigned value = 0;
  if (strlen(symbol) + strlen(suffix) >= sizeof global) return 0;
  snprintf(global, sizeof global, "%s%s", symbol, suffix);
  if (cu.module_global(&at, &bytes, m->m, global) == CUDA_SUCCESS && bytes == sizeof value &&
      cu.copy_dtoh(&value, at, sizeof value, dev.stream) == CUDA_SUCCESS &&
      cu.stream_sync(dev.stream) == CUDA_SUCCESS)
    return value;
  return 0;
}

static void* cuda_lookup(void* module, const char* symbol) {
  kmodule* m = module;
  for (int i = 0; i < m->count; ++i)
    if (strcmp(m->funcs[i]->name, symbol) == 0) return m->funcs[i];
  CUfunction f;
  char* error = NULL;
  if (!ready(&error)) {
    free(error);
    return NULL;
  }
  if (cu.module_function(&f, m->m, symbol) != CUDA_SUCCESS) {
    /* A data symbol (a kernel's `<name>_tensor_maps`): its device address. */
    CUdeviceptr at;
    size_t bytes = 0;
    if (cu.module_global && cu.module_global(&at, &bytes, m->m, symbol) == CUDA_SUCCESS)
      return (void*)(uintptr_t)at;
    return NULL;
  }
  kfunc** grown = realloc(m->funcs, (m->count + 1) * sizeof *grown);
  if (grown) m->funcs = grown;
  kfunc* k = grown ? calloc(1, sizeof *k + strlen(symbol) + 1) : NULL;
  if (!k) return NULL;
  k->f = f;
  strcpy(k->name, symbol);
  size_t offset, size;
  k->param_bytes = -1;
  if (cu.param_info) {
    if (cu.param_info(f, 1, &offset, &size) == CUDA_SUCCESS)
      k->param_bytes = -2;
    else if (cu.param_info(f, 0, &offset, &size) == CUDA_SUCCESS)
      k->param_bytes = (long)size;
    else
      k->param_bytes = 0;
  }
  if (cu.module_global) {
    k->shared_bytes = module_u32(m, symbol, "_shared_bytes");
    k->whole_grid = module_u32(m, symbol, "_whole_grid");
    k->resident_grid = module_u32(m, symbol, "_resident_grid");
  }
  m->funcs[m->count++] = k;
  return k;
}

static void cuda_unload(void* module) {
  kmodule* m = module;
  char* error = NULL;
  if (dev.ok) { /* else it was never loaded */
    if (!begin(&error)) set_deferred(error);
    graph_cache_clear(); /* graphs hold the module's functions */
    CUresult rc = cu.module_unload(m->m);
    if (rc) set_deferred(kiln_cuda_format("cuModuleUnload: %s", cu_text(rc)));
  }
  for (int i = 0; i < m->count; ++i)
    free(m->funcs[i]);
  free(m->funcs);
  free(m);
}

static void* cuda_alloc(size_t bytes, char** error) {
  if (!begin(error)) return NULL;
  CUdeviceptr p = 0;
  CUresult rc = cu.mem_alloc(&p, bytes ? bytes : 1);
  if (rc) {
    *error = kiln_cuda_format("cuMemAlloc of %zu bytes: %s", bytes, cu_text(rc));
    return NULL;
  }
  return (void*)(uintptr_t)p;
}

static void cuda_release(void* ptr) {
  if (!ptr || !dev.ok) return;
  char* error = NULL;
  if (!begin(&error)) set_deferred(error);
  CUresult rc = cu.mem_free((CUdeviceptr)(uintptr_t)ptr);
  if (rc) set_deferred(kiln_cuda_format("cuMemFree: %s", cu_text(rc)));
}

static int cuda_copy_to_device(void* dst, const void* src, size_t bytes, char** error) {
  if (bytes == 0) return 0; /* src may be NULL for an empty tensor */
  if (!begin(error)) return 1;
  CUresult rc = cu.copy_htod((CUdeviceptr)(uintptr_t)dst, src, bytes, dev.stream);
  return sync_stream(dev.stream, "cuMemcpyHtoDAsync", rc, error);
}

static int cuda_copy_to_host(void* dst, const void* src, size_t bytes, char** error) {
  if (bytes == 0) return 0;
  if (!begin(error)) return 1;
  CUresult rc = cu.copy_dtoh(dst, (CUdeviceptr)(uintptr_t)src, bytes, dev.stream);
  return sync_stream(dev.stream, "cuMemcpyDtoHAsync", rc, error);
}

/** cuTensorMapEncodeTiled for one map: 128-byte swizzle, zeros outside (tensor_maps.h). */
static int encode_tensor_map(void* out, const kiln_tensor_map* m, void* address) {
  static const int kDataType[9] = {
      -1, 0 /* UINT8 */, 1 /* UINT16 */, -1, 2 /* UINT32 */, -1, -1, -1, 4 /* UINT64 */};
  unsigned long long strides[4];
  unsigned element_strides[5] = {1, 1, 1, 1, 1};
  for (uint32_t d = 1; d < m->rank; ++d)
    strides[d - 1] = m->strides[d];
  CUresult rc = cu.tensor_map_encode(out, kDataType[m->element_bytes], m->rank, address,
                                     (const unsigned long long*)m->dims, strides, m->box,
                                     element_strides, 0 /* no interleave */, 3 /* 128-byte */,
                                     3 /* L2 256-byte */, 0 /* zeros */);
  return rc == CUDA_SUCCESS;
}

/** Records a launch; it runs at the next flush. A caller-given stream runs it at once. */
static int cuda_launch(void* kernel, void* const* buffers, const int64_t* sizes,
                       const kiln_launch* geometry, char** error) {
  kfunc* k = kernel;
  const size_t needed = offsetof(kiln_launch, num_sizes) + sizeof geometry->num_sizes;
  if (!geometry || geometry->struct_size < needed) {
    *error = kiln_cuda_format(
        "kernel %s: the launch geometry (%u bytes) has no num_buffers and "
        "num_sizes; this Kiln is older than the plugin",
        k->name, geometry ? geometry->struct_size : 0);
    return 1;
  }
  if (!ready(error)) return 1;
  const uint32_t maps = kiln_launch_tensor_maps(geometry);
  const size_t maps_at = kiln_tensor_maps_offset(geometry->num_buffers, geometry->num_sizes);
  size_t bytes = 8 * ((size_t)geometry->num_buffers + geometry->num_sizes);
  if (maps) bytes = maps_at + (size_t)CU_TENSOR_MAP_BYTES * maps;
  if (k->param_bytes == -2 || (k->param_bytes >= 0 && (size_t)k->param_bytes != bytes)) {
    *error = kiln_cuda_format(
        "kernel %s takes %s, but the launch packs %zu bytes (%u buffers, %u sizes); a Kiln "
        "CUDA kernel takes one struct of the buffers then the sizes, 8 bytes each",
        k->name, k->param_bytes == -2 ? "more than one parameter" : "a parameter of another size",
        bytes, geometry->num_buffers, geometry->num_sizes);
    return 1;
  }
  const unsigned shared =
      geometry->shared_bytes > k->shared_bytes ? geometry->shared_bytes : k->shared_bytes;
  if (shared > 48 * 1024 && shared > k->shared_limit) {
    CUresult rc =
        cu.func_attribute(k->f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared);
    if (rc) {
      *error = kiln_cuda_format("kernel %s: %u bytes of shared memory: cuFuncSetAttribute: %s",
                                k->name, shared, cu_text(rc));
      return 1;
    }
    k->shared_limit = shared;
  }
  if (pending.count == pending.cap) {
    int cap = pending.cap ? 2 * pending.cap : 16;
    launch_rec* grown = realloc(pending.recs, cap * sizeof *grown);
    if (!grown) {
      *error = kiln_cuda_format("kernel %s: out of memory recording the launch", k->name);
      return 1;
    }
    memset(grown + pending.cap, 0, (cap - pending.cap) * sizeof *grown);
    pending.recs = grown;
    pending.cap = cap;
  }
  launch_rec* r = &pending.recs[pending.count];
  if (r->cap < bytes) {
    unsigned char* p = realloc(r->params, bytes);
    if (!p) {
      *error = kiln_cuda_format("kernel %s: out of memory recording the launch", k->name);
      return 1;
    }
    r->params = p;
    r->cap = bytes;
  }
  r->k = k;
  memcpy(r->grid, geometry->grid, sizeof r->grid);
  memcpy(r->block, geometry->block, sizeof r->block);
  if (r->grid[1] == 1 && r->grid[2] == 1)
    r->grid[0] = launch_blocks(k, r->grid[0], r->block[0] * r->block[1] * r->block[2], shared);
  r->shared_bytes = shared;
  r->bytes = bytes;
  for (uint32_t i = 0; i < geometry->num_buffers; ++i) {
    uint64_t address = (uint64_t)(uintptr_t)buffers[i];
    memcpy(r->params + 8 * i, &address, 8);
  }
  if (geometry->num_sizes)
    memcpy(r->params + 8 * (size_t)geometry->num_buffers, sizes, 8 * (size_t)geometry->num_sizes);
  if (maps)
    kiln_pack_tensor_maps(r->params, geometry, buffers,
                          cu.tensor_map_encode ? encode_tensor_map : NULL);
  if (!geometry->stream) {
    pending.count++;
    return 0;
  }
  /* A caller's stream: run what is pending on ours and wait, then this launch on theirs. Only a
   * flush leaves work on ours (copies wait), so a caller's launches after a wait cost no round
   * trip. */
  if (!begin(error) ||
      (dev.stream_busy && sync_stream(dev.stream, "cuStreamSynchronize", CUDA_SUCCESS, error)))
    return 1;
  dev.external = geometry->stream;
  return launch_one(r, dev.external, error);
}

static int cuda_synchronize(char** error) {
  if (take_deferred(error)) return 1;
  if (!dev.ok) return 0; /* nothing can have been launched */
  if (!begin(error)) return 1;
  if (dev.external) {
    CUstream s = dev.external;
    dev.external = NULL;
    if (sync_stream(s, "cuStreamSynchronize", CUDA_SUCCESS, error)) return 1;
  }
  return sync_stream(dev.stream, "cuStreamSynchronize", CUDA_SUCCESS, error);
}

static const char* cuda_describe_device(void) {
  static char text[1024];
  pthread_once(&dev.once, device_init);
  if (dev.ok)
    snprintf(text, sizeof text, "%s, sm_%d%d, %d SMs, %.1f GiB, driver %d.%d, %s", dev.name,
             dev.major, dev.minor, dev.sms, dev.memory / (1024.0 * 1024.0 * 1024.0),
             dev.driver / 1000, dev.driver % 1000 / 10, kiln_cuda_compiler_version());
  else
    snprintf(text, sizeof text, "no CUDA device (%s); %s", dev.reason,
             kiln_cuda_compiler_version());
  return text;
}

static void cuda_free_blob(kiln_blob* blob) {
  free(blob->data);
  blob->data = NULL;
  blob->size = 0;
}

static void cuda_free_string(char* s) {
  free(s);
}

static const kiln_plugin kTable = {
    .abi_version = KILN_PLUGIN_ABI_VERSION,
    .name = "cuda",
    .version = "2", /* part of every cache key: 2 compiles with --split-compile (nvrtc.c) */
    .compiler_version = kiln_cuda_compiler_version,
    .target = cuda_target,
    .compile = kiln_cuda_compile,
    .prepare = NULL,
    .configure = NULL, /* the thread count means nothing on a GPU */
    .load = cuda_load,
    .lookup = cuda_lookup,
    .unload = cuda_unload,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .copy_to_device = cuda_copy_to_device,
    .copy_to_host = cuda_copy_to_host,
    .launch = cuda_launch,
    .synchronize = cuda_synchronize,
    .describe_device = cuda_describe_device,
    .free_blob = cuda_free_blob,
    .free_string = cuda_free_string,
};

__attribute__((visibility("default"))) const kiln_plugin* kiln_plugin_entry(void) {
  return &kTable;
}

/** KILN_PLUGIN_DEVICE_MS: the device time, in milliseconds, of the last sequence flushed (events
 *  recorded around it), waiting for it to finish; -1 when there is none. */
__attribute__((visibility("default"))) double kiln_device_ms(void) {
  float ms = 0;
  if (!dev.ok || !dev.timed || cu.event_sync(dev.end) != CUDA_SUCCESS ||
      cu.event_elapsed(&ms, dev.start, dev.end) != CUDA_SUCCESS)
    return -1;
  return ms;
}

/** KILN_PLUGIN_DEVICE_UNITS: the device's multiprocessors; 0 without a device. */
__attribute__((visibility("default"))) int kiln_device_units(void) {
  pthread_once(&dev.once, device_init);
  return dev.ok ? dev.sms : 0;
}

/** KILN_PLUGIN_SYNC_STREAM: waits for a caller's stream that launches were given. */
__attribute__((visibility("default"))) int kiln_synchronize_stream(void* stream, char** error) {
  if (take_deferred(error)) return 1;
  if (!dev.ok) return 0; /* nothing can have been launched */
  if (!begin(error)) return 1;
  if (dev.external == stream) dev.external = NULL;
  return sync_stream((CUstream)stream, "cuStreamSynchronize", CUDA_SUCCESS, error);
}

/** KILN_PLUGIN_COPY_DEVICE: copies `bytes` from one buffer of device memory to another and waits,
 *  between the events kiln_device_ms reads: the device's copy bandwidth, `kiln bench --vs copy`'s
 *  baseline on this runtime. */
__attribute__((visibility("default"))) int kiln_copy_device(void* dst, const void* src,
                                                            size_t bytes, char** error) {
  if (!begin(error)) return 1;
  if (bytes == 0) return 0;
  int timed = cu.event_record(dev.start, dev.stream) == CUDA_SUCCESS;
  CUresult rc =
      cu.copy_dtod((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, dev.stream);
  dev.timed = rc == CUDA_SUCCESS && timed && cu.event_record(dev.end, dev.stream) == CUDA_SUCCESS;
  return sync_stream(dev.stream, "cuMemcpyDtoDAsync", rc, error);
}
