// Comparing outputs with the interpreter (driver/compare.h): integers exactly, with the element
// that differs named exactly (u64 past 2^63, i64 past 2^53); floats within the dtype's tolerance.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "driver/compare.h"

using namespace kiln;

TEST_CASE("compare: integers compare exactly and report the differing element exactly") {
  Tensor got(DType::u64, {3}), want(DType::u64, {3});
  for (size_t k = 0; k < 3; ++k) {
    got.set_int(k, static_cast<int64_t>(k));
    want.set_int(k, static_cast<int64_t>(k));
  }
  got.set_int(2, -1);  // 2^64 - 1
  want.set_int(2, -2);
  Comparison c = compare(got, want, tolerance_for(DType::u64, {}, {}, want));
  REQUIRE_FALSE(c.ok);
  CHECK(c.first_bad == 2);
  CHECK(c.got == "18446744073709551615");
  CHECK(c.want == "18446744073709551614");
  // i64 values 1 apart beyond 2^53 round together as doubles; they still differ.
  Tensor a(DType::i64, {1}), b(DType::i64, {1});
  a.set_int(0, std::numeric_limits<int64_t>::max());
  b.set_int(0, std::numeric_limits<int64_t>::max() - 1);
  c = compare(a, b, tolerance_for(DType::i64, {}, {}, b));
  REQUIRE_FALSE(c.ok);
  CHECK(c.got == "9223372036854775807");
  CHECK(c.want == "9223372036854775806");
  CHECK(compare(a, a, tolerance_for(DType::i64, {}, {}, a)).ok);
}

TEST_CASE("compare: floats within tolerance pass, outside it report both values") {
  Tensor got(DType::f64, {2}), want(DType::f64, {2});
  got.set(0, 1.0);
  want.set(0, 1.0 + 1e-12);
  got.set(1, 0.1);
  want.set(1, 0.2);
  Comparison c = compare(got, want, tolerance_for(DType::f64, {}, {}, want));
  REQUIRE_FALSE(c.ok);
  CHECK(c.first_bad == 1);
  CHECK(c.got == "0.10000000000000001");
  CHECK(c.want == "0.20000000000000001");
}
