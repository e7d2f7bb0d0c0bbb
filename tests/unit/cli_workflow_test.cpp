// The `kiln` binary end to end, the workflow around a composite: `kiln test`, `kiln runtimes`,
// `run`'s size, attribute and check options, times, a failed compile's source, the standard
// library from another folder, and suggestions for misspelt names. KILN_BIN names the binary.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/cli.h"

using namespace clitest;

namespace {

Result kiln(const std::string& args, const std::string& env = "") {
  return run_kiln(args, env);
}

}  // namespace

TEST_CASE("cli: --debug 1 prints times with three significant digits") {
  if (!std::getenv("KILN_BIN")) return;
  Result r =
      kiln("run tests/data/cli.toml:scale --runtime cc --test N=9 --debug 1",
           "KILN_CACHE=" + (std::filesystem::temp_directory_path() / "kiln_cli_ms").string());
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  int times = 0;
  std::istringstream words(r.out);
  std::string prev, w;
  while (words >> w) {
    if (w == "ms" || w == "ms,") {
      ++times;
      CAPTURE(prev);
      // Digits after the leading zeros: at most three where there is a decimal point.
      std::string digits;
      for (char ch : prev)
        if (std::isdigit(static_cast<unsigned char>(ch)) && (ch != '0' || !digits.empty()))
          digits += ch;
      if (prev.find('.') != std::string::npos) CHECK(digits.size() <= 3);
      CHECK(prev.find('e') == std::string::npos);
    }
    prev = w;
  }
  CHECK(times >= 10);  // the stages, compile, load, total, the kernel's and the reference's
}

TEST_CASE("cli: kiln runtimes lists each descriptor, its plugin and device, and if it runs here") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = kiln("runtimes");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "\ncc\n  descriptor "));
  CHECK(has(r, "/cc.toml\n  backend    c\n  plugin     "));
  CHECK(has(r, "libkiln_runtime_cc.so (version "));
  CHECK(has(r, "  device     host CPU"));
  CHECK(has(r, "  usable     yes\n"));
  CHECK(has(r, "\ncuda\n"));
  // A descriptor whose plugin is nowhere: why, and each folder searched once.
  TempDir home;
  std::filesystem::create_directories(home.path / "runtimes");
  std::ofstream(home.path / "runtimes" / "broken.toml")
      << "name = \"broken\"\nbackend = \"c\"\nplugin = \"kiln_runtime_nope\"\n";
  Result b = kiln("runtimes", "KILN_HOME=" + home.path.string());
  CAPTURE(b.out);
  CHECK(b.code == 0);
  CHECK(has(b, "broken\n  descriptor "));
  CHECK(has(b, "  usable     no: runtime 'broken': plugin libkiln_runtime_nope.so not found"));
  std::istringstream lines(b.out);
  std::set<std::string> seen;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("             /", 0) == 0) CHECK_MESSAGE(seen.insert(line).second, line);
  CHECK(seen.size() >= 2);
}

TEST_CASE("cli: a failed compile keeps its source and says where") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string bad = (tmp.path / "bad.toml").string();
  std::ofstream(bad) << "name = \"bad\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
                     << "flags = [\"-include/nonexistent/kiln_nope.h\"]\n";
  Result r = kiln("run tests/data/cli.toml:scale --runtime " + bad, "KILN_CACHE=off");
  CAPTURE(r.out);
  CHECK(r.code == 4);
  // Named by its descriptor, not by the plugin it shares with `cc`.
  CHECK(has(r, "kiln: error: bad runtime: compile failed: "));
  const std::string mark = "the source is kept in ";
  size_t at = r.out.find(mark);
  REQUIRE(at != std::string::npos);
  std::string path = r.out.substr(at + mark.size());
  path = path.substr(0, path.find('\n'));
  std::ifstream kept(path);
  std::stringstream text;
  text << kept.rdbuf();
  CHECK(text.str().find("void kiln_scale_0(") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("cli: run binds what --test names and the rest from the test table; --no-check") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = kiln("run ops/nn.toml:matmul --runtime cc --test M=20");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "matmul [K=1,M=20,N=1] on cc\n"));  // K and N from the first test case
  CHECK(has(r, "PASS"));
  CHECK(has(r, " (cc, including copies); reference interpreter "));
  // A descriptor path prints as the runtime's name.
  Result p = kiln("run tests/data/cli.toml:scale --runtime runtimes/cc.toml");
  CHECK(has(p, "scale [N=3] on cc\n"));
  // --no-check: no interpreter, each output summarised, exit 0.
  Result n = kiln("run tests/data/cli.toml:scale --runtime cc --test N=5 --no-check");
  CAPTURE(n.out);
  CHECK(n.code == 0);
  CHECK(has(n, "scale [N=5] on cc (not checked)\n"));
  CHECK(has(n, "  out y : f32[5]  min "));
  CHECK(!has(n, "PASS"));
  CHECK(!has(n, "reference interpreter"));
  // --attr takes a list: items without '=' continue a list value.
  Result a = kiln("run ops/tensor.toml:permute_axes --runtime cc --attr perm=[-2,-3,-1]");
  CHECK(has(a, "PASS"));
  Result b = kiln("run ops/tensor.toml:permute_axes --runtime cc --attr perm=-2,-3,-1");
  CHECK(has(b, "PASS"));
  Result c = kiln("run ops/math.toml:clamp --runtime cc --attr lo=-1,hi=0.5 --test N=7");
  CHECK(has(c, "PASS"));
  Result d = kiln("run ops/nn.toml:attention --attr causal=true,caual=1");
  CHECK(d.code == 2);
  CHECK(has(d, "has no attribute 'caual' (did you mean causal?)"));
}

TEST_CASE("cli: kiln test runs every case of the test tables; exit 3 on a failure") {
  if (!std::getenv("KILN_BIN")) return;
  Result r = kiln("test ops/nn.toml:softmax --runtime cc");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  // 4 dtypes x 2 batch shapes x 3 sizes.
  CHECK(has(r, "ok   softmax T=f32: 3 cases\n"));
  CHECK(has(r, "ok   softmax T=bf16 batch [3,5]: 3 cases\n"));
  CHECK(has(r, "\n24 passed, 0 failed (cc)\n"));
  // A whole file; a composite without a test table is skipped, not failed.
  Result f = kiln("test tests/data/cli.toml --runtime cc");
  CAPTURE(f.out);
  CHECK(f.code == 0);
  CHECK(has(f, "skip outer: no test table"));
  CHECK(has(f, "1 passed, 0 failed, 2 skipped (cc)\n"));
  // A planted wrong rule: the compiled code disagrees with the interpreter.
  TempDir tmp;
  const std::string rules = (tmp.path / "wrong.toml").string();
  std::ofstream(rules) << "times-two = { pattern = \"x * 2.0\", replacement = \"x\", "
                          "comment = \"planted: wrong\" }\n";
  Result w = kiln("test tests/data/cli.toml:scale --runtime cc --rules " + rules);
  CAPTURE(w.out);
  CHECK(w.code == 3);
  CHECK(has(w, "FAIL scale: [N=3] output y element 0: got "));
  CHECK(has(w, "0 passed, 1 failed (cc)\n"));
  Result m = kiln("test ops/nn.toml:sofmax --runtime cc");
  CHECK(m.code == 2);
  CHECK(has(m, "(did you mean softmax?)"));
  // Several targets: each line names its file; the totals cover them all.
  Result s = kiln("test tests/data/cli.toml:scale ops/math.toml:neg --runtime cc");
  CAPTURE(s.out);
  CHECK(s.code == 0);
  CHECK(has(s, "ok   tests/data/cli.toml:scale: 1 case\n"));
  CHECK(has(s, "ok   ops/math.toml:neg T=f32"));
  // A bad target among several stops before any test runs.
  Result b = kiln("test tests/data/cli.toml:scale ops/math.toml:nope --runtime cc");
  CHECK(b.code == 2);
  CHECK(has(b, "no composite 'nope'"));
  CHECK(!has(b, "ok   "));
}

TEST_CASE("cli: a spec outside the source tree uses the standard library by name or std:") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string spec = (tmp.path / "mine.toml").string();
  std::ofstream(spec) << "[meta]\nuse = [\"nn.toml\", \"std:math.toml\"]\n\n"
                      << "[soft_gelu]\ndoc = \"gelu of softmax\"\nin = { x = \"f32[N]\" }\n"
                      << "out = { y = \"f32[N]\" }\nbody = \"y = gelu(softmax(x))\"\n"
                      << "test = { sizes = { N = [5, 100] } }\n";
  Result r = kiln("test " + spec + " --runtime cc");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "2 passed, 0 failed (cc)"));
}

TEST_CASE("cli: std:FILE names a file of the standard library on the command line") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  Result r = kiln("run std:nn.toml:softmax --runtime cc --test N=7", env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "softmax [N=7] on cc"));
  CHECK(has(r, "PASS"));
  Result t = kiln("test std:math.toml:tanh --runtime cc", env);
  CAPTURE(t.out);
  CHECK(t.code == 0);
  CHECK(has(t, "passed, 0 failed (cc)"));
  Result missing = kiln("run std:no_such.toml:f", env);
  CAPTURE(missing.out);
  CHECK(missing.code != 0);
  CHECK(has(missing, "no_such.toml' does not exist"));
}

TEST_CASE("cli: KILN_RUNTIME_PATH registers runtimes kept outside Kiln by name") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::filesystem::path mine = tmp.path / "mine", other = tmp.path / "other";
  std::filesystem::create_directories(mine);
  std::filesystem::create_directories(other);
  // The shipped cc plugin with other flags, under a new name; `cc` itself is shadowed by the
  // first folder that has it.
  std::ofstream(mine / "cc_o1.toml")
      << "name = \"cc_o1\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
      << "flags = [\"-O1\", \"-std=c11\"]\n";
  std::ofstream(other / "cc.toml")
      << "name = \"cc\"\nbackend = \"c\"\nplugin = \"kiln_runtime_nope\"\n";
  // The plugin named by its file name, and by its name with "lib": found as written.
  std::ofstream(mine / "cc_file.toml")
      << "name = \"cc_file\"\nbackend = \"c\"\nplugin = \"libkiln_runtime_cc.so\"\n";
  std::ofstream(mine / "cc_lib.toml")
      << "name = \"cc_lib\"\nbackend = \"c\"\nplugin = \"libkiln_runtime_cc\"\n";
  const std::string env = "KILN_CACHE=" + (tmp.path / "cache").string() +
                          " KILN_RUNTIME_PATH=" + mine.string() + ":" + other.string();
  Result r = kiln("run tests/data/cli.toml:scale --runtime cc_o1", env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "on cc_o1"));
  CHECK(has(r, "PASS"));
  for (const char* name : {"cc_file", "cc_lib"}) {
    Result n = kiln(std::string("run tests/data/cli.toml:scale --runtime ") + name, env);
    CAPTURE(n.out);
    CHECK(n.code == 0);
    CHECK(has(n, "PASS"));
  }
  Result list = kiln("runtimes", env);
  CAPTURE(list.out);
  CHECK(list.code == 0);
  CHECK(has(list, "runtimes in " + mine.string() + ", " + other.string() + ", "));
  CHECK(has(list, "cc_o1\n  descriptor " + (mine / "cc_o1.toml").string()));
  CHECK(has(list, "\ncc\n  descriptor " + (other / "cc.toml").string()));
  CHECK(has(list, "plugin libkiln_runtime_nope.so not found"));
  Result unknown = kiln("run tests/data/cli.toml:scale --runtime cc_o2", env);
  CAPTURE(unknown.out);
  CHECK(unknown.code == 2);
  CHECK(has(unknown, "no descriptor cc_o2.toml in " + mine.string() + ", " + other.string()));
  CHECK(has(unknown, "cc_o1"));
}

TEST_CASE("cli: a misspelt composite or attribute gets the closest name; exit 2") {
  if (!std::getenv("KILN_BIN")) return;
  struct Case {
    std::string args, expect;
  };
  const Case cases[] = {
      {"run ops/nn.toml:sofmax", "no composite 'sofmax' in ops/nn.toml (did you mean softmax?)"},
      {"run ops/nn.toml:attention --attr causl=true",
       "composite 'attention' has no attribute 'causl' (did you mean causal?)"},
      {"run ops/nn.toml:attention --attr zzzzzz=1", "has no attribute 'zzzzzz'\n"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args);
    CAPTURE(c.args);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(has(r, c.expect));
  }
}

TEST_CASE("cli: run --save writes each output as .npy; --input reads one, binding its sizes") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string dir = (tmp.path / "out").string(), file = dir + "/y.npy";
  Result a = kiln("run ops/nn.toml:softmax --runtime cc --test N=10 --batch 3 --save " + dir);
  CAPTURE(a.out);
  CHECK(a.code == 0);
  CHECK(has(a, "  saved y to " + file + "\n"));
  // The file's shape [3, 10] binds the batch dimension and N.
  Result b = kiln("run ops/nn.toml:softmax --runtime cc --input x=" + file);
  CAPTURE(b.out);
  CHECK(b.code == 0);
  CHECK(has(b, "softmax [N=10,batch0=3] on cc\n"));
  CHECK(has(b, "PASS"));
  struct Case {
    std::string args, expect;
  };
  const Case bad[] = {
      {"--input x=" + file + " --test N=11", "--test N=11, but --input x has 10 there"},
      {"--input x=" + file + " --dtype T=f16", "the input is f16, the file holds f32"},
      {"--input y=" + file, "'softmax' has no input 'y'"},
      {"--input x=" + dir + "/none.npy", "cannot open it"},
      {"--input x", "--input expects NAME=FILE.npy"},
  };
  for (const Case& c : bad) {
    Result r = kiln("run ops/nn.toml:softmax --runtime cc " + c.args);
    CAPTURE(c.args);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(has(r, c.expect));
  }
}

TEST_CASE("cli: a gathered position outside its axis reads 0, and is an error under CHECK=1") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  // Every id is outside [0, V): -3 .. -1 and V .. V + 2.
  std::ofstream(tmp.path / "lookup.toml")
      << "[lookup]\nin = { table = \"f32[V, D]\", ids = \"i32[S]\" }\n"
      << "out = { y = \"f32[S, D]\" }\nbody = \"y[s, d] = table[ids[s], d]\"\n"
      << "test = { sizes = { V = 4, D = 3, S = 5 }, range = { ids = [4, 7] } }\n";
  const std::string spec = (tmp.path / "lookup.toml").string();
  for (const char* runtime : {"cc", "clang", "openmp"}) {
    CAPTURE(runtime);
    Result r = kiln("run " + spec + " --runtime " + runtime, env);
    CAPTURE(r.out);
    CHECK(r.code == 0);
    CHECK(has(r, "PASS"));
    r = kiln("run " + spec + " --runtime " + runtime + " --config CHECK=1", env);
    CAPTURE(r.out);
    CHECK(r.code == 4);
    CHECK(has(r, "is outside buffer 'table' along a dimension of 4 elements (--config CHECK=1)"));
    CHECK(has(r, ": gathered index "));
  }
  // The interpreter follows the same rule: 0 by default, an error under CHECK=1.
  Result r = kiln("run " + spec + " --runtime interp --config CHECK=1", env);
  CAPTURE(r.out);
  CHECK(r.code == 4);
  CHECK(has(r, "(gather): gathered index "));
}

TEST_CASE("cli: a scattered position outside its axis is dropped, and is an error under CHECK=1") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  // Positions in [-2, 7) along an axis of 4: some inside, some outside on either side.
  std::ofstream(tmp.path / "hist.toml")
      << "[hist]\nin = { base = \"f32[B, M]\", idx = \"i64[B, N]\", src = \"f32[B, N]\" }\n"
      << "out = { y = \"f32[B, M]\", z = \"f32[B, M]\" }\n"
      << "body = '''\ny = scatter(base, idx, src)\nz = scatter(base, idx, src, \"max\")\n'''\n"
      << "test = { sizes = { B = 3, M = 4, N = 20 }, range = { idx = [-2, 7] } }\n";
  const std::string spec = (tmp.path / "hist.toml").string();
  for (const char* runtime : {"cc", "clang", "openmp"}) {
    CAPTURE(runtime);
    Result r = kiln("run " + spec + " --runtime " + runtime, env);
    CAPTURE(r.out);
    CHECK(r.code == 0);
    CHECK(has(r, "PASS"));
    r = kiln("run " + spec + " --runtime " + runtime + " --config CHECK=1", env);
    CAPTURE(r.out);
    CHECK(r.code == 4);
    CHECK(has(r, ": scattered index "));
    CHECK(has(r, " along a dimension of 4 elements (--config CHECK=1)"));
  }
  Result r = kiln("run " + spec + " --runtime interp --config CHECK=1", env);
  CAPTURE(r.out);
  CHECK(r.code == 4);
  CHECK(has(r, "(scatter): scattered index "));
}

TEST_CASE("cli: kiln test-runtime checks a runtime against the interpreter and writes a report") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string env = "KILN_CACHE=off";
  // The shipped cc plugin: everything passes; the report has a row per composite and a column
  // per dtype, empty where the composite does not take it.
  const std::string good = (tmp.path / "good.md").string();
  Result r = kiln(
      "test-runtime cc --ops ops/math.toml:sqrt tests/data/cli.toml:scale --report " + good, env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(
      has(r, "13 passed, 0 failed, 0 in programs that did not compile, 0 skipped (cc, 5 programs"));
  // Off a terminal no bar: a line each tenth of the cases passed, naming where it is.
  CHECK(has(r, "test-runtime: 2 of 13 cases, at ops/math.toml:sqrt T=f32 batch [3] ("));
  CHECK(has(r, "test-runtime: 12 of 13 cases, at tests/data/cli.toml:scale ("));
  std::string report = read_file(good);
  CAPTURE(report);
  CHECK(report.find("# Conformance of the `cc` runtime") != std::string::npos);
  CHECK(report.find("| composite | f32 | f64 | f16 | bf16 | untyped |") != std::string::npos);
  CHECK(report.find("| math.toml:sqrt | pass (3) | pass (3) | pass (3) | pass (3) |  |") !=
        std::string::npos);
  CHECK(report.find("| cli.toml:scale |  |  |  |  | pass (1) |") != std::string::npos);
  // A plugin that computes a wrong square root (its compiler told so): each bad case is a line,
  // the cell says which element; exit 3.
  std::ofstream(tmp.path / "wrong.toml")
      << "name = \"wrong\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
      << "flags = [\"-std=gnu11\", \"-D__builtin_sqrtf(x)=(x)\"]\n";
  const std::string bad = (tmp.path / "bad.md").string();
  Result w = kiln("test-runtime " + (tmp.path / "wrong.toml").string() +
                      " --ops ops/math.toml:sqrt --report " + bad,
                  env);
  CAPTURE(w.out);
  CHECK(w.code == 3);
  CHECK(has(w, "FAIL ops/math.toml:sqrt T=f32 batch [3]: [N=1,batch0=3] output y element 0: got"));
  report = read_file(bad);
  CHECK(report.find("| math.toml:sqrt | **fail** (3 of 3): [N=1,batch0=3] output y element 0") !=
        std::string::npos);
  CHECK(report.find("| pass (3) |") !=
        std::string::npos);  // f64 takes libm's sqrt, which the flag leaves
  // A plugin whose compiler fails: the compiler's own error line in the cell; exit 3.
  std::ofstream(tmp.path / "broken.toml")
      << "name = \"broken\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
      << "flags = [\"-include/nonexistent/kiln_nope.h\"]\n";
  Result b = kiln("test-runtime " + (tmp.path / "broken.toml").string() +
                      " --ops tests/data/cli.toml:scale --report " + bad,
                  env);
  CHECK(b.code == 3);
  CHECK(read_file(bad).find("**compile error**: broken runtime: compile failed: ") !=
        std::string::npos);
  CHECK(read_file(bad).find("kiln_nope.h") != std::string::npos);
  Result u = kiln("test-runtime nope --ops tests/data/cli.toml:scale", env);
  CHECK(u.code == 2);
  CHECK(has(u, "no runtime 'nope'"));
}

TEST_CASE("cli: kiln new-runtime makes a plugin that builds and passes kiln test-runtime") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string dir = tmp.path.string();
  Result r = kiln("new-runtime mine --from cc --dir " + dir);
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  const std::filesystem::path mine = tmp.path / "mine";
  for (const char* f : {"mine.toml", "mine_plugin.c", "CMakeLists.txt", "README.md"})
    CHECK(std::filesystem::exists(mine / f));
  const std::string plugin = read_file(mine / "mine_plugin.c");
  CHECK(plugin.find(".name = \"mine\",") != std::string::npos);
  CHECK(plugin.find(".launch = cc_launch, /* runs a kernel:") != std::string::npos);
  CHECK(read_file(mine / "mine.toml").find("plugin = \"build/libkiln_runtime_mine.so\"") !=
        std::string::npos);
  CHECK(read_file(mine / "CMakeLists.txt").find("find_package(Kiln 0.1 REQUIRED)") !=
        std::string::npos);
  // Built as its CMakeLists.txt would (tests/install/check.sh builds it that way, against an
  // install), then checked: its own name in the messages, everything passing.
  std::filesystem::create_directories(mine / "build");
  const std::string cc = "cc -std=c11 -O1 -shared -fPIC -fvisibility=hidden -Iinclude " +
                         (mine / "mine_plugin.c").string() + " -o " +
                         (mine / "build" / "libkiln_runtime_mine.so").string() + " -ldl";
  REQUIRE(std::system(cc.c_str()) == 0);
  Result t = kiln("test-runtime " + (mine / "mine.toml").string() +
                      " --ops ops/math.toml:add tests/data/cli.toml:scale",
                  "KILN_CACHE=off");
  CAPTURE(t.out);
  CHECK(t.code == 0);
  CHECK(has(t, "passed, 0 failed, 0 in programs that did not compile, 0 skipped (mine, "));
  // The cuda scaffold carries its NVRTC and driver glue beside it.
  Result c = kiln("new-runtime gpu --from cuda --dir " + dir);
  CHECK(c.code == 0);
  for (const char* f :
       {"gpu.toml", "gpu_plugin.c", "nvrtc.c", "cuda_api.h", "tensor_maps.c", "tensor_maps.h"})
    CHECK(std::filesystem::exists(tmp.path / "gpu" / f));
  CHECK(read_file(tmp.path / "gpu" / "gpu_plugin.c").find("#include \"cuda_api.h\"") !=
        std::string::npos);
  CHECK(read_file(tmp.path / "gpu" / "gpu_plugin.c").find("#include \"tensor_maps.h\"") !=
        std::string::npos);
  CHECK(read_file(tmp.path / "gpu" / "CMakeLists.txt").find("tensor_maps.c") != std::string::npos);
  for (const char* f : {"gpu_plugin.c", "nvrtc.c", "tensor_maps.c", "tensor_maps.h"})
    CHECK(read_file(tmp.path / "gpu" / f).find("runtimes/cuda/") == std::string::npos);
  // Bad requests: one line each, exit 2, nothing written.
  Result name = kiln("new-runtime My-cc --from cc --dir " + dir);
  CHECK(name.code == 2);
  CHECK(has(name, "must be a C identifier"));
  Result from = kiln("new-runtime other --from clang --dir " + dir);
  CHECK(from.code == 2);
  CHECK(has(from, "expected cc or cuda"));
  CHECK(!std::filesystem::exists(tmp.path / "other"));
  Result again = kiln("new-runtime mine --from cc --dir " + dir);
  CHECK(again.code == 2);
  CHECK(has(again, "exists and is not empty"));
}
