#include <doctest/doctest.h>

#include <stdexcept>

#include "ir/int_expr.h"

using namespace kiln;

namespace {

const IntExpr M = IntExpr::var("M");
const IntExpr N = IntExpr::var("N");

}  // namespace

TEST_CASE("int_expr: equal polynomials compare equal") {
  struct Case {
    const char* what;
    IntExpr a, b;
  };
  const Case cases[] = {
      {"(N+1)*2 == 2*N+2", (N + 1) * 2, 2 * N + 2},
      {"commutative sum", M + N, N + M},
      {"commutative product", M * N, N * M},
      {"distributive", (M + N) * (M - N), M * M - N * N},
      {"cancellation", N + M - N, M},
      {"zero", N - N, IntExpr(0)},
      {"constants fold", IntExpr(3) * 4 + 1, IntExpr(13)},
      {"negation", -(N - 1), 1 - N},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CHECK(c.a == c.b);
    CHECK(c.a.key() == c.b.key());
  }
  CHECK(N + 1 != N + 2);
  CHECK(M * N != M + N);
}

TEST_CASE("int_expr: floordiv and mod simplify divisible terms") {
  IntExpr i = IntExpr::index(0);
  CHECK(floordiv(2 * N + 4, 2) == N + 2);
  CHECK(mod(2 * N + 4, 2) == IntExpr(0));
  CHECK(floordiv(i * N, N) == i);
  CHECK(mod(i * N, N) == IntExpr(0));
  CHECK(floordiv(i * N + IntExpr::index(1), N) == i + floordiv(IntExpr::index(1), N));
  CHECK(mod(i * N + IntExpr::index(1), N) == mod(IntExpr::index(1), N));
  CHECK(floordiv(N, 1) == N);
  CHECK(mod(N, 1) == IntExpr(0));
  CHECK(floordiv(IntExpr(-7), IntExpr(2)) == IntExpr(-4));  // floor, not truncation
  CHECK(mod(IntExpr(-7), IntExpr(2)) == IntExpr(1));        // sign of the divisor
  CHECK(mod(IntExpr(7), IntExpr(-2)) == IntExpr(-1));
  CHECK_THROWS_AS(floordiv(N, 0), std::runtime_error);
  CHECK_FALSE(floordiv(N + 1, 2).is_constant());
}

TEST_CASE("int_expr: a modulus and its division recombine") {
  IntExpr i = IntExpr::index(0), j = IntExpr::index(1);
  // i % N + N * (i / N) == i, for any i (floor division), times any factor and beside other terms
  CHECK(mod(i, N) + N * floordiv(i, N) == i);
  CHECK(M * mod(i, N) + M * N * floordiv(i, N) + j == M * i + j);
  CHECK(mod(i, IntExpr(4)) + 4 * floordiv(i, IntExpr(4)) == i);
  // the terms must match: a different coefficient, divisor or factor stays as it is
  CHECK(mod(i, N) + 2 * N * floordiv(i, N) != i);
  CHECK(mod(i, N) + M * floordiv(i, N) != i);
  CHECK(mod(i, N) + N * floordiv(j, N) != i);
}

TEST_CASE("int_expr: eval") {
  std::map<std::string, int64_t> env = {{"M", 3}, {"N", 5}, {"%0", -7}};
  IntExpr i = IntExpr::index(0);
  struct Case {
    IntExpr e;
    int64_t expected;
  };
  const Case cases[] = {
      {(N + 1) * 2, 12},       {M * N - 4, 11},      {floordiv(N, 2), 2},
      {mod(N, 2), 1},          {floordiv(i, 2), -4}, {mod(i, 2), 1},
      {floordiv(M * N, M), 5}, {mod(i, N), 3},       {IntExpr(0), 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.e.str());
    CHECK(c.e.eval(env) == c.expected);
  }
  CHECK_THROWS_WITH_AS(IntExpr::var("K").eval(env), doctest::Contains("'K'"), std::runtime_error);
}

TEST_CASE("int_expr: substitute") {
  IntExpr e = M * N + 2 * N;
  CHECK(e.substitute({{"N", IntExpr(3)}}) == 3 * M + 6);
  CHECK(e.substitute({{"M", N}}) == N * N + 2 * N);
  CHECK(e.substitute({}) == e);
  CHECK(floordiv(N, 2).substitute({{"N", IntExpr(9)}}) == IntExpr(4));
  CHECK(mod(IntExpr::index(0), N).substitute({{"%0", 2 * N + 1}}) == mod(IntExpr(1), N));
  // substitution is simultaneous: the N in a replacement is not replaced again
  CHECK((IntExpr::index(0) + N).substitute({{"%0", N}, {"N", IntExpr(4)}}) == N + 4);
}

TEST_CASE("int_expr: str, as_var, collect_vars, is_affine") {
  CHECK(IntExpr(0).str() == "0");
  CHECK(IntExpr(-3).str() == "-3");
  CHECK((N + 1).str() == "N + 1");
  CHECK((N - 1).str() == "N - 1");
  CHECK((2 * N).str() == "2*N");
  CHECK((1 - N).str() == "-N + 1");
  CHECK(floordiv(N + 1, 2).str() == "((N + 1) / 2)");
  CHECK(mod(N, 3).str() == "(N % 3)");
  CHECK(shape_str({M, N + 1}) == "[M, N + 1]");
  CHECK(N.as_var() == "N");
  CHECK_FALSE((2 * N).as_var());
  std::set<std::string> vars;
  (M * floordiv(N, IntExpr::index(0))).collect_vars(vars);
  CHECK(vars == std::set<std::string>{"%0", "M", "N"});
  CHECK((2 * M + N + 1).is_affine());
  CHECK_FALSE((M * N).is_affine());
  CHECK_FALSE(floordiv(N, 2).is_affine());
}

TEST_CASE("int_expr: shapes") {
  CHECK(same_shape({M, N + 1}, {M, 1 + N}));
  CHECK_FALSE(same_shape({M, N}, {N, M}));
  CHECK_FALSE(same_shape({M}, {M, 1}));
  CHECK(eval_shape({M, N * 2, 7}, {{"M", 3}, {"N", 4}}) == std::vector<int64_t>{3, 8, 7});
}
