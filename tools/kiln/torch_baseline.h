/** \file
 * `kiln bench --vs torch`: the composite's `baseline.torch` expression run by PyTorch in a helper
 * process (tools/baselines/torch_baseline.py, started with KILN_PYTHON or python3), on the same
 * inputs, timed by the helper run by run on Kiln's request. PyTorch stays out of Kiln's process
 * and out of its dependencies.
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "tools/kiln/bench_subjects.h"

namespace kiln::cli {

/** A tensor the helper reads or writes. */
struct TorchTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
};

/** What the helper is asked to run. */
struct TorchRequest {
  std::string expr;            ///< the Python expression of `baseline.torch`
  std::string where;           ///< its location, FILE:LINE:COL, for the helper's messages
  std::string mode = "eager";  ///< eager, or compile (torch.compile)
  std::string device = "cpu";  ///< cpu or cuda
  int threads = 0;             ///< torch.set_num_threads; 0: PyTorch's own choice
  std::vector<TorchTensor> inputs, outputs;
  std::string attrs_json = "{}", sizes_json = "{}";  ///< JSON objects of name: value
};

/** Starts the helper on `inputs` (in request.inputs' order); it has run once and written its
 *  outputs when this returns. A helper that cannot start, cannot import torch or fails on the
 *  expression is a std::runtime_error with the helper's message. */
std::unique_ptr<Subject> make_torch_baseline(const TorchRequest& request,
                                             const std::vector<Tensor>& inputs);

}  // namespace kiln::cli
