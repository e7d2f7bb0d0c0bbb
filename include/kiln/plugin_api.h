/** \file
 * The runtime plugin interface: a C ABI, so a plugin can be built by any compiler and loaded
 * with dlopen. A plugin exports `kiln_plugin_entry`, which returns a table of functions. Kiln
 * refuses a table whose `abi_version` differs from KILN_PLUGIN_ABI_VERSION; `abi_version` stays
 * the table's first field in every version, so that check can read any plugin's table.
 *
 * ABI 3 (this one) added `configure` (the run-time settings, `kiln_runtime_config`) and the
 * launch geometry (`kiln_launch`: grid, block, dynamic shared memory, stream) to `launch`.
 *
 * Compiled kernels use one calling convention on the CPU:
 *     void KERNEL(void* const* buffers, const int64_t* sizes);
 * `buffers` holds the kernel's own buffers in order (Kernel::buffers: a caller's buffer, a
 * window into one, or a temporary; then, where the kernel keeps the packed panels of its
 * `const` inputs between calls, its workspace: backends/packed_weights.h), `sizes` the size
 * variables in KernelPlan::size_vars order. Kernels that run one code (Kernel::code_of) are
 * one function launched with each kernel's buffers.
 *
 * CUDA kernels take the same arguments as one by-value struct:
 *     extern "C" __global__ void KERNEL(P p);
 * where P holds `num_buffers` device pointers followed by `num_sizes` int64_t (kiln_launch's
 * fields; every field 8 bytes, so no padding). The plugin packs buffers[] then sizes[] into
 * 8 * (num_buffers + num_sizes) bytes and passes them as kernelParams[0]; the driver copies as
 * many bytes as the kernel's parameter holds. A launch with `num_tensor_maps` > 0 (the TMA
 * copies of sm_90 kernels, kiln_tensor_map) packs after the sizes one int64_t whose bit i is
 * set where map i was encoded, then, from the next multiple of 64 bytes, num_tensor_maps
 * CUtensorMaps of 128 bytes each (zeros where a map was not encoded); the kernel takes the
 * struct as `const __grid_constant__`, so the maps' addresses are the TMA's operands.
 *
 * A plugin may defer launches: `launch` may only record the launch, which then runs at the next
 * `synchronize` or any other call (copies, alloc, release, unload), in launch order. The CUDA
 * plugin does so to run a sequence of launches as one CUDA graph. A deferred launch's error is
 * reported by the call that runs it.
 */
#ifndef KILN_PLUGIN_API_H
#define KILN_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PLUGIN_ABI_VERSION 3
#define KILN_PLUGIN_ENTRY "kiln_plugin_entry"
/** Optional export beside the table, `double kiln_device_ms(void)`: the device time in
 *  milliseconds of the launches that the last `synchronize` waited for (a GPU plugin's events
 *  around them), negative when unknown. `kiln bench` reports it next to the wall-clock time. */
#define KILN_PLUGIN_DEVICE_MS "kiln_device_ms"
/** Optional export, `int kiln_copy_device(void* dst, const void* src, size_t bytes, char** error)`:
 *  copies between two buffers of `alloc`'s memory and waits (errors as the table's). A device
 *  plugin's copy bandwidth: `kiln bench --vs copy` times it on such a runtime. */
#define KILN_PLUGIN_COPY_DEVICE "kiln_copy_device"

/** Optional export, `int kiln_synchronize_stream(void* stream, char** error)`: waits for the work
 *  launched on `stream`, a queue a caller gave to `launch` (errors as the table's). Kiln calls it
 *  before reusing, on another stream, the temporaries of a run it left in flight on `stream`
 *  (kiln::Compiled::run_device); without it Kiln calls `synchronize`. */
#define KILN_PLUGIN_SYNC_STREAM "kiln_synchronize_stream"
/** Optional export, `int kiln_device_units(void)`: the device's multiprocessors (compute units),
 *  0 where unknown. A launch of a kernel compiled at several tile shapes chooses among them by
 *  the tiles each makes on that many units (driver/tile_choice.h). */
#define KILN_PLUGIN_DEVICE_UNITS "kiln_device_units"
/** Bytes owned by the plugin; release with kiln_plugin::free_blob. */
typedef struct kiln_blob {
  void* data;
  size_t size;
} kiln_blob;

/** Run-time settings, handed to kiln_plugin::configure. Fields are only ever appended:
 *  `struct_size` is sizeof(kiln_runtime_config) in Kiln's build, so a plugin reads the fields
 *  that lie below it. Settings a plugin has no use for (threads on a GPU) it ignores. */
typedef struct kiln_runtime_config {
  uint32_t struct_size;
  int32_t threads; /**< threads a kernel runs on (--config THREADS=N); 0: every core */
} kiln_runtime_config;

/** A tensor map a CUDA kernel's TMA copies read (docs/decisions.md, "Warpgroup GEMM stages
 *  copied by the TMA"): boxes of `box` elements of the `rank`-dimensional array at
 *  buffers[buffer], 128-byte swizzled in shared memory, zeros where a box reaches past `dims`.
 *  The plugin encodes it (cuTensorMapEncodeTiled) where the TMA's rules hold: the address
 *  16-byte aligned, every stride a multiple of 16 bytes below 2^40, every dimension 1 to 2^31 - 1,
 *  every box 1 to 256 with its innermost extent 128 bytes at most; else it leaves the map out
 *  (its bit clear) and the kernel copies that launch's operands without it. */
typedef struct kiln_tensor_map {
  uint32_t buffer;        /**< index into the launch's `buffers`; UINT32_MAX: none (left out) */
  uint32_t element_bytes; /**< 1, 2, 4 or 8: the copy moves bytes, zeros outside */
  uint32_t rank;          /**< 1 to 5 */
  uint32_t box[5];        /**< the box's extents, innermost dimension first */
  uint64_t dims[5];       /**< the array's extents in elements, innermost first */
  uint64_t strides[5];    /**< bytes from one index of dimension d to the next; [0] unused */
} kiln_tensor_map;

/** Where and how wide one launch runs, handed to kiln_plugin::launch. A CPU plugin ignores it
 *  (its kernels take all their sizes from `sizes`); Kiln fills 1, 1, 1 for CPU backends. */
typedef struct kiln_launch {
  uint32_t struct_size;  /**< sizeof(kiln_launch) in Kiln's build; fields are only appended */
  uint32_t grid[3];      /**< blocks in x, y, z */
  uint32_t block[3];     /**< threads per block in x, y, z */
  uint32_t shared_bytes; /**< dynamic shared memory per block, in bytes */
  void* stream;          /**< the queue to launch on (a CUstream); NULL: the default one */
  uint32_t num_buffers;  /**< entries of `buffers` (a CUDA plugin packs them into the params) */
  uint32_t num_sizes;    /**< entries of `sizes` */
  /** Entries of `tensor_maps`: the maps a CUDA kernel's TMA copies read (other plugins ignore
   *  them). */
  uint32_t num_tensor_maps;
  const struct kiln_tensor_map* tensor_maps;
} kiln_launch;

/** The functions a runtime plugin provides. Errors: return non-zero (or NULL) and set `*error`
 *  to a message the caller releases with free_string. */
typedef struct kiln_plugin {
  uint32_t abi_version; /**< KILN_PLUGIN_ABI_VERSION of the plugin's build */
  const char* name;     /**< "clang", "cc", ... */
  const char* version;  /**< the plugin's own version */

  /** The compiler's identity and version, part of every cache key. */
  const char* (*compiler_version)(void);
  /** The target: CPU features or GPU architecture, part of every cache key. */
  const char* (*target)(void);
  /** Compiles source to an artifact (object or shared library bytes) that `load` accepts.
   *  `flags` is a NUL-separated list ending with an empty string. */
  int (*compile)(const char* source, const char* flags, kiln_blob* artifact, char** error);
  /** Optional (NULL to skip): readies the plugin for `compile` with `flags` and the `load` that
   *  follows, e.g. by building compiler arguments or a JIT. Kiln calls it on a second thread
   *  while it plans a program, before it knows whether the cache holds the program, and may
   *  call `compile` or `load` before it returns: they wait for what they share with it.
   *  Keep it light: it shares the machine with the scheduler. */
  void (*prepare)(const char* flags);
  /** Optional (NULL to skip): takes the run-time settings. Kiln calls it once after loading the
   *  plugin (with the defaults: threads 0) and again whenever an executable launches with other
   *  settings, always before that launch and never beside another call. `config` lives only
   *  for the call: copy what you keep. */
  int (*configure)(const kiln_runtime_config* config, char** error);
  /** Loads an artifact; returns a module handle. */
  void* (*load)(const void* artifact, size_t size, char** error);
  /** The address of a kernel, or of another symbol the module defines (a GPU plugin: a data
   *  symbol's device address, which copy_to_host reads), in a loaded module; NULL
   *  when the module does not define it: Kiln also asks for symbols a module may lack (a
   *  kernel's `SYMBOL_workspace`, backends/packed_weights.h). */
  void* (*lookup)(void* module, const char* symbol);
  void (*unload)(void* module);
  /** Device memory (host memory for CPU runtimes). */
  void* (*alloc)(size_t bytes, char** error);
  void (*release)(void* ptr);
  int (*copy_to_device)(void* dst, const void* src, size_t bytes, char** error);
  int (*copy_to_host)(void* dst, const void* src, size_t bytes, char** error);
  /** Runs a kernel found by lookup with the calling convention above, on `geometry`. */
  int (*launch)(void* kernel, void* const* buffers, const int64_t* sizes,
                const kiln_launch* geometry, char** error);
  int (*synchronize)(char** error);
  /** One line describing the device, for --debug and `kiln test-runtime`. */
  const char* (*describe_device)(void);
  void (*free_blob)(kiln_blob* blob);
  void (*free_string)(char* s);
} kiln_plugin;

typedef const kiln_plugin* (*kiln_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
