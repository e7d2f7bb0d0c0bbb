// `kiln generate` end to end on a tiny random GPT-2 checkpoint: the decode loop's greedy tokens
// against the argmax of `kiln run ops/gpt2.toml:gpt2` (prefill logits) over the growing sequence,
// the same tokens on the interpreter and a compiled runtime, and one clear error per bad input.
// KILN_BIN names the binary.
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "ir/npy.h"
#include "tests/support/cli.h"

using clitest::has;
using clitest::Result;
using clitest::run_kiln;
using clitest::TempDir;

namespace {

/** The ids after "tokens:" on one line of `kiln generate`'s output. */
std::vector<int64_t> tokens_of(const std::string& out) {
  std::vector<int64_t> ids;
  const size_t at = out.find("tokens:");
  if (at == std::string::npos) return ids;
  std::istringstream line(out.substr(at + 7, out.find('\n', at) - at - 7));
  for (int64_t t; line >> t;)
    ids.push_back(t);
  return ids;
}

/** The first maximum of the last row of a [S, V] logits file. */
int64_t last_argmax(const kiln::Tensor& logits) {
  const int64_t s = logits.dims[0], v = logits.dims[1];
  int64_t best = 0;
  for (int64_t k = 1; k < v; ++k)
    if (logits.at((s - 1) * v + k) > logits.at((s - 1) * v + best)) best = k;
  return best;
}

std::string checkpoint(const TempDir& tmp, const std::string& name, const std::string& args) {
  const std::string file = (tmp.path / name).string();
  REQUIRE(std::system(
              ("python3 tools/models/gpt2_checkpoint.py " + args + " -o " + file + " >/dev/null")
                  .c_str()) == 0);
  return file;
}

}  // namespace

TEST_CASE("cli: generate's greedy tokens are the argmax of the prefill logits, step by step") {
  if (!std::getenv("KILN_BIN") || std::system("python3 -c 'import json' >/dev/null 2>&1") != 0)
    return;
  TempDir tmp;
  const std::string ckpt = checkpoint(tmp, "tiny.safetensors",
                                      "--layers 2 --embd 64 --vocab 37 --positions 16 --seed 3");
  const std::vector<int64_t> prompt = {5, 17, 2};
  const int tokens = 6;
  std::vector<int64_t> by_runtime[2];
  const char* runtimes[] = {"interp", "clang"};
  for (int r = 0; r < 2; ++r) {
    Result g = run_kiln("generate ops/gpt2.toml:gpt2_step --weights " + ckpt +
                        " --prompt 5,17,2 --tokens " + std::to_string(tokens) + " --runtime " +
                        runtimes[r]);
    CAPTURE(g.out);
    REQUIRE(g.code == 0);
    CHECK(has(g, "tokens/s"));
    by_runtime[r] = tokens_of(g.out);
    REQUIRE(by_runtime[r].size() == static_cast<size_t>(tokens));
  }
  CHECK(by_runtime[0] == by_runtime[1]);
  // The same tokens from the prefill composite over the prompt and the tokens so far.
  std::vector<int64_t> seq = prompt;
  for (int k = 0; k < tokens; ++k) {
    kiln::Tensor ids(kiln::DType::i32, {static_cast<int64_t>(seq.size())});
    for (size_t i = 0; i < seq.size(); ++i)
      ids.set_int(i, seq[i]);
    const std::string ids_file = (tmp.path / "ids.npy").string(),
                      out = (tmp.path / ("out" + std::to_string(k))).string();
    kiln::write_npy(ids_file, ids);
    Result r = run_kiln("run ops/gpt2.toml:gpt2 --runtime clang --no-check --weights " + ckpt +
                        " --input ids=" + ids_file + " --save " + out);
    CAPTURE(r.out);
    REQUIRE(r.code == 0);
    const int64_t next = last_argmax(kiln::read_npy(out + "/logits.npy"));
    CAPTURE(k);
    CHECK(next == by_runtime[1][k]);
    seq.push_back(next);
  }
}

TEST_CASE("cli: generate refuses a prompt past the positions, an unknown id, missing weights") {
  if (!std::getenv("KILN_BIN") || std::system("python3 -c 'import json' >/dev/null 2>&1") != 0)
    return;
  TempDir tmp;
  const std::string ckpt =
      checkpoint(tmp, "tiny.safetensors", "--layers 2 --embd 64 --vocab 37 --positions 8");
  // A checkpoint without the position embeddings.
  const std::string no_wpe = (tmp.path / "no_wpe.safetensors").string();
  REQUIRE(std::system(("python3 -c \"import json,struct,sys; d=open('" + ckpt +
                       "','rb').read(); n=struct.unpack('<Q',d[:8])[0]; h=json.loads(d[8:8+n]); "
                       "h.pop('wpe.weight'); b=json.dumps(h).encode(); "
                       "open('" +
                       no_wpe + "','wb').write(struct.pack('<Q',len(b))+b+d[8+n:])\"")
                          .c_str()) == 0);
  struct Case {
    std::string args, expect;
  };
  const Case bad[] = {
      {"--weights " + ckpt + " --prompt 1,2,3,4,5,6,7,8,9 --tokens 1", "N <= P"},
      {"--weights " + ckpt + " --prompt 1,2,3 --tokens 6", "N <= P"},
      {"--weights " + ckpt + " --prompt 1,37,3 --tokens 2",
       "token id 37 at prompt position 1 is outside the vocabulary [0, 37)"},
      {"--weights " + ckpt + " --prompt 1,-1 --tokens 2", "token id -1 at prompt position 1"},
      {"--weights " + no_wpe + " --prompt 1,2 --tokens 2", "input 'wpe_weight' (f32, rank 2)"},
      {"--weights " + (tmp.path / "missing").string() + " --prompt 1 --tokens 2", "cannot open"},
  };
  for (const Case& c : bad) {
    Result e = run_kiln("generate ops/gpt2.toml:gpt2_step --runtime clang " + c.args);
    CAPTURE(c.args);
    CAPTURE(e.out);
    CHECK(e.code == 2);
    CHECK(has(e, c.expect));
  }
}
