// Softmax over three rows through Kiln's public API; run from the repository root.
#include <kiln/kiln.h>

#include <cstdio>
#include <vector>

int main() {
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::CompileSettings settings;
  settings.batch_rank = 1;  // x is T[..., N]: one batch dimension, size variable batch0
  kiln::Compiled softmax = kiln::compile(spec, "softmax", "clang", settings);

  std::map<std::string, int64_t> sizes = {{"batch0", 3}, {"N", 4}};
  std::vector<float> x(3 * 4), y(3 * 4);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.5f * static_cast<float>(i);
  softmax.run({x.data(), y.data()}, sizes);  // inputs, then outputs

  std::printf("y[0] = %.4f %.4f %.4f %.4f\nrow sums:", y[0], y[1], y[2], y[3]);
  for (int r = 0; r < 3; ++r)
    std::printf(" %.3g", y[4 * r] + y[4 * r + 1] + y[4 * r + 2] + y[4 * r + 3]);
  std::printf("\n");
}
