/** \file
 * Checks a backward graph against central finite differences of its forward graph, both on the
 * reference interpreter. With random cotangents dy, the scalar L(x) = sum over outputs of
 * sum(dy * y(x)) has dL/dx = the backward graph's dx; each element of each chosen input is moved
 * by ±eps and (L(x + eps) - L(x - eps)) / 2 eps compared with it, within atol + rtol * |numeric|
 * plus L's rounding in f64 divided by the step (4 * DBL_EPSILON * sum |dy * y| / eps). An output
 * element that is not finite at the inputs gets a zero cotangent and stays out of L. Meant for f64
 * graphs and small sizes: it runs the forward graph twice per element. Used by `kiln grad --check`
 * and the tests.
 */
#pragma once

#include <string>
#include <vector>

#include "autodiff/gradient.h"
#include "ir/interpreter.h"

namespace kiln {

/** How one input's gradient compares. */
struct GradCheck {
  std::string input;     ///< the forward input
  double max_error = 0;  ///< the largest |analytic - numeric| - rtol * |numeric|, over atol
  size_t worst = 0;      ///< the element where it is largest
  double analytic = 0;   ///< the backward graph's value there
  double numeric = 0;    ///< the finite difference there
  bool ok = true;        ///< every element within atol + rtol * |numeric|
};

/** Tolerances and step of a check. */
struct GradCheckOptions {
  double eps = 1e-6;
  double rtol = 1e-5;
  double atol = 1e-7;
  uint64_t seed = 7;  ///< of the cotangents
};

/** Compares `backward` (from autodiff/gradient.h `gradient(forward, wrt)`) with finite
 *  differences of `forward` at `inputs` (in forward.inputs order), one entry per name of `wrt`. */
std::vector<GradCheck> check_gradient(const Graph& forward, const Graph& backward,
                                      const std::vector<std::string>& wrt,
                                      const SizeBindings& sizes, const std::vector<Tensor>& inputs,
                                      const GradCheckOptions& opt = {});

/** The same for a backward graph that takes saved values: `backward.forward` runs first, on the
 *  interpreter, and gives them. */
std::vector<GradCheck> check_gradient(const Graph& forward, const Backward& backward,
                                      const std::vector<std::string>& wrt,
                                      const SizeBindings& sizes, const std::vector<Tensor>& inputs,
                                      const GradCheckOptions& opt = {});

}  // namespace kiln
