/** \file
 * The CUDA plugin's packing of tensor maps (runtimes/cuda/tensor_maps.h): where they lie in a
 * kernel's parameter struct, the TMA's rules, and the mask of encoded maps, with a stand-in
 * encoder (no driver needed).
 */
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "runtimes/cuda/tensor_maps.h"

namespace {

/** A 2-D map of 16-bit values, rows of `cols` elements, boxes of 64 × 128. */
kiln_tensor_map map2d(uint32_t buffer, uint64_t cols, uint64_t rows) {
  kiln_tensor_map m{};
  m.buffer = buffer;
  m.element_bytes = 2;
  m.rank = 2;
  m.box[0] = 64;
  m.box[1] = 128;
  m.dims[0] = cols;
  m.dims[1] = rows;
  m.strides[1] = cols * 2;
  return m;
}

/** Writes the map's buffer index and the address into the first bytes, then 0xab. */
int fake_encode(void* out, const kiln_tensor_map* m, void* address) {
  std::memset(out, 0xab, 128);
  std::memcpy(out, &m->buffer, 4);
  std::memcpy(static_cast<unsigned char*>(out) + 8, &address, sizeof address);
  return 1;
}

alignas(64) unsigned char storage[1024];

}  // namespace

TEST_CASE("tensor maps: they follow the sizes' mask at the next multiple of 64 bytes") {
  CHECK(kiln_tensor_maps_offset(3, 2) == 64);   // 40 bytes, the mask to 48
  CHECK(kiln_tensor_maps_offset(7, 0) == 64);   // 56, the mask to 64
  CHECK(kiln_tensor_maps_offset(7, 1) == 128);  // 64, the mask to 72
  CHECK(kiln_tensor_maps_offset(0, 0) == 64);
}

TEST_CASE("tensor maps: the TMA's rules") {
  void* aligned = storage;
  kiln_tensor_map m = map2d(0, 4096, 4096);
  CHECK(kiln_tensor_map_usable(&m, aligned));
  CHECK_FALSE(kiln_tensor_map_usable(&m, storage + 2));  // address not 16-byte aligned
  CHECK_FALSE(kiln_tensor_map_usable(&m, nullptr));
  kiln_tensor_map odd = map2d(0, 4099, 4096);  // rows of 8198 bytes
  CHECK_FALSE(kiln_tensor_map_usable(&odd, aligned));
  kiln_tensor_map wide = m;
  wide.box[0] = 128;  // 256 bytes: past the 128-byte swizzle's row
  CHECK_FALSE(kiln_tensor_map_usable(&wide, aligned));
  kiln_tensor_map tall = m;
  tall.box[1] = 512;
  CHECK_FALSE(kiln_tensor_map_usable(&tall, aligned));
  kiln_tensor_map empty = m;
  empty.dims[1] = 0;
  CHECK_FALSE(kiln_tensor_map_usable(&empty, aligned));
  kiln_tensor_map none = m;
  none.buffer = UINT32_MAX;
  CHECK_FALSE(kiln_tensor_map_usable(&none, aligned));
  kiln_tensor_map three = m;
  three.element_bytes = 3;
  CHECK_FALSE(kiln_tensor_map_usable(&three, aligned));
  kiln_tensor_map deep = m;
  deep.rank = 6;
  CHECK_FALSE(kiln_tensor_map_usable(&deep, aligned));
}

TEST_CASE("tensor maps: packed after the sizes, a bit for each one encoded") {
  void* buffers[3] = {storage, storage + 2, storage + 256};
  const int64_t sizes[2] = {4096, 77};
  kiln_tensor_map maps[4] = {map2d(0, 4096, 4096), map2d(1, 4096, 4096), map2d(2, 4096, 4096),
                             map2d(UINT32_MAX, 0, 0)};
  kiln_launch g{};
  g.struct_size = sizeof g;
  g.num_buffers = 3;
  g.num_sizes = 2;
  g.num_tensor_maps = 4;
  g.tensor_maps = maps;
  const size_t at = kiln_tensor_maps_offset(3, 2);
  std::vector<unsigned char> params(at + 4 * 128, 0xee);
  for (int i = 0; i < 3; ++i)
    std::memcpy(params.data() + 8 * i, &buffers[i], 8);
  std::memcpy(params.data() + 24, sizes, 16);
  kiln_pack_tensor_maps(params.data(), &g, buffers, fake_encode);
  int64_t back[2];
  std::memcpy(back, params.data() + 24, 16);
  CHECK(back[0] == 4096);  // the sizes are kept
  CHECK(back[1] == 77);
  uint64_t mask = 0;
  std::memcpy(&mask, params.data() + 40, 8);
  CHECK(mask == 0b101);  // buffer 1 is misaligned, map 3 names none
  for (size_t b = 48; b < at; ++b)
    CHECK(params[b] == 0);  // the padding is zero
  uint32_t buffer = 99;
  void* address = nullptr;
  std::memcpy(&buffer, params.data() + at + 2 * 128, 4);
  std::memcpy(&address, params.data() + at + 2 * 128 + 8, 8);
  CHECK(buffer == 2);
  CHECK(address == buffers[2]);
  for (size_t b = at + 128; b < at + 2 * 128; ++b)
    CHECK(params[b] == 0);  // map 1: left out, zeros
  for (size_t b = at + 3 * 128; b < at + 4 * 128; ++b)
    CHECK(params[b] == 0);

  // No encoder (a driver without cuTensorMapEncodeTiled): every map left out.
  kiln_pack_tensor_maps(params.data(), &g, buffers, nullptr);
  std::memcpy(&mask, params.data() + 40, 8);
  CHECK(mask == 0);
  CHECK(params[at + 2 * 128] == 0);
}

TEST_CASE("tensor maps: a launch struct from before the field has none") {
  kiln_tensor_map m = map2d(0, 64, 64);
  kiln_launch g{};
  g.struct_size = offsetof(kiln_launch, num_tensor_maps);
  g.num_tensor_maps = 1;
  g.tensor_maps = &m;
  CHECK(kiln_launch_tensor_maps(&g) == 0);
  g.struct_size = sizeof g;
  CHECK(kiln_launch_tensor_maps(&g) == 1);
  CHECK(kiln_launch_tensor_maps(nullptr) == 0);
}
