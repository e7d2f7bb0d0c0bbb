/** \file
 * What the cuda plugin's two files share: the CUDA driver API types and entry points used,
 * declared here with cuda.h's values (CUDA 13) because the plugin includes no CUDA header and
 * links no CUDA library, and the helpers between cuda_plugin.c (the device: memory, modules,
 * launches, graphs) and nvrtc.c (the compiler).
 */
#ifndef KILN_RUNTIMES_CUDA_API_H
#define KILN_RUNTIMES_CUDA_API_H

#include <stddef.h>

#include "kiln/plugin_api.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphNode_st* CUgraphNode;
typedef struct CUgraphExec_st* CUgraphExec;

/** CUDA_KERNEL_NODE_PARAMS_v2; its first fields are the v1 struct, so either entry point reads
 *  it. */
typedef struct cu_node_params {
  CUfunction func;
  unsigned grid[3], block[3], shared_bytes;
  void** kernel_params;
  void** extra;
  void* kern;
  CUcontext ctx;
} cu_node_params;

enum {
  CUDA_SUCCESS = 0,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_STREAM_NON_BLOCKING = 1,
  CU_EVENT_DEFAULT = 0,
};

/* X(field, symbol, fallback symbol or NULL, parameters): the driver entry points. */
#define CU_FUNCTIONS(X)                                                                          \
  X(init, "cuInit", NULL, (unsigned flags))                                                      \
  X(driver_version, "cuDriverGetVersion", NULL, (int* version))                                  \
  X(device_count, "cuDeviceGetCount", NULL, (int* count))                                        \
  X(device_get, "cuDeviceGet", NULL, (CUdevice * dev, int ordinal))                              \
  X(device_name, "cuDeviceGetName", NULL, (char* name, int len, CUdevice dev))                   \
  X(device_attribute, "cuDeviceGetAttribute", NULL, (int* value, int attr, CUdevice dev))        \
  X(device_memory, "cuDeviceTotalMem_v2", NULL, (size_t * bytes, CUdevice dev))                  \
  X(primary_ctx, "cuDevicePrimaryCtxRetain", NULL, (CUcontext * ctx, CUdevice dev))              \
  X(set_ctx, "cuCtxSetCurrent", NULL, (CUcontext ctx))                                           \
  X(error_name, "cuGetErrorName", NULL, (CUresult rc, const char** text))                        \
  X(error_string, "cuGetErrorString", NULL, (CUresult rc, const char** text))                    \
  X(module_load, "cuModuleLoadData", NULL, (CUmodule * module, const void* image))               \
  X(module_function, "cuModuleGetFunction", NULL, (CUfunction * f, CUmodule m, const char* s))   \
  X(module_unload, "cuModuleUnload", NULL, (CUmodule module))                                    \
  X(func_attribute, "cuFuncSetAttribute", NULL, (CUfunction f, int attr, int value))             \
  X(mem_alloc, "cuMemAlloc_v2", NULL, (CUdeviceptr * p, size_t bytes))                           \
  X(mem_free, "cuMemFree_v2", NULL, (CUdeviceptr p))                                             \
  X(copy_htod, "cuMemcpyHtoDAsync_v2", NULL,                                                     \
    (CUdeviceptr dst, const void* src, size_t bytes, CUstream s))                                \
  X(copy_dtoh, "cuMemcpyDtoHAsync_v2", NULL, (void* dst, CUdeviceptr src, size_t n, CUstream s)) \
  X(copy_dtod, "cuMemcpyDtoDAsync_v2", NULL,                                                     \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                                    \
  X(stream_create, "cuStreamCreate", NULL, (CUstream * s, unsigned flags))                       \
  X(stream_sync, "cuStreamSynchronize", NULL, (CUstream s))                                      \
  X(event_create, "cuEventCreate", NULL, (CUevent * e, unsigned flags))                          \
  X(event_record, "cuEventRecord", NULL, (CUevent e, CUstream s))                                \
  X(event_sync, "cuEventSynchronize", NULL, (CUevent e))                                         \
  X(event_elapsed, "cuEventElapsedTime_v2", "cuEventElapsedTime",                                \
    (float* ms, CUevent a, CUevent b))                                                           \
  X(launch_kernel, "cuLaunchKernel", NULL,                                                       \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
     unsigned shared, CUstream s, void** params, void** extra))                                  \
  X(graph_create, "cuGraphCreate", NULL, (CUgraph * g, unsigned flags))                          \
  X(graph_add_kernel, "cuGraphAddKernelNode_v2", "cuGraphAddKernelNode",                         \
    (CUgraphNode * node, CUgraph g, const CUgraphNode* deps, size_t n, const cu_node_params* p)) \
  X(graph_instantiate, "cuGraphInstantiateWithFlags", NULL,                                      \
    (CUgraphExec * exec, CUgraph g, unsigned long long flags))                                   \
  X(exec_set_params, "cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams",      \
    (CUgraphExec exec, CUgraphNode node, const cu_node_params* p))                               \
  X(graph_launch, "cuGraphLaunch", NULL, (CUgraphExec exec, CUstream s))                         \
  X(exec_destroy, "cuGraphExecDestroy", NULL, (CUgraphExec exec))                                \
  X(graph_destroy, "cuGraphDestroy", NULL, (CUgraph g))

#define CU_FIELD(field, symbol, fallback, params) CUresult(*field) params;
#define CU_SYMBOL(field, symbol, fallback, params) {symbol, fallback, offsetof(cu_api, field)},
typedef struct cu_api {
  CU_FUNCTIONS(CU_FIELD)
  /* optional (CUDA 12.4+): checks a kernel's parameter size against the packed one */
  CUresult (*param_info)(CUfunction f, size_t index, size_t* offset, size_t* size);
  /* optional: a module's global, for a kernel's `<name>_shared_bytes` (cuda_plugin.c) */
  CUresult (*module_global)(CUdeviceptr* p, size_t* bytes, CUmodule m, const char* name);
  /* optional: the blocks of a kernel one multiprocessor holds at once (cuda_plugin.c) */
  CUresult (*occupancy)(int* blocks, CUfunction f, int block_size, size_t shared_bytes);
  /* optional (CUDA 12+): cuTensorMapEncodeTiled, a TMA copy's map (kiln_tensor_map); its enums
     as ints: data type, interleave, swizzle, L2 promotion, out-of-bounds fill */
  CUresult (*tensor_map_encode)(void* map, int dtype, unsigned rank, void* address,
                                const unsigned long long* dims, const unsigned long long* strides,
                                const unsigned* box, const unsigned* element_strides,
                                int interleave, int swizzle, int l2_promotion, int oob_fill);
} cu_api;

/** cuda.h's CUtensorMap: 128 opaque bytes, 64-byte aligned. */
enum { CU_TENSOR_MAP_BYTES = 128, CU_TENSOR_MAP_ALIGN = 64 };

/** One entry point of a dlopened library: `name`, else `fallback`, goes to `offset` in a table. */
typedef struct symbol_slot {
  const char* name;
  const char* fallback;
  size_t offset;
} symbol_slot;

/** Fills a table of entry points from `lib`; returns the first name missing, or NULL. */
const char* kiln_cuda_resolve(void* lib, const symbol_slot* slots, size_t count, void* table);
/** A message allocated with malloc, for `*error`. */
char* kiln_cuda_format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/** The architecture compiled for: the device's ("sm_90"), else $KILN_CUDA_ARCH, else sm_90. */
const char* kiln_cuda_arch(void);

/** nvrtc.c: "NVRTC 13.0", or "NVRTC (not found)". */
const char* kiln_cuda_compiler_version(void);
/** nvrtc.c: CUDA C to a CUBIN for kiln_cuda_arch() (kiln_plugin::compile). */
int kiln_cuda_compile(const char* source, const char* flags, kiln_blob* artifact, char** error);

#endif
