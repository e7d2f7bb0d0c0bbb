/** \file
 * The tensor maps of a CUDA launch (kiln_tensor_map, plugin_api.h): where they lie in the
 * kernel's parameter struct, which of them the TMA accepts, and their packing. Plain C with no
 * driver: the encoding is a function the caller passes (cuda_plugin.c: cuTensorMapEncodeTiled),
 * so the layout and the rules are tested on machines without CUDA (tests/unit/tensor_maps_test).
 */
#ifndef KILN_RUNTIMES_CUDA_TENSOR_MAPS_H
#define KILN_RUNTIMES_CUDA_TENSOR_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/plugin_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The launch's tensor maps: 0 where its struct predates the field. */
uint32_t kiln_launch_tensor_maps(const kiln_launch* geometry);

/** The byte offset of the first map in the parameter struct: after the buffers, the sizes and
 *  the mask of encoded maps, at the next multiple of 64 bytes. */
size_t kiln_tensor_maps_offset(uint32_t num_buffers, uint32_t num_sizes);

/** Whether the TMA accepts map `m` at `address` (plugin_api.h's rules). */
int kiln_tensor_map_usable(const kiln_tensor_map* m, const void* address);

/** Encodes `map` for `address` into 128 bytes at `out`; non-zero on success. */
typedef int (*kiln_tensor_map_encoder)(void* out, const kiln_tensor_map* map, void* address);

/** Writes the mask and the maps of `geometry` into `params` (its buffers and sizes already
 *  packed): a map is encoded where it names a buffer, the TMA accepts it and `encode` (may be
 *  NULL: none) succeeds; its bit set then, else its 128 bytes zero. */
void kiln_pack_tensor_maps(unsigned char* params, const kiln_launch* geometry, void* const* buffers,
                           kiln_tensor_map_encoder encode);

#ifdef __cplusplus
}
#endif

#endif
