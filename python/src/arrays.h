/** \file
 * What the Python package needs to know about a caller's array (nanobind's nb::ndarray, which
 * takes NumPy arrays, PyTorch tensors and anything with __dlpack__): Kiln's dtype names as
 * DLPack dtypes, dense row-major layout, the device, and the spellings of shapes in messages.
 */
#pragma once

#include <nanobind/ndarray.h>

#include <optional>
#include <string>

namespace kiln::py {

namespace nb = nanobind;

/** An array of any kind, as Kiln reads it (inputs: read-only arrays are fine). */
using InArray = nb::ndarray<nb::ro>;
/** An array Kiln writes (outputs: read-only arrays are refused). */
using OutArray = nb::ndarray<>;

/** The DLPack dtype of a Kiln dtype name ("f32", "bf16", "bool", ...); nullopt for none. */
std::optional<nb::dlpack::dtype> dlpack_dtype(const std::string& kiln_name);

/** The Kiln name of a DLPack dtype ("f32"), or a description such as "complex64" for one Kiln
 *  has no name for. */
std::string dtype_name(nb::dlpack::dtype d);

/** Dense and row-major (C order): what Kiln's kernels index. Strides of dimensions of size 1
 *  and arrays of no elements do not matter. */
bool c_contiguous(const InArray& a);

/** "(2, 3)": a shape as Python prints a tuple. */
std::string shape_str(const InArray& a);

/** "(12, 1)": strides in elements, as Python prints a tuple. */
std::string strides_str(const InArray& a);

/** True for memory the CPU reads: DLPack's CPU and CUDA host (pinned) devices. */
bool on_host(const InArray& a);

/** True for memory of CUDA device `id` that kernels there read: DLPack's CUDA and CUDA managed
 *  devices. */
bool on_cuda_device(const InArray& a, int id);

/** "cuda:0", "cpu", "device type 8:0": where the array lives, for messages. */
std::string device_str(const InArray& a);

/** The first and one-past-last byte the array covers. */
std::pair<const char*, const char*> byte_range(const InArray& a);

}  // namespace kiln::py
