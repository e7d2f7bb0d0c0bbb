// f32 2^x on the CPU runtimes (backends/c_prelude.cpp, kiln_exp2_f32: libmvec's vector exp2f
// with lanes below -150 kept off its slow path on clang and openmp, a polynomial on cc) against
// the exact value, over every 509th f32 bit pattern of both signs and the edges of its range:
// under 1.25 ulp (the polynomial: 0.948 with fused multiply-adds, 1.227 without, in an exhaustive
// run of all 2^32 inputs), infinities, zeros and NaN exactly where the correctly rounded result
// has them. One vector loop: lanes at -inf (a masked score) run beside ordinary ones.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

const char* const kSpec = R"KILN(
[exp2_f32]
in   = { x = "f32[N]" }
out  = { y = "f32[N]" }
body = "y = exp2(x)"
)KILN";

std::vector<float> inputs() {
  std::vector<float> xs;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 509) {
    uint32_t b = static_cast<uint32_t>(u);
    float x;
    std::memcpy(&x, &b, 4);
    xs.push_back(x);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {inf, -inf, std::nanf(""), 0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 127.0f, 128.0f,
                  -126.0f, -127.0f, -149.0f, -149.5f, -150.0f, -151.0f, -1000.0f, 1000.0f})
    xs.push_back(x);
  // Every f32 where results turn subnormal, underflow or overflow, densely.
  for (float x = -151.0f; x < -125.0f; x += 1.0f / 4096)
    xs.push_back(x);
  for (float x = 127.0f; x < 129.0f; x += 1.0f / 4096)
    xs.push_back(x);
  return xs;
}

}  // namespace

TEST_CASE(
    "exp2: f32 2^x within 1.25 ulp of the exact value, specials exact, on every CPU runtime") {
  kiln::Spec spec = kiln::Spec::from_string(kSpec, "exp2_test");
  std::vector<float> xs = inputs();
  for (const std::string runtime : {"clang", "openmp", "cc"}) {
    CAPTURE(runtime);
    kiln::Compiled c = kiln::compile(spec, "exp2_f32", runtime);
    std::vector<float> ys(xs.size());
    c.run({xs.data(), ys.data()}, {{"N", static_cast<int64_t>(xs.size())}});
    double worst = 0;
    float worst_x = 0;
    int64_t wrong = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double exact = std::exp2(static_cast<double>(xs[i]));
      const float rounded = static_cast<float>(exact);
      if (std::isnan(xs[i])) {
        wrong += !std::isnan(ys[i]);
      } else if (std::isinf(rounded) || rounded == 0) {
        // Past the range: exactly what rounding the exact value gives (+0 or inf).
        wrong += !(ys[i] == rounded && !std::signbit(ys[i]));
      } else {
        const double ulp =
            std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
        const double err = std::fabs(ys[i] - exact) / ulp;
        if (err > worst) worst = err, worst_x = xs[i];
      }
    }
    CAPTURE(worst_x);
    CHECK(wrong == 0);
    CHECK(worst <= 1.25);
    MESSAGE(runtime << ": " << xs.size() << " inputs, worst " << worst << " ulp at " << worst_x);
  }
}
