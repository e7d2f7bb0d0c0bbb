// A program built outside Kiln against an installed Kiln (find_package(Kiln) or pkg-config):
// compiles a composite of a user's spec for a runtime named on the command line and checks that
// every row sums to one. Usage: consumer SPEC COMPOSITE RUNTIME
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: consumer SPEC COMPOSITE RUNTIME\n");
    return 2;
  }
  try {
    kiln::Spec spec = kiln::Spec::load(argv[1]);
    kiln::CompileSettings settings;
    settings.batch_rank = 1;
    kiln::Compiled program = kiln::compile(spec, argv[2], argv[3], settings);
    const int rows = 5, n = 33;
    std::vector<float> x(rows * n), y(rows * n);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = 0.01f * static_cast<float>(i % 17);
    program.run({x.data(), y.data()}, {{"batch0", rows}, {"N", n}});
    for (int r = 0; r < rows; ++r) {
      double sum = 0;
      for (int j = 0; j < n; ++j)
        sum += y[r * n + j];
      if (std::fabs(sum - 1) > 1e-5) {
        std::fprintf(stderr, "row %d sums to %g\n", r, sum);
        return 1;
      }
    }
    std::printf("%s on %s: %d rows, each sums to 1\n", argv[2], argv[3], rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
