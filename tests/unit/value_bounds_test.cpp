// ir/value_bounds: the interval of an invariant value, and when it is surely positive.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ir/value_bounds.h"

using namespace kiln;

namespace {

ScalarExprPtr constant(double x, DType t = DType::f32) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::constant;
  e->dtype = t;
  e->value = x;
  return e;
}

ScalarExprPtr size(const IntExpr& s) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::constant;
  e->dtype = DType::i64;
  e->symbolic = true;
  e->size_value = s;
  return e;
}

ScalarExprPtr op(Op o, std::vector<ScalarExprPtr> args, DType t = DType::f32) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::op;
  e->op = o;
  e->dtype = t;
  e->args = std::move(args);
  return e;
}

}  // namespace

TEST_CASE("value bounds: attention's scale 1 / sqrt(D) is positive, whatever D and dtype") {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    const std::string name(dtype_name(t));
    CAPTURE(name);
    ScalarExprPtr d = op(Op::cast, {size(IntExpr::var("D"))}, t);
    ScalarExprPtr k = op(Op::recip, {op(Op::sqrt, {d}, t)}, t);
    std::optional<ValueBounds> b = invariant_bounds(*k);
    REQUIRE(b);
    CHECK(b->lo > 0);
    CHECK(b->lo < 1e-9);  // D up to 2^63
    CHECK(b->hi == inf);  // D = 0
    CHECK(surely_positive(*k));
  }
  // A known size: one value.
  std::optional<ValueBounds> b =
      invariant_bounds(*op(Op::recip, {op(Op::sqrt, {op(Op::cast, {size(IntExpr(64))})})}));
  REQUIRE(b);
  CHECK(b->lo == 0.125);
  CHECK(b->hi == 0.125);
}

TEST_CASE("value bounds: signs, products and what the analysis does not follow") {
  CHECK(surely_positive(*constant(0.5)));
  CHECK_FALSE(surely_positive(*constant(0)));
  CHECK_FALSE(surely_positive(*constant(-0.125)));
  CHECK_FALSE(surely_positive(*constant(1e-35)));  // lost next to f32's scores
  CHECK_FALSE(surely_positive(*op(Op::neg, {constant(2)})));
  CHECK(surely_positive(*op(Op::mul, {constant(2), constant(0.25)})));
  CHECK_FALSE(surely_positive(*op(Op::mul, {constant(-2), constant(-0.25)})));  // not followed
  CHECK(surely_positive(*op(Op::exp2, {constant(-3)})));
  CHECK(surely_positive(*op(Op::add, {constant(-1), constant(1.5)})));
  CHECK_FALSE(surely_positive(*op(Op::add, {constant(-1), constant(0.5)})));
  // D - 1 may be negative, D * H may not; sqrt of a maybe negative value is not followed.
  CHECK_FALSE(invariant_bounds(*size(IntExpr::var("D") - IntExpr(1))));
  CHECK(invariant_bounds(*size(IntExpr::var("D") * IntExpr::var("H"))));
  CHECK_FALSE(invariant_bounds(*op(Op::sqrt, {constant(-1)})));
  // 2^200 overflows f32: infinite there, not in f64.
  CHECK(invariant_bounds(*op(Op::exp2, {constant(200)}))->hi ==
        std::numeric_limits<double>::infinity());
  CHECK(invariant_bounds(*op(Op::exp2, {constant(200, DType::f64)}, DType::f64))->hi ==
        std::exp2(200.0));
  // A load varies: no bounds.
  auto load = std::make_shared<ScalarExpr>();
  load->kind = ScalarExpr::Kind::load;
  load->buffer = 0;
  CHECK_FALSE(invariant_bounds(*op(Op::mul, {constant(2), load})));
  CHECK_FALSE(invariant_bounds(*constant(std::nan(""))));
}
