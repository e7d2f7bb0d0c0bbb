// `kiln run --weights FILE.safetensors` end to end: inputs by name or with '.' for '_', sizes
// bound by the file's shapes, and one clear error per bad file or mismatch. KILN_BIN names the
// binary.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/safetensors.h"
#include "tests/support/cli.h"

using clitest::has;
using clitest::Result;
using clitest::run_kiln;
using clitest::TempDir;

TEST_CASE("cli: run --weights takes inputs from a safetensors file, by name or dots as '_'") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::ofstream(tmp.path / "dense.toml")
      << "[dense]\nin = { x = \"T[M, K]\", h_0_w = \"const T[K, N]\", b = \"const T[N]\" }\n"
      << "out = { y = \"T[M, N]\" }\ntypes = { T = [\"f32\", \"f16\"] }\n"
      << "body = \"y[m, n] = sum(x[m, k] * h_0_w[k, n], k) + b[n]\"\n"
      << "test = { sizes = { M = 2, K = 3, N = 4 } }\n";
  const std::string spec = (tmp.path / "dense.toml").string();
  auto save = [&](const std::string& name,
                  const std::vector<std::pair<std::string, kiln::Tensor>>& tensors) {
    const std::string path = (tmp.path / name).string();
    const std::vector<uint8_t> bytes = kiln::safetensors_bytes(tensors);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  };
  kiln::Tensor w = kiln::random_tensor(kiln::DType::f32, {5, 7}, 1, -1, 1),
               b = kiln::random_tensor(kiln::DType::f32, {7}, 2, -1, 1);
  const std::string good = save("good.safetensors", {{"h.0.w", w}, {"b", b}, {"other", b}});
  // The file's shapes bind K and N; M comes from the test table.
  Result r = run_kiln("run " + spec + " --runtime cc --weights " + good);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "dense [K=5,M=2,N=7] on cc\n"));
  CHECK(has(r, "PASS"));
  struct Case {
    std::string args, expect;
  };
  const std::string two = save("two.safetensors", {{"h.0.w", w}, {"h_0.w", w}});
  const std::string none = save("none.safetensors", {{"z", b}});
  const std::string cut = (tmp.path / "cut.safetensors").string();
  std::filesystem::copy_file(good, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(good) - 1);
  const Case bad[] = {
      {"--weights " + good + " --dtype T=f16",
       "--weights " + good +
           ": tensor 'h.0.w' (input h_0_w): the input is f16, the file holds f32"},
      {"--weights " + good + " --test N=8",
       "--test N=8, but --weights " + good + ": tensor 'h.0.w' (input h_0_w) has 7 there"},
      {"--weights " + good + " --input b=" + good,
       "--input b: "},  // not a .npy: the --input error comes first
      {"--weights " + two, "tensors 'h.0.w' and 'h_0.w' both read as input 'h_0_w'"},
      {"--weights " + none, "the file holds none of 'dense''s inputs (x, h_0_w, b)"},
      {"--weights " + cut, "--weights " + cut + ": tensor "},
      {"--weights " + (tmp.path / "missing").string(), "cannot open it"},
  };
  for (const Case& c : bad) {
    Result e = run_kiln("run " + spec + " --runtime cc " + c.args);
    CAPTURE(c.args);
    CAPTURE(e.out);
    CHECK(e.code == 2);
    CHECK(has(e, c.expect));
  }
}

TEST_CASE("cli: a GPT-2 checkpoint from tools/models/gpt2_checkpoint.py runs its embeddings") {
  if (!std::getenv("KILN_BIN") || std::system("python3 -c 'import json' >/dev/null 2>&1") != 0)
    return;
  TempDir tmp;
  for (const char* dtype : {"f32", "f16"}) {
    CAPTURE(dtype);
    const std::string file = (tmp.path / (std::string(dtype) + ".safetensors")).string();
    REQUIRE(std::system(("python3 tools/models/gpt2_checkpoint.py --layers 2 --embd 8 --vocab 11 "
                         "--positions 6 --dtype " +
                         std::string(dtype) + " -o " + file + " >/dev/null")
                            .c_str()) == 0);
    Result r = run_kiln("run tests/data/gpt2_embeddings.toml:embed --runtime cc --dtype T=" +
                        std::string(dtype) + " --test S=5 --weights " + file);
    CAPTURE(r.out);
    CHECK(r.code == 0);
    CHECK(has(r, "embed [C=8,P=6,S=5,V=11] on cc\n"));
    CHECK(has(r, "PASS"));
  }
}
