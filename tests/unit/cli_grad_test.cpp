// `kiln grad` end to end (docs/autodiff.md): the printed backward composite loads again and
// runs, --check passes and fails by exit code, every refusal is one located error, and `run`,
// `test` and `bench` take --grad.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "tests/support/cli.h"

using namespace clitest;

TEST_CASE("cli: kiln grad prints a spec that loads, checks and refuses with a location") {
  if (!std::getenv("KILN_BIN")) {
    MESSAGE("KILN_BIN is not set; skipping the command-line tests");
    return;
  }
  struct Case {
    std::string args;
    int code;
    const char* expect;
  };
  const std::string data = "tests/data/autodiff.toml:";
  const Case cases[] = {
      {"grad " + data + "bias_add --wrt x,b", 0,
       "in   = { x = \"f64[M, N]\", b = \"f64[N]\", dy = \"f64[M, N]\", ds = \"f64[N]\" }"},
      {"grad " + data + "bias_add --wrt b --format text", 0, "= input ds : f64[N]"},
      {"show " + data + "prefix --format spec", 0, "reshape(x, [N])[t9_at[i0, i1]]"},
      {"grad " + data + "prefix --wrt x", 0, "where = [\"(N % 2) == 0\"]"},
      {"show " + data + "prefix --format spec --stage kernels", 2,
       "--format spec prints --stage graph"},
      {"grad std:nn.toml:softmax --wrt x --dtype T=f64 --test N=5 --batch 2 --check", 0, "dx: ok"},
      {"grad std:nn.toml:matmul --wrt b", 0, "t6[i0 < K, i1 < N, i2 < M] = t5[i2, i1, i0]"},
      {"grad " + data + "cast_chain --wrt x --check", 3, "dx: MISMATCH"},
      {"grad " + data + "cast_chain --wrt x --check --eps 1e-2 --rtol 1e-4", 0, "dx: ok"},
      {"grad " + data + "through_int --wrt x", 1,
       "autodiff.toml:103:8: error: cannot differentiate 'y' of 'through_int' with respect to "
       "'x': at %5 = cast : f64[N]: a cast from i32 has no derivative"},
      {"grad " + data + "scatter_mul --wrt src", 1,
       "a scatter with 'mul' has no gradient rule yet"},
      {"grad " + data + "lookup --wrt ids", 2, "input 'ids' of 'lookup' is i32"},
      {"grad " + data + "lookup --wrt tabel", 2, "'lookup' has no input 'tabel'"},
      {"grad " + data + "lookup", 2, "--wrt is required"},
      {"run std:nn.toml:softmax --grad x --test N=37 --runtime clang", 0,
       "out dx : f32[37]  max abs err"},
      {"run " + data + "through_int --grad x", 1, "a cast from i32 has no derivative"},
      {"test " + data + "prefix --grad --runtime cc", 0, "1 passed, 0 failed (cc)"},
      {"test " + data + " --grad --runtime cc", 0, "skip scatter_mul grad: no gradient (cannot"},
      {"test " + data + "running --runtime cc", 0, "2 passed, 0 failed (cc)"},
      // the save policies: stats saves attention's row statistics, all its L x S weights;
      // the spec then holds the forward pass that outputs them, and --check runs both
      {"grad std:nn.toml:attention --wrt q,k,v --save stats", 0,
       "out  = { y = \"f32[B, H, L, D]\", saved_27 = \"f32[B, H, L, 1]\", saved_35 = \"f32[B, H, "
       "L, "
       "1]\" }"},
      {"grad std:nn.toml:attention --wrt q,k,v --save all", 0, "saved_26 = \"f32[B, H, L, S]\""},
      {"grad std:nn.toml:attention --wrt q,k,v --save stats --attr causal=true --dtype T=f64 "
       "--check",
       0, "dv: ok"},
      {"grad std:nn.toml:softmax --wrt x --save some", 2,
       "--save: some not in {recompute,stats,all}"},
      {"bench std:nn.toml:softmax --grad x --runtime cc --vs torch", 2,
       "--grad times the backward composite, which --vs torch does not compute"},
  };
  for (const Case& c : cases) {
    Result r = run_kiln(c.args);
    CAPTURE(c.args);
    CAPTURE(r.out);
    CHECK(r.code == c.code);
    CHECK(r.out.find(c.expect) != std::string::npos);
  }
  // run --grad takes the cotangents from files too, checked against the backward composite
  std::string tmp = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  REQUIRE(run_kiln("run std:nn.toml:softmax --test N=4 --save " + tmp + "/kiln_grad_dy").code == 0);
  std::string dy = tmp + "/kiln_grad_dy/y.npy";
  Result given = run_kiln("run std:nn.toml:softmax --grad x --test N=4 --input dy=" + dy);
  CAPTURE(given.out);
  CHECK(given.code == 0);
  CHECK(run_kiln("run std:nn.toml:softmax --grad x --test N=5 --input dy=" + dy)
            .out.find("--input dy: the file's shape [4] is not the input's [N] = [5]") !=
        std::string::npos);
  CHECK(run_kiln("run std:nn.toml:softmax --grad x --test N=4 --input dz=" + dy)
            .out.find("'softmax_grad' has no input 'dz'; its inputs are x, dy") !=
        std::string::npos);
  // the printed composite is a spec: it checks and runs on its own test table
  std::string spec = tmp + "/kiln_grad_view_chain.toml";
  REQUIRE(run_kiln("grad " + data + "view_chain --wrt x -o " + spec).code == 0);
  CHECK(run_kiln("check " + spec).code == 0);
  Result run = run_kiln("run " + spec + ":view_chain_grad");
  CAPTURE(run.out);
  CHECK(run.code == 0);
  CHECK(run.out.find("out dx : f64[2, 4, 3]") != std::string::npos);
  // with saved values: both composites of the spec pass their tests
  spec = tmp + "/kiln_grad_layernorm_stats.toml";
  REQUIRE(run_kiln("grad std:nn.toml:layernorm --wrt x,gamma,beta --save stats -o " + spec).code ==
          0);
  Result both = run_kiln("test " + spec + " --runtime cc");
  CAPTURE(both.out);
  CHECK(both.out.find("2 passed, 0 failed (cc)") != std::string::npos);
}
