/** \file
 * NumPy's `.npy` files (format versions 1.0, 2.0 and 3.0), for `kiln run --input NAME=FILE.npy`
 * and `--save DIR`: the magic string, a header that is a Python dict literal (`descr`,
 * `fortran_order`, `shape`), then the elements, row-major. Little-endian (or byte-sized)
 * elements of f8, f4, f2, i8, i4, i2, i1, u1 and b1. NumPy has no bfloat16: a bf16 tensor is
 * written as f4, and a bf16 input reads f4 or f2 files, rounded. Every malformed file is one
 * NpyError naming the file and what is wrong; the parser never reads past the buffer it is
 * given (tests/fuzz/npy_fuzzer.cpp).
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

/** A file that is not a `.npy` Kiln reads: "FILE: what is wrong". */
struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** The tensor in `size` bytes of a `.npy` file; `name` goes into error messages. */
Tensor parse_npy(const void* data, size_t size, const std::string& name);

/** The tensor in the file at `path`. Throws NpyError. */
Tensor read_npy(const std::string& path);

/** `t` as the bytes of a version 1.0 `.npy` file (bf16 as f4). */
std::vector<uint8_t> npy_bytes(const Tensor& t);

/** Writes `t` to `path`. Throws NpyError when the file cannot be written. */
void write_npy(const std::string& path, const Tensor& t);

}  // namespace kiln
