// Shape facts on the command line: what `kiln check` reports it cannot prove, and the located
// error when bound sizes break a fact or an assumed shape equality (tests/regressions/
// shape_facts.toml; docs/spec-language.md, "Shape facts").
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "tests/support/cli.h"

using namespace clitest;

TEST_CASE("cli: kiln check lists the shape facts it cannot prove") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = run_kiln("check tests/regressions/shape_facts.toml");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "shape_facts.toml: ok, 7 composites; "));
  CHECK(has(r,
            ": note: fact 'C % groups == 0' of 'grouped_facts' is checked when the sizes are "
            "bound\n  where = [\"C % groups == 0\""));
  CHECK(has(r, ": warning: shape equality 'J == K' (dimension 0 of f32[K] broadcast in "));
  CHECK(has(r, "state it with where = [\"J == K\"]"));
  CHECK(has(r, ": warning: shape equality '(C / 24) == 1' (dimension 1 of input 'w' of 'conv2d')"));
  // The fact of pair_sums is proved at the call of pair_sums_of_rows: no note names that call.
  CHECK(!has(r, "pair_sums(reshape(x, [2 * M]))"));
  Result quiet = run_kiln("check tests/data/cli.toml");
  CHECK(quiet.code == 0);
  CHECK(!has(quiet, "checked when"));
}

TEST_CASE("cli: sizes that break a fact are one located error") {
  if (!std::getenv("KILN_BIN")) return;
  struct Case {
    const char* args;
    int code;
    const char* expect;
  };
  const std::string file = "tests/regressions/shape_facts.toml:";
  const Case cases[] = {
      {"same_length_unstated --test J=3,K=4", 1,
       "error: shape equality 'J == K' (dimension 0 of f32[K] broadcast in "},
      {"same_length_unstated --test J=3,K=4", 1, "does not hold with J = 3, K = 4"},
      {"same_length --test J=3,K=4 --runtime interp", 1,
       "error: fact 'J == K' of 'same_length' does not hold with J = 3, K = 4\n  where"},
      {"grouped_facts --test C=7", 1,
       "error: fact 'C % groups == 0' of 'grouped_facts' does not hold with C = 7"},
      {"depthwise_unstated --test C=48", 1, "does not hold with C = 48: (C / 24) is 2"},
      {"depthwise_unstated --test C=48", 1, "  body = \"y = conv2d(x, w, pad=1, groups=24)\"\n"},
      {"depthwise_natural --test C=48 --specialize", 1,
       "fact 'C == groups' of 'depthwise_natural' does not hold: with the sizes and attributes "
       "here it reads 48 == 24"},
      {"depthwise_natural --test C=24 --specialize", 0, "out y : f32[2, 24, 5, 4]"},
      {"same_length_unstated --test J=5,K=5 --runtime clang", 0, "PASS"},
  };
  for (const Case& c : cases) {
    Result r = run_kiln("run " + file + c.args);
    CAPTURE(c.args);
    CAPTURE(r.out);
    CHECK(r.code == c.code);
    CHECK(has(r, c.expect));
  }
}
