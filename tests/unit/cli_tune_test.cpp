// `kiln tune` end to end (issue 34): the space it lists, a search that stores its winner in the
// tuning database under the exact sizes and their size bucket, later runs (at those sizes or
// nearby) that use it unless TUNED=0 or --config pins a knob, a corrupt entry ignored with a
// warning, and bad arguments. No test asserts a timing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "driver/tune_db.h"
#include "driver/tune_space.h"
#include "kiln/kiln.h"
#include "runtimes/cache.h"
#include "tests/support/cli.h"

using namespace clitest;
namespace fs = std::filesystem;

namespace {

const std::string kMatmul = "ops/nn.toml:matmul --runtime cc --test M=8,N=8,K=8";

/** The database's files under a cache folder. */
std::vector<fs::path> entries(const fs::path& cache) {
  std::vector<fs::path> out;
  std::error_code ignored;
  for (const auto& e : fs::directory_iterator(cache / "tuned", ignored))
    if (e.path().extension() == ".tune") out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("tune: the space of a contraction on a CPU and on a GPU") {
  kiln::Graph g;
  g.nodes.emplace_back().op = kiln::Op::reduce;
  kiln::CompileOptions opt;
  std::vector<kiln::TuneDimension> cpu = kiln::tune_space(g, opt, true, false);
  REQUIRE(cpu.size() == 2);
  CHECK(cpu[0].knob == "MICRO");
  CHECK(cpu[0].values.front() == "auto");
  CHECK(cpu[1].knob == "TILE");
  CHECK(cpu[1].values.front() == "32x32x32");
  std::vector<kiln::TuneDimension> gpu = kiln::tune_space(g, opt, false, true);
  REQUIRE(gpu.size() == 2);
  CHECK(gpu[0].knob == "GPU_TILE");
  CHECK(gpu[1].knob == "GPU_WGMMA");
  // The default first: four shapes, the launch choosing; then each shape pinned.
  CHECK(gpu[1].values.front() == "128x256x4,128x128x4,128x128x3,128x64x4,128x64x8");
  CHECK(std::find(gpu[1].values.begin(), gpu[1].values.end(), "128x256x4") != gpu[1].values.end());
  CHECK(std::find(gpu[1].values.begin(), gpu[1].values.end(), "128x128x3") != gpu[1].values.end());
  CHECK(kiln::tune_space(g, opt, false, false)[1].knob == "GPU_MMA");
  kiln::Graph elementwise;
  elementwise.nodes.emplace_back().op = kiln::Op::add;
  CHECK(kiln::tune_space(elementwise, opt, true, false).size() == 1);  // TILE alone
  CHECK(kiln::tune_space(elementwise, opt, false, true).empty());
  CHECK(kiln::space_size(cpu) == cpu[0].values.size() * cpu[1].values.size());
}

TEST_CASE("tune: a size bucket rounds every size up to a power of two") {
  struct Case {
    int64_t size, bucket;
  };
  for (const Case& c :
       {Case{0, 0}, Case{1, 1}, Case{2, 2}, Case{3, 4}, Case{8, 8}, Case{9, 16}, Case{1000, 1024},
        Case{1025, 2048}, Case{int64_t{1} << 40, int64_t{1} << 40}}) {
    CAPTURE(c.size);
    CHECK(kiln::size_bucket({{"N", c.size}}).at("N") == c.bucket);
  }
  kiln::Graph g;
  kiln::CompileOptions opt;
  const kiln::SizeBindings eight = {{"N", 8}}, seven = {{"N", 7}}, nine = {{"N", 9}};
  CHECK(kiln::tune_bucket_key(g, "cc", "t", seven, opt) ==
        kiln::tune_bucket_key(g, "cc", "t", eight, opt));
  CHECK(kiln::tune_bucket_key(g, "cc", "t", nine, opt) !=
        kiln::tune_bucket_key(g, "cc", "t", eight, opt));
  CHECK(kiln::tune_bucket_key(g, "cc", "t", eight, opt) !=
        kiln::tune_key(g, "cc", "t", eight, opt));
}

TEST_CASE("tune: --list prints the space") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  Result r = run_kiln("tune " + kMatmul + " --list", "KILN_CACHE=" + tmp.path.string());
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "MICRO      auto (default)"));
  CHECK(has(r, "TILE       32x32x32 (default)"));
  CHECK(entries(tmp.path).empty());
}

TEST_CASE("tune: a search stores its winner; later runs use it unless pinned or TUNED=0") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string env = "KILN_CACHE=" + tmp.path.string();
  Result t = run_kiln("tune " + kMatmul + " --trials 3", env);
  INFO(t.out);
  REQUIRE(t.code == 0);
  CHECK(has(t, "search: greedy"));
  CHECK(has(t, "3 candidates measured"));
  CHECK(has(t, "(default)"));
  CHECK(has(t, "winner: "));
  CHECK(has(t, "(and under the size bucket K=8,M=8,N=8)"));
  REQUIRE(entries(tmp.path).size() == 2);  // the exact sizes and their bucket

  Result ls = run_kiln("tune ls", env);
  CHECK(ls.code == 0);
  CHECK(has(ls, "matmul [K=8,M=8,N=8] on cc"));
  CHECK(has(ls, "matmul [bucket K=8,M=8,N=8] on cc"));
  CHECK(has(ls, "2 entries in"));

  Result used = run_kiln("run " + kMatmul + " --debug 1", env);
  INFO(used.out);
  CHECK(used.code == 0);
  CHECK(has(used, "tuned: MICRO="));
  CHECK(has(used, "(from the tuning database, exact sizes)"));
  CHECK(has(used, "PASS"));

  Result off = run_kiln("run " + kMatmul + " --debug 1 --config TUNED=0", env);
  CHECK(off.code == 0);
  CHECK(!has(off, "tuned:"));

  Result pinned = run_kiln("run " + kMatmul + " --debug 1 --config TILE=16", env);
  CHECK(pinned.code == 0);
  CHECK(has(pinned, "TILE pinned by --config"));

  Result other = run_kiln("run ops/nn.toml:matmul --runtime cc --test M=8,N=8,K=9 --debug 1", env);
  CHECK(other.code == 0);
  CHECK(!has(other, "tuned:"));  // K=9 is in the bucket K=16

  Result near = run_kiln("run ops/nn.toml:matmul --runtime cc --test M=7,N=5,K=6 --debug 1", env);
  INFO(near.out);
  CHECK(near.code == 0);
  CHECK(has(near, "(from the tuning database, size bucket K=8,M=8,N=8)"));
  CHECK(has(near, "PASS"));

  Result bench = run_kiln("bench " + kMatmul + " --repeat 1 --warmup 1", env);
  CHECK(bench.code == 0);

  Result cleared = run_kiln("tune clear", env);
  CHECK(has(cleared, "deleted 2 tuning entries"));
  CHECK(entries(tmp.path).empty());
}

TEST_CASE("tune: --search beam measures with --beam points and stores its winner") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  Result t = run_kiln("tune " + kMatmul + " --search beam --beam 2 --trials 4 --jobs 2",
                      "KILN_CACHE=" + tmp.path.string());
  INFO(t.out);
  REQUIRE(t.code == 0);
  CHECK(has(t, "search: beam of 2, at most 4 trials"));
  CHECK(has(t, "2 compiles at once"));
  CHECK(has(t, "4 candidates measured"));
  CHECK(has(t, "winner: "));
  Result bad = run_kiln("tune " + kMatmul + " --search random", "KILN_CACHE=" + tmp.path.string());
  CHECK(bad.code == 2);
}

TEST_CASE("tune: a small space is searched exhaustively; an empty one stores nothing") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string env = "KILN_CACHE=" + tmp.path.string();
  Result small = run_kiln("tune " + kMatmul + " --config MICRO=auto --trials 4", env);
  INFO(small.out);
  CHECK(small.code == 0);
  CHECK(has(small, "4 points in the space"));
  CHECK(has(small, "search: exhaustive"));
  CHECK(has(small, "4 candidates measured"));
  CHECK(!has(small, "MICRO="));  // pinned: out of the space and of the entry
  CHECK(entries(tmp.path).size() == 2);
  Result empty = run_kiln("tune ops/math.toml:tanh --runtime cc --config TILE=16", env);
  INFO(empty.out);
  CHECK(empty.code == 0);
  CHECK(has(empty, "nothing to tune"));
  CHECK(entries(tmp.path).size() == 2);
}

TEST_CASE("tune: a corrupt database entry is ignored with a warning") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string env = "KILN_CACHE=" + tmp.path.string();
  REQUIRE(run_kiln("tune " + kMatmul + " --trials 1", env).code == 0);
  REQUIRE(entries(tmp.path).size() == 2);  // exact and bucket: both spoilt alike
  const std::string good = read_file(entries(tmp.path).front());
  auto planted = [](const fs::path& entry) {  // checksum and all, a value MICRO refuses
    std::string body = "kiln-tune 1\nkey " + entry.stem().string() +
                       "\nlabel matmul\ndefault_ms 1\nbest_ms 1\nknob MICRO=99x1x1\n";
    return body + "sha256 " + kiln::sha256_hex(body.data(), body.size()) + "\n";
  };
  for (int variant = 0; variant < 4; ++variant) {
    CAPTURE(variant);
    for (const fs::path& entry : entries(tmp.path)) {
      const std::string bad[] = {"garbage", "", good.substr(0, good.size() / 2), planted(entry)};
      std::ofstream(entry, std::ios::binary | std::ios::trunc) << bad[variant];
    }
    Result r = run_kiln("run " + kMatmul + " --debug 1", env);
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r, "kiln: warning: ignored tuning entry"));
    CHECK(!has(r, "tuned:"));
    CHECK(has(r, "PASS"));
    Result ls = run_kiln("tune ls", env);
    CHECK(ls.code == 0);
    CHECK(has(ls, "0 entries"));
  }
}

TEST_CASE("tune: bad arguments are one error and exit 2") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string env = "KILN_CACHE=" + tmp.path.string();
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"tune ops/nn.toml:nope --runtime cc", "no composite 'nope'"},
      {"tune " + kMatmul + " --budget lots", "--budget expects a positive duration"},
      {"tune " + kMatmul + " --budget 0s", "--budget expects a positive duration"},
      {"tune " + kMatmul + " --budget -5", "--budget expects a positive duration"},
      {"tune", "kiln tune needs FILE[:COMPOSITE]"},
      {"tune ops/nn.toml:matmul --runtime interp", "not interp"},
      {"tune " + kMatmul + " --config NOPE=1", "unknown --config key 'NOPE'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    Result r = run_kiln(c.args, env);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(has(r, c.message));
  }
  CHECK(entries(tmp.path).empty());
}

TEST_CASE("tune: the C++ API's compile() uses an entry tuned for its fixed sizes") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  Result t =
      run_kiln("tune " + kMatmul + " --specialize --trials 2", "KILN_CACHE=" + tmp.path.string());
  INFO(t.out);
  REQUIRE(t.code == 0);
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::CompileSettings settings;
  settings.cache_dir = tmp.path.string();
  settings.fixed_sizes = {{"M", 8}, {"N", 8}, {"K", 8}};
  // compile() says what it applied under KILN_DEBUG=1, on stderr.
  auto debug_of = [&](const kiln::CompileSettings& s) {
    std::ostringstream captured;
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    setenv("KILN_DEBUG", "1", 1);
    try {
      kiln::compile(spec, "matmul", "cc", s);
    } catch (...) {
      std::cerr.rdbuf(old);
      unsetenv("KILN_DEBUG");
      throw;
    }
    std::cerr.rdbuf(old);
    unsetenv("KILN_DEBUG");
    return captured.str();
  };
  std::string used = debug_of(settings);
  CHECK(used.find("tuned: MICRO=") != std::string::npos);
  settings.config["TUNED"] = "0";
  CHECK(debug_of(settings).find("tuned:") == std::string::npos);
  settings.config.clear();
  settings.fixed_sizes.clear();  // size-generic: no sizes to look up
  CHECK(debug_of(settings).find("tuned:") == std::string::npos);
}

TEST_CASE("tune: export and import move the database to another cache") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir here, there, files;
  const std::string env_here = "KILN_CACHE=" + here.path.string();
  const std::string env_there = "KILN_CACHE=" + there.path.string();
  REQUIRE(run_kiln("tune " + kMatmul + " --trials 2", env_here).code == 0);
  const std::string file = (files.path / "tuned.txt").string();
  Result exported = run_kiln("tune export " + file, env_here);
  INFO(exported.out);
  CHECK(exported.code == 0);
  CHECK(has(exported, "exported 2 tuning entries to " + file));
  CHECK(read_file(file).rfind("kiln-tune-export 1\n", 0) == 0);

  Result imported = run_kiln("tune import " + file, env_there);
  INFO(imported.out);
  CHECK(imported.code == 0);
  CHECK(has(imported, "imported 2 tuning entries into"));
  CHECK(entries(there.path).size() == 2);
  Result used = run_kiln("run " + kMatmul + " --debug 1", env_there);
  CHECK(has(used, "(from the tuning database, exact sizes)"));

  // One entry spoilt: a warning naming it, the other imported.
  std::string text = read_file(file);
  text[text.find("knob ") + 5] = 'X';
  const std::string spoilt = (files.path / "spoilt.txt").string();
  std::ofstream(spoilt, std::ios::binary) << text;
  TempDir third;
  Result partial = run_kiln("tune import " + spoilt, "KILN_CACHE=" + third.path.string());
  INFO(partial.out);
  CHECK(partial.code == 0);
  CHECK(has(partial, "kiln: warning: " + spoilt + ": skipped the entry at line 2 (key "));
  CHECK(has(partial, "checksum mismatch"));
  CHECK(has(partial, "imported 1 tuning entry into"));
  CHECK(has(partial, "(1 skipped)"));
  CHECK(entries(third.path).size() == 1);
}

TEST_CASE("tune: a malformed import file is one error with its line, exit 2, nothing imported") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp, files;
  const std::string env = "KILN_CACHE=" + tmp.path.string();
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {"", ":1: not a tuning export"},
      {std::string("\x7f"
                   "ELF\0\0\0\n",
                   8),
       ":1: not a tuning export"},
      {"kiln-tune-export 1\n\nstray\n", ":3: expected 'kiln-tune 1'"},
      {"kiln-tune-export 1\nkiln-tune 1\nkey 00\n",
       ":3: the file ends inside the entry begun at line 2"},
  };
  const std::string file = (files.path / "bad.txt").string();
  for (const Case& c : cases) {
    CAPTURE(c.text);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << c.text;
    Result r = run_kiln("tune import " + file, env);
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(has(r, "kiln: error: " + file + c.message));
    CHECK(has(r, "nothing imported"));
    CHECK(entries(tmp.path).empty());
  }
  Result missing = run_kiln("tune import " + (files.path / "none.txt").string(), env);
  CHECK(missing.code == 2);
  CHECK(has(missing, "cannot read"));
  Result folder = run_kiln("tune import " + files.path.string(), env);
  CHECK(folder.code == 2);
  CHECK(has(folder, "cannot read"));
}
