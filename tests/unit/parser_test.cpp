#include <doctest/doctest.h>

#include "dsl/parser.h"

using namespace kiln;

namespace {

SourceText text(const std::string& s) {
  SourceText t;
  t.text = s;
  t.file = "mem.toml";
  int line = 1, col = 1;
  for (char c : s) {
    t.pos.push_back({line, col});
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  t.pos.push_back({line, col});
  return t;
}

}  // namespace

TEST_CASE("parser: expressions keep precedence and locations") {
  struct Case {
    const char* in;
    const char* printed;
  };
  const Case cases[] = {
      {"a + b * c", "(a + (b * c))"},
      {"(a + b) * c", "((a + b) * c)"},
      {"-x ** 2", "-(x ** 2)"},
      {"a < b & c == d", "((a < b) & (c == d))"},
      {"f(x, axis=-1, keepdim=true)", "f(x, axis=-1, keepdim=true)"},
      {"A[m, k] * B[k, n]", "(A[m, k] * B[k, n])"},
      {"pad(x, 2, 1, 1)[b, i*s + r]", "pad(x, 2, 1, 1)[b, ((i * s) + r)]"},
      {"[1, 2, N]", "[1, 2, N]"},
      {"a << 3 | b >> 2", "((a << 3) | (b >> 2))"},
      {"x // 2 % 3", "((x // 2) % 3)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.in);
    CHECK(expr_str(*parse_expression(text(c.in))) == c.printed);
  }
}

TEST_CASE("parser: numbers") {
  auto e = parse_expression(text("0x1BD11BDA"));
  CHECK(e->is_integer);
  CHECK(e->integer == 0x1BD11BDA);
  e = parse_expression(text("1e-5"));
  CHECK_FALSE(e->is_integer);
  CHECK(e->number == doctest::Approx(1e-5));
  e = parse_expression(text("1_000"));
  CHECK(e->integer == 1000);
}

TEST_CASE("parser: bodies, targets and comments") {
  auto body =
      parse_body(text("m = max(x, axis=-1)  # row max\n\n e = exp(x - m); y = e\nC[m, n] = "
                      "sum(A[m, k] *\n  B[k, n], k)\na, b = f(x)\n"));
  REQUIRE(body.size() == 5);
  CHECK(body[0].targets[0].name == "m");
  CHECK(body[2].targets[0].name == "y");
  CHECK(body[3].targets[0].indexed);
  CHECK(body[3].targets[0].indices.size() == 2);
  CHECK(body[3].value->loc.line == 4);
  CHECK(body[4].targets.size() == 2);
}

TEST_CASE("parser: types") {
  TypeSpec t = parse_type(text("const T[..., N, (H + 2*pad - R) / stride + 1]"));
  CHECK(t.is_const);
  CHECK(t.batch);
  CHECK(t.dtype == "T");
  CHECK(t.dims.size() == 2);
  t = parse_type(text("f32[]"));
  CHECK(t.has_shape);
  CHECK(t.dims.empty());
  t = parse_type(text("T"));
  CHECK_FALSE(t.has_shape);
}

TEST_CASE("parser: errors point at the offending token") {
  struct Case {
    const char* in;
    int line, col;
    const char* message;
  };
  const Case cases[] = {
      {"y = (x + 1", 1, 11, "expected ')'"},
      {"y = x +\n", 1, 8, "expected an expression"},
      {"y = x $ 2", 1, 7, "unexpected character '$'"},
      {"y x", 1, 3, "expected '='"},
      {"y = f(a=1, b)", 1, 12, "expected a keyword argument"},
      {"y[i, 2] = x", 1, 6, "expected an index name"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.in);
    try {
      parse_body(text(c.in));
      FAIL("no error");
    } catch (const SpecError& e) {
      CHECK(e.loc().line == c.line);
      CHECK(e.loc().col == c.col);
      CHECK(std::string(e.what()).find(c.message) != std::string::npos);
    }
  }
  CHECK_THROWS_AS(parse_type(text("T[N, ..., M]")), SpecError);
  CHECK_THROWS_AS(parse_type(text("T[N")), SpecError);
}
