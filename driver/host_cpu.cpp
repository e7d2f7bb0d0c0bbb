// The host CPU's vector units through cpuid (<cpuid.h>, GCC and clang), for MICRO=auto's
// register tile (scheduler/register_tile.h automatic_tile_shape).
#include "driver/host_cpu.h"

#include <algorithm>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kiln {

namespace {

/** Asks Linux for this process's AMX tile data (once); true when granted. */
bool grant_amx() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool granted = [] {
    const long req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, req_xcomp_perm, xfeature_xtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

/** The L1d and L2 sizes from the deterministic cache parameters at `leaf` (4 on Intel,
 *  0x8000001D on AMD): one subleaf per cache, until one of type 0. */
void cache_sizes(unsigned leaf, HostCpu& cpu) {
#if defined(__x86_64__) || defined(__i386__)
  for (unsigned i = 0; i < 16; ++i) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid_count(leaf, i, a, b, c, d);
    unsigned type = a & 0x1f, level = (a >> 5) & 0x7;
    if (type == 0) break;
    int64_t bytes = int64_t((b >> 22) + 1) * int64_t(((b >> 12) & 0x3ff) + 1) *
                    int64_t((b & 0xfff) + 1) * (int64_t(c) + 1);
    if (level == 1 && type == 1) cpu.l1d_bytes = bytes;  // data
    if (level == 2 && (type == 3 || type == 1)) cpu.l2_bytes = bytes;
  }
#else
  (void)leaf;
  (void)cpu;
#endif
}

}  // namespace

HostCpu host_cpu() {
  HostCpu cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return cpu;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  cpu.vendor = vendor;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    int base = static_cast<int>((a >> 8) & 0xf), extended = static_cast<int>((a >> 20) & 0xff);
    cpu.family = base == 0xf ? base + extended : base;
    // AVX needs the OS to save the vector registers (OSXSAVE, and XCR0's bits checked below).
    bool osxsave = (c >> 27) & 1;
    if (osxsave && max_leaf >= 7) {
      unsigned xcr0_lo = 0, xcr0_hi = 0;
      __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
      bool ymm = (xcr0_lo & 0x6) == 0x6, zmm = (xcr0_lo & 0xe6) == 0xe6;
      __cpuid_count(7, 0, a, b, c, d);
      cpu.avx2 = ymm && ((b >> 5) & 1);
      cpu.avx512f = zmm && ((b >> 16) & 1);
      cpu.avx512bw = cpu.avx512f && ((b >> 30) & 1);
      bool tiles = (xcr0_lo & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
      bool amx = tiles && ((d >> 24) & 1) && (((d >> 22) & 1) || ((d >> 25) & 1)) && grant_amx();
      cpu.amx_bf16 = amx && ((d >> 22) & 1);
      cpu.amx_int8 = amx && ((d >> 25) & 1);
      // AVX512-VNNI (with VL: its 32-byte forms too); AVX-VNNI in subleaf 1.
      cpu.avx512_vnni = cpu.avx512f && ((b >> 31) & 1) && ((c >> 11) & 1);
      if (a >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        cpu.avx_vnni = cpu.avx2 && ((a >> 4) & 1);
        cpu.avx512_bf16 = cpu.avx512f && ((a >> 5) & 1);
      }
    }
  }
  if (cpu.vendor == "GenuineIntel" && max_leaf >= 4) cache_sizes(4, cpu);
  if (cpu.vendor == "AuthenticAMD" && __get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x8000001d &&
      __get_cpuid(0x80000001, &a, &b, &c, &d) && ((c >> 22) & 1))
    cache_sizes(0x8000001d, cpu);  // with the topology extensions
#endif
  return cpu;
}

int64_t pack_block_bytes(const HostCpu& cpu) {
  const int64_t most = 512 << 10, least = 64 << 10;
  if (cpu.l2_bytes <= 0) return most;
  return std::clamp<int64_t>(cpu.l2_bytes / 2, least, most);
}

int full_width_vector_bytes(const HostCpu& cpu) {
  if (!cpu.avx512f) return 32;
  if (cpu.vendor == "AuthenticAMD" && cpu.family == 0x19) return 32;  // Zen 4: two halves
  return 64;
}

int dot_vector_bytes(const HostCpu& cpu) {
  const bool wide = full_width_vector_bytes(cpu) == 64;
  if (cpu.avx512_vnni && wide) return 64;
  if (cpu.avx512_vnni || cpu.avx_vnni) return 32;
  if (cpu.avx512bw && wide) return 64;  // without VNNI: bytes widened, vpmaddwd
  return cpu.avx2 ? 32 : 0;
}

int bf16_dot_vector_bytes(const HostCpu& cpu) {
  return cpu.avx512_bf16 ? full_width_vector_bytes(cpu) : 0;
}

}  // namespace kiln
