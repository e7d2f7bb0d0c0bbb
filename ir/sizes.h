/** \file
 * Checked size arithmetic and the limits on tensor sizes (docs/spec-language.md "Limits"). Every
 * element count, byte count and bound shape goes through here, so a size too large for int64,
 * for memory or for the int64 index arithmetic of generated code is one clear error naming the
 * tensor, its shape and the bound sizes, instead of a wrapped count, a crash or a bare
 * std::bad_alloc.
 */
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/int_expr.h"
#include "ir/limits.h"

namespace kiln {

class Graph;

/** The most elements a tensor held in memory may have: 2^40. At 8 bytes an element that is at
 *  most 2^43 bytes, which fits int64 and a 47-bit address space, and every offset into the
 *  tensor (a sum of index * stride, each stride * extent at most the element count) fits the
 *  int64 index arithmetic of generated code with room to spare. */
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

/** a + b, or nullopt when it overflows int64. */
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/** a * b, or nullopt when it overflows int64. */
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/** The product of `dims`: 0 when one is 0, nullopt when one is negative or it overflows int64. */
inline std::optional<int64_t> checked_product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  bool zero = false, overflow = false;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    zero = zero || d == 0;
    overflow = __builtin_mul_overflow(n, d, &n) || overflow;
  }
  if (zero) return 0;
  if (overflow) return std::nullopt;
  return n;
}

/** A tensor size beyond a limit, a negative dimension, or a size expression overflowing int64. */
struct SizeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** The element count of `dims`, checked: throws SizeError naming `what` when a dimension is
 *  negative, the rank exceeds kMaxRank, or the count exceeds `limit`. */
int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what,
                      int64_t limit = kMaxElements);

/** The byte count of a dense tensor of `dtype` and `dims`, checked as checked_numel does. */
int64_t checked_bytes(DType dtype, const std::vector<int64_t>& dims, const std::string& what);

/** Evaluates `shape` with the bound sizes, checking every dimension and the element count
 *  against `limit`. A SizeError names `what`, the shape and the sizes it uses, e.g. "output 'y'
 *  of 'matmul': f32[M, N] with M = 4294967296, N = 4294967296 has 18446744073709551616
 *  elements, more than the limit 2^40"; a dimension that overflows int64 or is negative (`H - 3`
 *  with H = 2) is named by its position and expression. */
std::vector<int64_t> eval_checked_shape(const std::string& what, DType dtype, const Shape& shape,
                                        const std::map<std::string, int64_t>& sizes,
                                        int64_t limit = kMaxElements);

/** Checks every node of `g` for the bound sizes (every size variable must be bound): inputs and
 *  outputs are held in memory (at most kMaxElements); other nodes are too when `interior_in_memory`
 *  (the reference interpreter holds every node), else their element count, the size of their
 *  loop nest in generated code, must only fit int64. Throws SizeError naming the first offending
 *  tensor: inputs first, then outputs, then the other nodes. */
void check_graph_sizes(const Graph& g, const std::map<std::string, int64_t>& sizes,
                       bool interior_in_memory);

}  // namespace kiln
