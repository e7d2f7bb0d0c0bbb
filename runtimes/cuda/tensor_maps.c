/** \file
 * The tensor maps of a CUDA launch: layout, the TMA's rules and packing (tensor_maps.h).
 */
#include "runtimes/cuda/tensor_maps.h"

#include <string.h>

enum { kMapBytes = 128, kMapAlign = 64 };

uint32_t kiln_launch_tensor_maps(const kiln_launch* geometry) {
  const size_t needed = offsetof(kiln_launch, tensor_maps) + sizeof geometry->tensor_maps;
  if (!geometry || geometry->struct_size < needed || !geometry->tensor_maps) return 0;
  return geometry->num_tensor_maps;
}

size_t kiln_tensor_maps_offset(uint32_t num_buffers, uint32_t num_sizes) {
  const size_t mask_end = 8 * ((size_t)num_buffers + num_sizes) + 8;
  return (mask_end + kMapAlign - 1) / kMapAlign * kMapAlign;
}

int kiln_tensor_map_usable(const kiln_tensor_map* m, const void* address) {
  const uint32_t eb = m->element_bytes;
  if (m->buffer == UINT32_MAX || !address || ((uintptr_t)address & 15) != 0) return 0;
  if (m->rank < 1 || m->rank > 5 || (eb != 1 && eb != 2 && eb != 4 && eb != 8)) return 0;
  if ((uint64_t)m->box[0] * eb > 128) return 0;
  for (uint32_t d = 0; d < m->rank; ++d) {
    if (m->dims[d] < 1 || m->dims[d] > 0x7fffffffull) return 0; /* coordinates are int */
    if (m->box[d] < 1 || m->box[d] > 256) return 0;
    if (d > 0 && (m->strides[d] % 16 != 0 || m->strides[d] >= (1ull << 40))) return 0;
  }
  return 1;
}

void kiln_pack_tensor_maps(unsigned char* params, const kiln_launch* geometry, void* const* buffers,
                           kiln_tensor_map_encoder encode) {
  const uint32_t count = kiln_launch_tensor_maps(geometry);
  const size_t mask_at = 8 * ((size_t)geometry->num_buffers + geometry->num_sizes);
  const size_t maps_at = kiln_tensor_maps_offset(geometry->num_buffers, geometry->num_sizes);
  memset(params + mask_at, 0, maps_at - mask_at + (size_t)kMapBytes * count);
  uint64_t mask = 0;
  for (uint32_t i = 0; i < count && i < 64; ++i) {
    const kiln_tensor_map* m = &geometry->tensor_maps[i];
    if (m->buffer == UINT32_MAX || m->buffer >= geometry->num_buffers) continue;
    void* address = buffers[m->buffer];
    unsigned char* out = params + maps_at + (size_t)kMapBytes * i;
    if (!encode || !kiln_tensor_map_usable(m, address)) continue;
    if (encode(out, m, address))
      mask |= 1ull << i;
    else
      memset(out, 0, kMapBytes);
  }
  memcpy(params + mask_at, &mask, sizeof mask);
}
