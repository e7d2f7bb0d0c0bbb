#include "backends/c_prelude.h"

namespace kiln {

const char* const kPreludeTypedefs = R"KILN(typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
)KILN";

const char* const kCPreludeHead = R"KILN(#define KILN_INF __builtin_inff()
#define KILN_NAN __builtin_nanf("")
#define KILN_INT64_MIN (-9223372036854775807LL - 1)
#define KILN_INT64_MAX 9223372036854775807LL
#define memcpy __builtin_memcpy
#define KILN_RINTF __builtin_nearbyintf
#define KILN_FN static inline
/* Opens a block whose floating-point operations may be reassociated: a reduction's accumulation. */
#ifdef __clang__
#define KILN_REASSOC _Pragma("clang fp reassociate(on)")
#else
#define KILN_REASSOC
#endif
/* Before a loop that accumulates a sum or product: four vector accumulators, not one that waits
   on the add's latency at every step (the runtimes compile with -fno-unroll-loops). */
#ifdef __clang__
#define KILN_INTERLEAVE _Pragma("clang loop interleave_count(4)")
#else
#define KILN_INTERLEAVE
#endif
)KILN";

const char* const kPreludeFunctions = R"KILN(
KILN_FN int64_t kiln_fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KILN_FN int64_t kiln_fmod(int64_t a, int64_t b) { return a - kiln_fdiv(a, b) * b; }
/* Floor division and modulus by a run-time divisor (a size expression) inside an index. A zero
   divisor divides by 1 instead of trapping, so the index can be computed before the mask that
   guards its load is tested (docs/decisions.md, "the masked-load crash"). */
KILN_FN int64_t kiln_fdiv_v(int64_t a, int64_t b) { return kiln_fdiv(a, b != 0 ? b : 1); }
KILN_FN int64_t kiln_fmod_v(int64_t a, int64_t b) { return kiln_fmod(a, b != 0 ? b : 1); }
KILN_FN float kiln_max_f32(float a, float b) { return (a != a || a > b) ? a : b; }
KILN_FN double kiln_max_f64(double a, double b) { return (a != a || a > b) ? a : b; }
KILN_FN int64_t kiln_max_int(int64_t a, int64_t b) { return a > b ? a : b; }
KILN_FN uint64_t kiln_max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
/* Ordered keys: the bits of a float mapped to an integer that orders as the float does (-0
   below +0; NaN is flagged apart), so that a max reduction is an integer max, which compilers
   vectorise without fast-math. The mapping is its own inverse. */
KILN_FN int32_t kiln_key_f32(float v) {
  int32_t b;
  memcpy(&b, &v, 4);
  return b ^ ((b >> 31) & 0x7fffffff);
}
KILN_FN float kiln_unkey_f32(int32_t k) {
  int32_t b = k ^ ((k >> 31) & 0x7fffffff);
  float v;
  memcpy(&v, &b, 4);
  return v;
}
KILN_FN int64_t kiln_key_f64(double v) {
  int64_t b;
  memcpy(&b, &v, 8);
  return b ^ ((b >> 63) & KILN_INT64_MAX);
}
KILN_FN double kiln_unkey_f64(int64_t k) {
  int64_t b = k ^ ((k >> 63) & KILN_INT64_MAX);
  double v;
  memcpy(&v, &b, 8);
  return v;
}
KILN_FN int64_t kiln_f2i(double v, double lo, double hi) {
  if (v != v) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return hi >= 9.2233720368547758e18 ? KILN_INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}
/* float -> u64 as the interpreter casts: truncate, NaN -> 0, saturate to 0 and 2^64 - 1. */
KILN_FN uint64_t kiln_f2u64(double v) {
  if (v != v || v <= 0) return 0;
  if (v >= 18446744073709551616.0) return ~0ULL;
  return (uint64_t)v;
}
/* _Float16 on x86 from Clang 15 (Debian 12's clang 14 rejects it: "not supported on this
   target"); GCC and older Clang take the portable conversions below. */
#if defined(__clang__) && __clang_major__ >= 15 && defined(__F16C__)
#define KILN_F16C 1
#endif
#ifdef KILN_F16C
/* f16 <-> f32 by the processor's conversions (vcvtph2ps, vcvtps2ph: exact, round to nearest
   even), which the vectoriser also applies to whole vectors. */
KILN_FN float kiln_f16_to_f32(uint16_t h) {
  _Float16 f;
  memcpy(&f, &h, 2);
  return (float)f;
}
KILN_FN uint16_t kiln_f32_to_f16(float x) {
  _Float16 f = (_Float16)x;
  uint16_t h;
  memcpy(&h, &f, 2);
  return h;
}
#else
KILN_FN float kiln_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    float f = (float)man * 5.9604644775390625e-08f;  // man * 2^-24
    memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float out;
  memcpy(&out, &bits, 4);
  return out;
}
KILN_FN uint16_t kiln_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to infinity
  if (a < 0x38800000u) {                                     // subnormal or zero
    float mag;
    memcpy(&mag, &a, 4);
    return (uint16_t)(sign | (uint32_t)KILN_RINTF(mag * 16777216.0f));
  }
  uint32_t r = a + 0xc8000fffu + ((a >> 13) & 1u);  // rebias exponent, round to nearest even
  return (uint16_t)(sign | (r >> 13));
}
#endif
KILN_FN float kiln_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float out;
  memcpy(&out, &bits, 4);
  return out;
}
KILN_FN uint16_t kiln_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
)KILN";

const char* const kCBoundsCheck = R"(
/* --config CHECK=1: every buffer access checks its element index. A failed check records the
   first failure (buffer, element, count, flag) and reads or writes element 0 instead; the host
   reports the record when the kernel returns (driver/fault_guard.h). No trap: a trap is an exit
   of every loop around the access, and LLVM's IndVarSimplify took over a minute on a kernel
   with hundreds of them (docs/decisions.md, "Bounds checks record, not trap, on the CPU"). */
volatile int64_t kiln_check_record[4];
static __attribute__((noinline, cold)) int64_t kiln_check_fail(int64_t i, int64_t n,
                                                               int64_t buffer, int64_t flag) {
  if (kiln_check_record[3] == 0) {
    kiln_check_record[0] = buffer;
    kiln_check_record[1] = i;
    kiln_check_record[2] = n;
    kiln_check_record[3] = flag;
  }
  return 0;
}
KILN_FN int64_t kiln_check(int64_t offset, int64_t count, int64_t buffer) {
  if (__builtin_expect((uint64_t)offset >= (uint64_t)count, 0))
    return kiln_check_fail(offset, count, buffer, 1);
  return offset;
}
/* A gathered (flag 2) or scattered (flag 3) position i along a dimension of n (ir/kernel_ir.h
   kGatherVar). */
KILN_FN int64_t kiln_check_index(int64_t i, int64_t n, int64_t buffer, int64_t flag) {
  if (__builtin_expect((uint64_t)i >= (uint64_t)n, 0)) return kiln_check_fail(i, n, buffer, flag);
  return i;
}
)";

const char* const kCPreludeMath = R"KILN(
#ifdef KILN_VECLIB
/* 2^x in f32 through the vector math library the runtime links (-fveclib=libmvec, whose
   descriptor defines KILN_VECLIB): libmvec's vector exp2f calls the scalar one for each lane
   outside its fast range, so a lane below -150 (a masked score at -inf: attention with a causal
   mask ran 7x slower) computes 2^0 and is replaced by +0, the value it rounds to. */
KILN_FN float kiln_exp2_f32(float x) {
  int zero = x < -150.0f;
  float r = __builtin_exp2f(zero ? 0.0f : x);
  return zero ? 0.0f : r;
}
#else
/* 2^x in f32 without libm, for compilers with no vector math library (cc): 2^n · 2^f with
   n = rint(x), |f| <= 1/2, a degree-6 minimax polynomial for 2^f (relative error 1.9e-9) and
   2^n as two factors 2^(n/2) · 2^(n - n/2), so a result below FLT_MIN rounds once, as a
   subnormal. Within 0.95 ulp of the exact value for every f32 input with fused multiply-adds,
   1.23 without (checked exhaustively once; a sample in tests/correctness/exp2_test.cpp).
   Branch-free, so loops over it vectorise. Below -150 (-inf included) the result is +0 without
   computing it: an underflowing product costs the FPU a microcode assist (2.4x the time of a
   normal lane). Above 129 the input is clamped: +inf gives inf. */
KILN_FN float kiln_exp2_f32(float x) {
  int zero = x < -150.0f;
  float c = zero ? 0.0f : x;
  c = c > 129.0f ? 129.0f : c;
  float n = __builtin_rintf(c);
  float f = c - n;
  float p = 1.53458124e-4f;
  p = p * f + 1.33999309e-3f;
  p = p * f + 9.61848907e-3f;
  p = p * f + 5.55032864e-2f;
  p = p * f + 2.40226462e-1f;
  p = p * f + 6.93147182e-1f;
  p = p * f + 1.0f;
  int32_t k = (int32_t)n, h = k >> 1;
  int32_t b1 = (h + 127) << 23, b2 = (k - h + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, 4);
  memcpy(&s2, &b2, 4);
  float r = p * s1 * s2;
  r = zero ? 0.0f : r;
  return x != x ? x : r;
}
#endif
)KILN";

}  // namespace kiln
