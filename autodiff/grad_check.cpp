#include "autodiff/grad_check.h"

#include <cmath>
#include <limits>

namespace kiln {

namespace {

/** sum over outputs of sum(dy * y), over the elements `counted` (finite at the unmoved inputs);
 *  with `magnitude`, the sum of |dy * y| too. */
double pairing(const std::vector<Tensor>& ys, const std::vector<Tensor>& dys,
               const std::vector<std::vector<bool>>& counted, double* magnitude = nullptr) {
  double sum = 0, abs_sum = 0;
  for (size_t o = 0; o < ys.size(); ++o)
    if (!dys[o].f.empty())
      for (size_t k = 0; k < ys[o].f.size(); ++k)
        if (counted[o][k]) {
          sum += ys[o].f[k] * dys[o].f[k];
          abs_sum += std::fabs(ys[o].f[k] * dys[o].f[k]);
        }
  if (magnitude) *magnitude = abs_sum;
  return sum;
}

}  // namespace

std::vector<GradCheck> check_gradient(const Graph& forward, const Graph& backward,
                                      const std::vector<std::string>& wrt,
                                      const SizeBindings& sizes, const std::vector<Tensor>& inputs,
                                      const GradCheckOptions& opt) {
  Backward b;
  b.graph = backward;
  b.forward = forward;
  return check_gradient(forward, b, wrt, sizes, inputs, opt);
}

std::vector<GradCheck> check_gradient(const Graph& forward, const Backward& backward,
                                      const std::vector<std::string>& wrt,
                                      const SizeBindings& sizes, const std::vector<Tensor>& inputs,
                                      const GradCheckOptions& opt) {
  // the forward outputs and the saved values; then the cotangents, one per float output, in the
  // backward graph's inputs after the forward inputs and the saved values
  std::vector<Tensor> ys = interpret(backward.forward, sizes, inputs);
  std::vector<Tensor> bwd_inputs = inputs;
  bwd_inputs.insert(bwd_inputs.end(), ys.begin() + ptrdiff_t(forward.outputs.size()), ys.end());
  ys.resize(forward.outputs.size());
  // An output element that is not finite at the inputs (the -inf an exclusive running maximum
  // starts with) has no finite difference: it gets a zero cotangent and is left out of L.
  std::vector<Tensor> dys(ys.size());
  std::vector<std::vector<bool>> counted(ys.size());
  for (size_t o = 0; o < ys.size(); ++o) {
    if (!is_float(ys[o].dtype)) continue;
    dys[o] = random_tensor(ys[o].dtype, ys[o].dims, opt.seed + o, -1, 1);
    counted[o].assign(ys[o].f.size(), true);
    for (size_t k = 0; k < ys[o].f.size(); ++k)
      if (!std::isfinite(ys[o].f[k])) {
        counted[o][k] = false;
        dys[o].f[k] = 0;
      }
    bwd_inputs.push_back(dys[o]);
  }
  // L's rounding in f64, which the difference quotient divides by 2 eps, is allowed for
  double magnitude = 0;
  pairing(ys, dys, counted, &magnitude);
  double rounding = 4 * std::numeric_limits<double>::epsilon() * magnitude / opt.eps;
  std::vector<Tensor> grads = interpret(backward.graph, sizes, bwd_inputs);
  std::vector<GradCheck> out;
  for (size_t w = 0; w < wrt.size(); ++w) {
    size_t slot = 0;
    while (forward[forward.inputs.at(slot)].name != wrt[w])
      ++slot;
    GradCheck c;
    c.input = wrt[w];
    std::vector<Tensor> moved = inputs;
    for (size_t k = 0; k < inputs[slot].f.size(); ++k) {
      double x = inputs[slot].f[k];
      moved[slot].f[k] = x + opt.eps;
      double up = pairing(interpret(forward, sizes, moved), dys, counted);
      moved[slot].f[k] = x - opt.eps;
      double down = pairing(interpret(forward, sizes, moved), dys, counted);
      moved[slot].f[k] = x;
      double numeric = (up - down) / (2 * opt.eps), analytic = grads[w].f[k];
      double error = std::fabs(analytic - numeric) - opt.rtol * std::fabs(numeric);
      if (!(error <= opt.atol + rounding)) c.ok = false;
      double gap = std::fabs(analytic - numeric);
      if (k == 0 || !(gap <= c.max_error)) {
        c.max_error = std::isnan(gap) ? INFINITY : gap;
        c.worst = k;
        c.analytic = analytic;
        c.numeric = numeric;
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace kiln
