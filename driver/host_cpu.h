/** \file
 * What the host CPU runs at full speed, for schedule choices of host runtimes (clang, openmp,
 * cc): read with cpuid, without a compiler.
 */
#pragma once

#include <string>

namespace kiln {

/** The host CPU's vendor, family and vector units, as cpuid reports them. */
struct HostCpu {
  std::string vendor;  ///< "GenuineIntel", "AuthenticAMD", ... ("" off x86)
  int family = 0;      ///< base family plus extended family
  bool avx2 = false, avx512f = false;
  bool avx512bw = false;  ///< AVX-512's byte and word operations (vpmaddwd on 64 bytes)
  /** AMX tiles with BF16 dot products, their state enabled by the OS (XCR0) and this process
   *  granted the tile data (Linux's arch_prctl ARCH_REQ_XCOMP_PERM, asked for here: a process
   *  runs AMX code only once granted, and the grant lasts for the process). */
  bool amx_bf16 = false;
  bool amx_int8 = false;  ///< likewise with AMX-INT8
  /** Dot products of unsigned by signed bytes into i32 (vpdpbusd): AVX512-VNNI on 64-byte
   *  vectors (with AVX512VL, so that its 32-byte forms exist too), AVX-VNNI on 32-byte ones. */
  bool avx512_vnni = false, avx_vnni = false;
  /** Dot products of bf16 pairs into f32 (vdpbf16ps): AVX512-BF16, on 64-byte vectors and (with
   *  AVX512VL) 32-byte ones. */
  bool avx512_bf16 = false;
  /** A core's level-1 data and level-2 caches, in bytes (cpuid's deterministic cache
   *  parameters: leaf 4 on Intel, 8000001Dh on AMD); 0 when unknown. */
  int64_t l1d_bytes = 0, l2_bytes = 0;
};

/** The host CPU (cpuid; all false off x86). */
HostCpu host_cpu();

/** The bytes of b's packed block of a one-loop contraction under MICRO=auto
 *  (RegisterTileShape::block_bytes, BLIS's N block): half of `cpu`'s L2, so that the block stays
 *  there while the row tiles run over it, between 64 KiB and 512 KiB (a local array on the
 *  thread's stack); 512 KiB when the L2 is unknown. */
int64_t pack_block_bytes(const HostCpu& cpu);

/** The widest vectors, in bytes, `cpu` runs at full width: 64 with AVX-512 (AVX512F), except
 *  AMD family 19h (Zen 4), whose 512-bit operations run as two 256-bit halves; 32 otherwise. */
int full_width_vector_bytes(const HostCpu& cpu);

/** The vectors, in bytes, that 8-bit products take on `cpu` (VNNI=auto,
 *  RegisterTileShape::dot_bytes): 64 with AVX512-VNNI where 64-byte operations run at full
 *  width, 32 with AVX-VNNI or AVX512-VNNI otherwise; without VNNI, where the generated code's
 *  dot product widens the bytes to 16 bits for two `vpmaddwd`, 64 with AVX512BW at full width
 *  and 32 with AVX2; 0 elsewhere (off x86). */
int dot_vector_bytes(const HostCpu& cpu);

/** The vectors, in bytes, that bf16 products take on `cpu` (BF16DOT=auto,
 *  RegisterTileShape::bf16_dot_bytes): with AVX512-BF16 the CPU's full width (64, or 32 where
 *  64-byte operations run as two halves); 0 without it (the bf16 values are then widened to f32
 *  in the packs of the f32 register tile). */
int bf16_dot_vector_bytes(const HostCpu& cpu);

}  // namespace kiln
