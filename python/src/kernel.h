/** \file
 * kiln.Kernel: a compiled composite called on arrays (docs/python.md). Each call binds the
 * size variables from the arguments' shapes, checks every argument's dtype, shape, layout and
 * device against the composite, allocates the outputs the caller did not pass and hands the
 * arrays' own pointers to kiln::Compiled::run: no copy on CPU runtimes.
 */
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "arrays.h"
#include "kiln/kiln.h"

namespace kiln::py {

class Kernel {
 public:
  /** `allocate(like, shape, dtype, device)` makes an output array: `like` is the first input (or
   *  None), `shape` a tuple, `dtype` a Kiln dtype name, `device` true for CUDA memory
   *  (kiln/_arrays.py). */
  Kernel(Compiled compiled, nb::object allocate);

  /** Runs on `args` (the inputs, in declaration order); `out` is None, an array (one output)
   *  or a sequence of arrays and Nones, one per output; `sizes` a dict binding size variables
   *  that no argument's shape gives; `stream` (CUDA runtimes) the stream to launch on, None:
   *  PyTorch's current stream when an argument is a tensor, else CUDA's default stream. Returns
   *  the output, or a tuple of them; on CUDA without waiting for the kernels. */
  nb::object call(nb::args args, nb::handle out, nb::handle sizes, nb::handle stream);

  /** The sizes the call would bind, without running: {name: value}. */
  nb::dict bind(nb::args args, nb::handle out, nb::handle sizes);

  const Compiled& compiled() const { return compiled_; }
  /** "kiln.Kernel(softmax on clang: x f32[batch0, N] -> y f32[batch0, N])". */
  std::string repr() const;

 private:
  /** An input or output as the composite declares it. */
  struct Port {
    std::string name, dtype, role;  ///< role: "input 'x'", "out= for output 'y'"
    std::optional<nb::dlpack::dtype> dl;
    std::vector<std::string> dims;  ///< symbolic, one per dimension
    std::vector<int> var;           ///< per dimension: the size variable it is, or -1
    bool plain = true;              ///< every dimension is a size variable or a literal
    std::vector<int64_t> literal;   ///< per dimension: the literal size, or -1
    bool is_const = false;
  };
  /** One call's arguments and bindings. */
  struct Call;

  Port port(const std::string& name, const std::string& role) const;
  const std::string& where() const;
  /** "input 'a' dimension 1", or "sizes=": what bound size variable `v` in call `c`. */
  std::string bound_by(const Call& c, size_t v) const;
  /** The message for an argument that is no array nanobind can read. */
  std::string unreadable(const Port& p, nb::handle h) const;
  /** dtype, device, rank and layout; TypeError or ValueError naming the argument. */
  void check_array(const Port& p, const InArray& a) const;
  std::string expected(const Port& p) const;
  void take_input(Call& c, size_t k, nb::handle h) const;
  void take_output(Call& c, size_t k, nb::handle h) const;
  void bind_dims(Call& c, const Port& p, const InArray& a) const;
  void bind_sizes(Call& c, nb::handle sizes) const;
  void check_shape(Call& c, const Port& p, const InArray& a) const;
  std::vector<int64_t> out_shape(Call& c, const Port& p) const;
  void prepare(Call& c, nb::args args, nb::handle out, nb::handle sizes, bool allocate) const;
  /** True when an output of port `p` and `shape` has `a`'s dtype and shape. */
  bool same_kind(const InArray& a, const Port& p, const std::vector<int64_t>& shape) const;
  /** The CUstream a device run launches on (call's `stream`). */
  void* stream_for(nb::args args, nb::handle stream) const;

  Compiled compiled_;
  bool device_ = false;  ///< the runtime reads device memory (Compiled::device_memory)
  nb::object allocate_;
  std::vector<std::string> vars_;
  std::vector<Port> inputs_, outputs_;
  /** The const inputs of the last call, kept alive: run() keeps packed panels of a const
   *  input by its pointer, so no other array may take that memory while they are kept. */
  std::vector<nb::object> kept_;
};

}  // namespace kiln::py
