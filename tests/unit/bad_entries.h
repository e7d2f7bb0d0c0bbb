/** \file
 * Cache entries that pass the cache's own checks but are wrong, as issue 9 planted them: shared
 * by runtime_test.cpp and cli_test.cpp.
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "runtimes/cache.h"

namespace kiln::test {

/** `payload` behind a header as cache format version 1 wrote it: the SHA-256 of the payload
 *  alone, so it is valid for whichever key's file it is copied to. */
inline std::string old_format_entry(const std::string& payload) {
  std::string entry(56, '\0');
  std::memcpy(entry.data(), "KILNCACH", 8);
  const uint32_t version = 1;
  const uint64_t bytes = payload.size();
  std::memcpy(&entry[8], &version, sizeof version);
  std::memcpy(&entry[16], &bytes, sizeof bytes);
  std::string hex = sha256_hex(payload.data(), payload.size());
  for (size_t k = 0; k < 32; ++k)
    entry[24 + k] = static_cast<char>(std::stoi(hex.substr(2 * k, 2), nullptr, 16));
  return entry + payload;
}

/** 4 KiB that start as an x86-64 ELF shared object and go on as noise. */
inline std::string garbage_elf() {
  std::string bytes = {'\x7f', 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 62, 0};
  uint32_t state = 12345;
  while (bytes.size() < 4096) {
    state = state * 1103515245u + 12345u;
    bytes += static_cast<char>(state >> 16);
  }
  return bytes;
}

}  // namespace kiln::test
