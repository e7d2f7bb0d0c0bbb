// Shape facts (ir/size_facts.h): the prover's verdicts under stated facts, the checks of bound
// sizes, and lowering with `where` facts (dsl/facts.cpp): what is proved, refuted or deferred.
#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "dsl/check.h"
#include "dsl/lower.h"
#include "ir/interpreter.h"
#include "ir/size_facts.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

const IntExpr C = IntExpr::var("C");
const IntExpr F = IntExpr::var("F");
const IntExpr G = IntExpr::var("G");
const IntExpr J = IntExpr::var("J");
const IntExpr K = IntExpr::var("K");

SizeRelation rel(const IntExpr& a, Relation r, const IntExpr& b) {
  return {a, r, b};
}

SizeRelation eq(const IntExpr& a, const IntExpr& b) {
  return rel(a, Relation::eq, b);
}

/** A spec file of its own for one test, removed at the end. */
struct TempSpec {
  explicit TempSpec(const std::string& text)
      : path(std::filesystem::temp_directory_path() /
             ("kiln_facts_" + std::to_string(::getpid()) + ".toml")) {
    std::ofstream(path) << text;
  }
  ~TempSpec() { std::filesystem::remove(path); }
  std::filesystem::path path;
};

/** The graph of composite `name` of `text`, lowered with symbolic sizes (or `fixed`). */
Graph lower_text(const std::string& text, const std::string& name,
                 std::map<std::string, int64_t> fixed = {}) {
  TempSpec spec(text);
  Library lib;
  const SpecFile& f = lib.load(spec.path.string());
  LowerOptions opt;
  opt.fixed_sizes = std::move(fixed);
  return lower_composite(lib, *f.find(name), opt);
}

const char* const kDepthwise = R"spec([conv]
doc = "A grouped convolution's weight check, as conv2d declares it."
in = { x = "f32[C, H]", w = "f32[F, C / groups, 3]" }
out = { y = "f32[F, C / groups, 3]" }
attrs = { groups = 1 }
body = "y = w"

[natural]
doc = "The depthwise weight written naturally: one channel per filter."
in = { x = "f32[C, H]", w = "f32[C, 1, 3]" }
out = { y = "f32[C, 1, 3]" }
attrs = { groups = 4 }
where = ["C == groups"]
body = "y = conv(x, w, groups=groups)"

[unstated]
doc = "The same without the fact: C / 4 == 1 is checked when C is bound."
in = { x = "f32[C, H]", w = "f32[C, 1, 3]" }
out = { y = "f32[C, 1, 3]" }
body = "y = conv(x, w, groups=4)"
)spec";

}  // namespace

TEST_CASE("size_facts: equalities substitute, so equal sizes compare equal") {
  SizeFacts facts;
  CHECK(facts.decide(eq(C, F)) == Truth::unknown);
  facts.assume(eq(C, F));
  CHECK(facts.decide(eq(C, F)) == Truth::proved);
  CHECK(facts.decide(eq(F * 2 + 1, C + C + 1)) == Truth::proved);
  CHECK(facts.decide(eq(C, F + 1)) == Truth::refuted);
  CHECK(facts.decide(rel(C, Relation::ne, F)) == Truth::refuted);
  // Two variables bound to one value: J == K, then K == 4 makes both 4.
  facts.assume(eq(J, K));
  facts.assume(eq(K, 4));
  CHECK(facts.decide(eq(J, 4)) == Truth::proved);
  CHECK(facts.decide(eq(J * K, 16)) == Truth::proved);
  CHECK(facts.decide(eq(J, 5)) == Truth::refuted);
}

TEST_CASE("size_facts: C == groups proves C / groups == 1") {
  SizeFacts facts;
  CHECK(facts.decide(eq(floordiv(C, 24), 1)) == Truth::unknown);
  facts.assume(eq(C, 24));
  CHECK(facts.decide(eq(floordiv(C, 24), 1)) == Truth::proved);
  CHECK(facts.decide(eq(floordiv(C, 12), 1)) == Truth::refuted);
  SizeFacts symbolic;
  symbolic.assume(eq(C, G));
  CHECK(symbolic.decide(eq(floordiv(C, G) * G, C)) == Truth::proved);
  CHECK(symbolic.decide(eq(C - G, 0)) == Truth::proved);
}

TEST_CASE("size_facts: a divisibility fact makes (C / g) * g equal C") {
  SizeFacts facts;
  CHECK(facts.decide(eq(floordiv(C, 3) * 3, C)) == Truth::unknown);
  facts.assume(eq(mod(C, 3), 0));
  CHECK(facts.decide(eq(floordiv(C, 3) * 3, C)) == Truth::proved);
  CHECK(facts.decide(eq(mod(C, 3), 0)) == Truth::proved);
  CHECK(facts.decide(eq(mod(C + 1, 3), 0)) == Truth::refuted);
  CHECK(facts.decide(eq(mod(C + G, 3), 0)) == Truth::unknown);
  SizeFacts by_size;  // the divisor a size variable
  by_size.assume(eq(mod(C, G), 0));
  CHECK(by_size.decide(eq(floordiv(C, G) * G, C)) == Truth::proved);
  // With C == 6 too, C / 3 is 2.
  facts.assume(eq(C, 6));
  CHECK(facts.decide(eq(floordiv(C, 3), 2)) == Truth::proved);
}

TEST_CASE("size_facts: inequalities and the sign of sizes") {
  SizeFacts facts;
  CHECK(facts.decide(rel(K, Relation::ge, 0)) == Truth::proved);  // sizes are never negative
  CHECK(facts.decide(rel(K, Relation::lt, 0)) == Truth::refuted);
  CHECK(facts.decide(rel(K, Relation::ge, 1)) == Truth::unknown);
  CHECK(facts.decide(eq(K + 1, 0)) == Truth::refuted);
  facts.assume(rel(K, Relation::ge, 1));
  CHECK(facts.decide(rel(K, Relation::ge, 1)) == Truth::proved);
  CHECK(facts.decide(rel(K, Relation::gt, 0)) == Truth::proved);
  CHECK(facts.decide(eq(K, 0)) == Truth::refuted);
  CHECK(facts.decide(rel(K + J, Relation::ge, 1)) == Truth::proved);
  CHECK(facts.decide(rel(K, Relation::le, 0)) == Truth::refuted);
  facts.assume(rel(J, Relation::ne, K));
  CHECK(facts.decide(eq(K, J)) == Truth::refuted);
}

TEST_CASE("size_facts: checks of bound sizes name the claim, the sizes and the site") {
  SizeCheck check{eq(floordiv(C, 4), 1),
                  "shape equality 'C / 4 == 1' (dimension 1 of 'w')",
                  {"a.toml", 3, 9},
                  {},
                  false};
  CHECK_FALSE(size_check_failure(check, {{"C", 4}}).has_value());
  CHECK_FALSE(size_check_failure(check, {{"H", 4}}).has_value());  // C unbound: not this check's
  std::optional<std::string> why = size_check_failure(check, {{"C", 8}});
  REQUIRE(why.has_value());
  CHECK(*why ==
        "shape equality 'C / 4 == 1' (dimension 1 of 'w') does not hold with C = 8: "
        "(C / 4) is 2");
  SizeCheck by_zero{eq(mod(C, G), 0), "fact 'C % G == 0' of 'f'", {"a.toml", 2, 1}, {}, true};
  CHECK(size_check_failure(by_zero, {{"C", 3}, {"G", 0}})->find("cannot be evaluated") !=
        std::string::npos);
  try {
    check_size_facts({check}, {{"C", 8}});
    FAIL("no SizeCheckError");
  } catch (const SizeCheckError& e) {
    CHECK(std::string(e.what()).rfind("a.toml:3:9: shape equality", 0) == 0);
    CHECK(e.check.site.line == 3);
  }
}

TEST_CASE("size_facts: lowering proves with facts, defers the rest and refutes early") {
  // With the fact C == groups (= 4), conv's C / 4 == 1 is proved: nothing left to check but it.
  Graph natural = lower_text(kDepthwise, "natural");
  REQUIRE(natural.checks.size() == 1);
  CHECK(natural.checks[0].stated);
  CHECK(natural.checks[0].relation.str() == "C == 4");
  // Without, the shape equality is a check at the call, in conv's words.
  Graph unstated = lower_text(kDepthwise, "unstated");
  REQUIRE(unstated.checks.size() == 1);
  CHECK_FALSE(unstated.checks[0].stated);
  CHECK(unstated.checks[0].relation.str() == "(C / 4) == 1");
  CHECK(unstated.checks[0].site.line == 20);
  CHECK(unstated.checks[0].claim.find("dimension 1 of input 'w' of 'conv'") != std::string::npos);
  CHECK_NOTHROW(check_size_facts(unstated.checks, {{"C", 4}, {"H", 2}}));
  CHECK_THROWS_AS(check_size_facts(unstated.checks, {{"C", 8}, {"H", 2}}), SizeCheckError);
  // The interpreter checks too: a broken fact is an error, never a wrong answer.
  std::vector<Tensor> in = {Tensor(DType::f32, {8, 2}), Tensor(DType::f32, {8, 1, 3})};
  CHECK_THROWS_AS(interpret(unstated, {{"C", 8}, {"H", 2}}, in), SizeCheckError);
  // Fixed sizes decide the fact at once: C = 8 refutes C == groups at the fact.
  try {
    lower_text(kDepthwise, "natural", {{"C", 8}, {"H", 2}});
    FAIL("no SpecError");
  } catch (const SpecError& e) {
    CHECK(e.loc().line == 13);
    CHECK(std::string(e.what()).find("fact 'C == groups' of 'natural' does not hold") == 0);
  }
  CHECK(lower_text(kDepthwise, "natural", {{"C", 4}, {"H", 2}}).checks.empty());
}

TEST_CASE("size_facts: a provable mismatch is still refused at once") {
  const char* text = R"spec([f]
doc = "N and N + 1 never agree."
in = { a = "f32[N]", b = "f32[N + 1]" }
out = { y = "f32[N]" }
body = "y = a + b"
)spec";
  CHECK_THROWS_AS(lower_text(text, "f"), SpecError);
  const char* same = R"spec([g]
doc = "J and K agree when the fact says so."
in = { a = "f32[J]", b = "f32[K]" }
out = { y = "f32[J]" }
where = ["J == K"]
body = "y = a + b"
)spec";
  Graph g = lower_text(same, "g");
  REQUIRE(g.checks.size() == 1);  // the fact itself; a + b is proved by it
  CHECK(g.checks[0].stated);
}

TEST_CASE("size_facts: the C++ API checks the facts of every run, compiled or interpreted") {
  kiln::Spec spec = kiln::Spec::load("tests/regressions/shape_facts.toml");
  for (const char* runtime : {"interp", "cc"}) {
    CAPTURE(runtime);
    kiln::Compiled mul = kiln::compile(spec, "same_length_unstated", runtime);
    std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, y(4);
    mul.run({a.data(), b.data(), y.data()}, {{"J", 4}, {"K", 4}});
    CHECK(y == std::vector<float>{5, 12, 21, 32});
    try {
      mul.run({a.data(), b.data(), y.data()}, {{"J", 4}, {"K", 3}});
      FAIL("no error for J = 4, K = 3");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).rfind(
                "tests/regressions/shape_facts.toml:50:15: shape equality 'J == K'", 0) == 0);
    }
  }
}
