/** \file
 * Concrete tensors: the values the interpreter computes and the CLI fills with random data.
 * Floating-point elements are held as double, integer and bool elements as exact int64 (u64
 * values past 2^63 - 1 as their bits: ir/dtype.h reads them back).
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln {

/** A tensor's memory could not be allocated; the message names its type and bytes. */
struct TensorAllocError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** A dense row-major tensor with concrete dimensions. */
struct Tensor {
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
  std::vector<double> f;   ///< elements of a float tensor
  std::vector<int64_t> i;  ///< elements of an integer or bool tensor

  Tensor() = default;
  /** Zero elements of `dims`. Throws SizeError (ir/sizes.h) for a negative dimension, a rank
   *  over kMaxRank or more than kMaxElements elements, TensorAllocError when memory runs out. */
  Tensor(DType t, std::vector<int64_t> dims);
  /** The element count; throws SizeError when it overflows int64 or a dimension is negative. */
  size_t numel() const;
  /** Element `k` as a double (exact for integers up to 2^53). */
  double at(size_t k) const;
  /** Sets element `k`, rounding to the dtype (floats) or wrapping (integers; u64 takes values up
   *  to 2^64 exactly). */
  void set(size_t k, double v);
  void set_int(size_t k, int64_t v);
};

/** Fills a tensor with seeded uniform values in [lo, hi) (integers: [lo, hi) rounded down).
 *  Deterministic across platforms: uses its own generator, not <random>'s distributions. */
Tensor random_tensor(DType t, const std::vector<int64_t>& dims, uint64_t seed, double lo,
                     double hi);

/** The storage bits of element `k` (floats are first rounded to their dtype; f16 and bf16 as
 *  IEEE binary16 and bfloat16 bits). */
uint64_t element_bits(const Tensor& t, size_t k);

/** Sets element `k` from its storage bits. */
void set_element_bits(Tensor& t, size_t k, uint64_t bits);

/** The tensor as a dense little-endian buffer of its dtype, as compiled kernels read it. */
std::vector<uint8_t> tensor_to_bytes(const Tensor& t);

/** A tensor read from such a buffer. */
Tensor tensor_from_bytes(DType t, const std::vector<int64_t>& dims, const void* data);

/** "f32[3, 5]" */
std::string tensor_type_str(const Tensor& t);

/** One line summarising the values: min, max, mean and the first few elements. */
std::string tensor_summary(const Tensor& t);

}  // namespace kiln
