// The `kiln` binary end to end: exit codes and the first lines it prints. The binary's path
// comes from KILN_BIN, which CTest sets. The cache cases run against a temporary KILN_CACHE.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/cli.h"

using namespace clitest;

namespace {

Result kiln(const std::string& args, const std::string& env = "") {
  return run_kiln(args, env);
}

}  // namespace

TEST_CASE("cli: exit codes and output") {
  if (!std::getenv("KILN_BIN")) {
    MESSAGE("KILN_BIN is not set; skipping the command-line tests");
    return;
  }
  struct Case {
    const char* args;
    int code;
    const char* expect;
  };
  const Case cases[] = {
      {"--help", 0, "check"},
      {"run --help", 0, "--test"},
      {"run tests/data/cli.toml:scale --test N=4 --batch 2", 0, "out y : f32[2, 4]"},
      {"run tests/data/cli.toml:scale --test N=4 --dtype T=f64 --attr alpha=0.5", 0, "f64[4]"},
      {"show tests/data/cli.toml:scale --format dot", 0, "digraph"},
      {"run tests/data/cli.toml:scale --test N=4 --specialize --debug 2", 0, "input x : f32[4]"},
      {"show tests/data/cli.toml:scale", 0, "= mul"},
      {"show tests/data/cli.toml:scale --stage kernels", 0, "  y : f32[N]  output arg 1"},
      {"show ops/nn.toml:softmax --stage kernels", 0, "temp slot 1"},
      {"show tests/data/cli.toml:scale --stage schedule", 0, "// stages: simplified"},
      {"show tests/data/cli.toml:scale --stage code --config TILE=0", 0, "kiln_scale_0"},
      {"show tests/data/cli.toml:scale --stage code --format dot", 2,
       "--stage code is source text"},
      {"show tests/data/cli.toml:scale --stage loops", 2, "--stage"},
      {"compile tests/data/cli.toml:scale", 0, "kiln_scale_0"},
      {"compile tests/data/cli.toml:scale --specialize --test N=8 --dtype T=f64", 0,
       "kiln_scale_0"},
      {"compile tests/data/cli.toml:scale --object", 2, "-o OUT"},
      {"compile tests/data/cli.toml:scale --runtime warp", 2, "no runtime 'warp'"},
      {"cache", 2, ""},
      {"check tests/data/cli.toml", 0, "ok, 3 composites"},
      {"run tests/data/cli.toml", 2, "several composites"},
      {"run tests/data/cli.toml:nope", 2, "no composite 'nope'"},
      {"run tests/data/cli.toml:scale --test N=x", 2, "expected an integer"},
      {"run tests/data/cli.toml:scale --test N=4,M=3", 2,
       "--test M=3: 'scale' has no size M; its sizes: N"},
      {"bench tests/data/cli.toml:scale --test n=4", 2, "'scale' has no size n"},
      {"run tests/data/cli.toml:shift", 2, "size variable N"},
      {"run tests/data/cli.toml:scale --attr beta=1", 2, "no attribute 'beta'"},
      {"run tests/data/cli.toml:scale --dtype T=i32", 2, "does not allow"},
      {"run tests/data/cli.toml:scale --runtime warp", 2, "no runtime 'warp'"},
      {"frobnicate", 2, ""},
      {"run tests/data/cli.toml:shift --test N=5", 4, "outside its source"},
      {"check tests/data/missing.toml", 1, "does not exist"},
      {"check tests/data", 1, "'tests/data' is a folder, not a spec file"},
      {"show docs/examples/scaled_tanh.toml:tanh2 --stage simplified", 0,
       "const 2.885390043258667"},
      {"show ops/math.toml:tanh --stage simplified --rules docs/examples/rules/pow2.toml", 0,
       "const -2.885390043258667"},
      {"show ops/math.toml:tanh --stage simplified --stats", 0, "view-of-constant"},
      {"show ops/math.toml:tanh --stage kernels --stats", 2, "--stage simplified"},
      {"show ops/math.toml:tanh --stage simplified --rules tests/data/bad_rules.toml", 1,
       "bad_rules.toml:3:44: error: 'y' is not a variable of the pattern"},
      {"run ops/math.toml:tanh --rules tests/data/no_such_rules.toml", 2, "File does not exist"},
      {"rules list", 0, "mul-one"},
      {"rules check docs/examples/rules/pow2.toml", 0, "ok    scale-pow2"},
      {"rules check tests/data/wrong_rules.toml", 3, "FAIL  add-zero-any"},
      {"run tests/data/cli.toml:scale --runtime clang --config FASTMATH=2", 2,
       "FASTMATH expects 0 or 1"},
      {"run tests/data/cli.toml:scale --runtime clang --config BLAS=mkl", 2,
       "BLAS expects openblas or none"},
      {"run tests/data/cli.toml:scale --runtime clang --test N=4 --config SIMPLIFY=0 --debug 2", 0,
       "= view"},
      {"show ops/nn.toml:matmul --stage simplified --config BLAS=openblas", 0,
       "extern gemm %0, %1 : f32[M, N]"},
      {"run ops/nn.toml:matmul --runtime clang --config BLAS=openblas --test M=64,K=33,N=17", 0,
       "PASS"},
      {"run ops/nn.toml:matmul --runtime cc --config BLAS=openblas --test M=7,K=5,N=3 --dtype "
       "T=f64",
       0, "PASS"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args);
    std::string args = c.args;
    CAPTURE(args);
    CAPTURE(r.out);
    CHECK(r.code == c.code);
    CHECK(has(r, c.expect));
  }
}

TEST_CASE("cli: compile writes source and artifacts to -o") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  std::string source = (tmp.path / "scale.c").string(), object = (tmp.path / "scale.o").string();
  Result r = kiln("compile tests/data/cli.toml:scale -o " + source, env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "bytes of source"));
  CHECK(read_file(source).find("kiln_scale_0") != std::string::npos);
  r = kiln("compile tests/data/cli.toml:scale --object -o " + object, env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "cache miss"));
  CHECK(!read_file(object).empty());
  r = kiln("compile tests/data/cli.toml:scale --object -o " + object, env);
  CHECK(has(r, "cache hit"));
}

TEST_CASE("cli: KILN_FIND_NAN names the kernel that first leaves a NaN and the infinities") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string spec = (tmp.path / "nan.toml").string();
  {
    std::ofstream f(spec);
    f << "[roots]\nin = { x = \"f32[N]\" }\nout = { y = \"f32[N]\", z = \"f32[N]\" }\n"
         "body = \"\"\"\ny = sqrt(x)\nz = log2(x - x)\n\"\"\"\n"
         "test = { sizes = { N = 8 }, range = { x = [-1, 1] } }\n";
  }
  const std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  Result r = kiln("run " + spec + ":roots --runtime clang --seed 3", env + " KILN_FIND_NAN=1");
  CAPTURE(r.out);
  CHECK(has(r, "KILN_FIND_NAN: kernel 0 (kiln_roots_0) left output buffer 'y' (8 elements) with"));
  CHECK(has(r, " NaN (the first "));
  CHECK(has(r, "left output buffer 'z' (8 elements) with 8 -inf (the first 0)"));
  r = kiln("run " + spec + ":roots --runtime clang --seed 3", env);
  CHECK(!has(r, "KILN_FIND_NAN"));
}

TEST_CASE("cli: cache ls, stats and clear, and a cache hit on the second run") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string dir = (tmp.path / "cache").string(), env = "KILN_CACHE=" + dir;
  struct Case {
    const char* args;
    const char* expect;
  };
  const Case cases[] = {
      {"cache stats", "0 entries"},
      {"cache ls", ""},
      {"run tests/data/cli.toml:scale --runtime clang --debug 1", "(cache miss)"},
      {"run tests/data/cli.toml:scale --runtime clang --debug 1", "(cache hit)"},
      {"cache ls", "scale on clang: x f32[N], sizes symbolic  "},
      {"cache ls", " bytes, used "},
      {"cache stats", "1 entry"},
      {"cache clear", "removed 1 entry"},
      {"cache stats", "0 entries"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args, env);
    std::string args = c.args;
    CAPTURE(args);
    CAPTURE(r.out);
    CHECK(r.code == 0);
    CHECK(has(r, c.expect));
  }
  CHECK(has(kiln("cache stats", env), dir));
}

TEST_CASE("cli: size-1 batch dimensions cost no loops and still match the interpreter") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  std::string ones = "1";
  for (int k = 1; k < 40; ++k)
    ones += ",1";
  auto loops = [](const Result& r) {
    size_t n = 0;
    for (size_t at = r.out.find("for ("); at != std::string::npos; at = r.out.find("for (", at + 1))
      ++n;
    return n;
  };
  Result one = kiln("show ops/nn.toml:softmax --stage schedule --batch 7");
  Result many = kiln("show ops/nn.toml:softmax --stage schedule --batch " + ones);
  Result none = kiln("show ops/nn.toml:softmax --stage schedule --batch \"\"");
  Result fixed =
      kiln("show ops/nn.toml:softmax --stage schedule --specialize --test N=8 --batch " + ones);
  CAPTURE(many.out);
  CAPTURE(fixed.out);
  REQUIRE(one.code == 0);
  REQUIRE(many.code == 0);
  REQUIRE(fixed.code == 0);
  // the batch loop, then three loops over N, the sum's in blocks (promote_accumulators.h), its
  // exponentials' pass in strips that prefetch the next row (prefetch_rows.h)
  CHECK(loops(one) == 6);
  CHECK(loops(many) == loops(one));
  CHECK(loops(none) == 4);
  CHECK(loops(fixed) == 3);  // N = 8: the sum in one block
  for (const std::string& args :
       std::vector<std::string>{"--batch " + ones, "--specialize --batch " + ones,
                                "--batch 2,1,3,1,1,2", "--specialize --batch 2,1,3,1,1,2"}) {
    Result r = kiln("run ops/nn.toml:softmax --runtime cc --test N=5 " + args, env);
    CAPTURE(args);
    CAPTURE(r.out);
    CHECK(r.code == 0);
    CHECK(has(r, "PASS"));
  }
}

TEST_CASE("cli: past the isl operation limit, program order; past it there too, exit 4") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  Result r = kiln("run ops/nn.toml:softmax --runtime cc --test N=5 --config ISL_OPS=1", env);
  CHECK(r.code == 4);
  CHECK(has(r, "scheduling kernel 'softmax' exceeded the isl operation limit of 1"));
  CHECK(kiln("show ops/nn.toml:softmax --config ISL_OPS=x --stage schedule").code == 2);
}

TEST_CASE("cli: --runtime that names no descriptor, and a descriptor with a bad value") {
  // Issue 9, finding 5.
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string so = (tmp.path / "libmine.so").string(), bad = (tmp.path / "bad.toml").string();
  std::ofstream(so) << "ELF";
  std::ofstream(bad) << "name = 5\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n";
  struct Case {
    std::string args;
    std::string expect;
  };
  const Case cases[] = {
      {"run tests/data/cli.toml:scale --runtime " + so,
       "kiln: error: '" + so +
           "' is not a runtime descriptor; --runtime takes a runtime name or a descriptor .toml "
           "file; known runtimes: cc, clang, cuda, opencl, openmp, interp\n"},
      {"compile tests/data/cli.toml:scale --runtime " + so,
       "; known runtimes: cc, clang, cuda, opencl, openmp\n"},
      {"run tests/data/cli.toml:scale --runtime foo",
       "kiln: error: no runtime 'foo': no descriptor foo.toml in "},
      {"run tests/data/cli.toml:scale --runtime foo",
       "/runtimes; known runtimes: cc, clang, cuda, opencl, openmp, interp\n"},
      {"run tests/data/cli.toml:scale --runtime " + (tmp.path / "foo.toml").string(),
       "kiln: error: no runtime descriptor " + (tmp.path / "foo.toml").string() +
           ": no such file; known runtimes: cc, clang, cuda, opencl, openmp, interp\n"},
      {"run tests/data/cli.toml:scale --runtime " + bad,
       "kiln: error: " + bad + ":1:8: 'name' must be a string, got an integer\n"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args);
    CAPTURE(c.args);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(has(r, c.expect));
    CHECK_FALSE(has(r, "//"));
    CHECK_FALSE(has(r, ":0:"));
  }
}

TEST_CASE("cli: sizes past int64 or the limits are one clear error, not a wrap or a crash") {
  if (!std::getenv("KILN_BIN")) return;
  struct Case {
    std::string args;
    int code;
    std::string expect;
  };
  const std::string huge = "M=4294967296,N=4294967296,K=4294967296";
  const std::string matmul_error =
      "kiln: error: input 'a' of 'matmul': f32[M, K] with M = 4294967296, K = 4294967296 has "
      "18446744073709551616 elements, more than the limit 2^40";
  std::string ones;  // 65 batch dimensions
  for (int k = 0; k < 65; ++k)
    ones += k ? ",1" : "1";
  const Case cases[] = {
      {"run ops/nn.toml:matmul --runtime interp --test " + huge, 2, matmul_error},
      {"run ops/nn.toml:matmul --runtime clang --test " + huge, 2, matmul_error},
      {"run ops/nn.toml:matmul --runtime cc --test " + huge, 2, matmul_error},
      {"run ops/math.toml:add --test N=4611686018427387905 --batch 4", 2,
       "input 'a' of 'add': f32[batch0, N] with batch0 = 4, N = 4611686018427387905 has "
       "18446744073709551620 elements, more than the limit 2^40"},
      {"run ops/nn.toml:matmul --test M=1099511627777,N=1,K=1", 2,
       "f32[M, K] with M = 1099511627777, K = 1 has 1099511627777 elements, more than the limit "
       "2^40"},
      {"run ops/nn.toml:softmax --runtime clang --test N=4 --batch 4294967296,4294967296", 2,
       "input 'x' of 'softmax': f32[batch0, batch1, N] with batch0 = 4294967296, batch1 = "
       "4294967296, N = 4 has 73786976294838206464 elements"},
      {"run ops/nn.toml:softmax --runtime cc --test N=4 --batch 4294967296,4294967296", 2,
       "more than the limit 2^40"},
      {"run ops/nn.toml:softmax --test N=4 --batch -1", 2,
       "kiln: error: --batch dimension 0 is -1; a dimension must not be negative"},
      {"run ops/nn.toml:softmax --test N=4 --batch 2,-3", 2, "--batch dimension 1 is -3"},
      {"run ops/nn.toml:softmax --test N=-1", 2, "kiln: error: size N must not be negative"},
      {"run ops/nn.toml:softmax --test N=4 --batch " + ones, 2,
       "kiln: error: --batch has 65 dimensions, more than the limit 64"},
      {"run ops/nn.toml:conv2d --test B=1,C=1,H=2,W=5,F=1,R=5,S=1", 2,
       "output 'y' of 'conv2d': dimension 2 ("},
      {"run ops/nn.toml:conv2d --test B=1,C=1,H=2,W=5,F=1,R=5,S=1", 2,
       "is -2 with H = 2, R = 5; a dimension must not be negative"},
      {"show ops/math.toml:add --specialize --test N=4611686018427387905 --batch 4 --stage code", 2,
       "has 18446744073709551620 elements, more than the limit 2^40"},
      {"run ops/tensor.toml:flatten --specialize --test M=4294967296,N=4294967296", 2,
       "kiln: error: input 'x' of 'flatten': f32[M, N] with M = 4294967296, N = 4294967296 has "
       "18446744073709551616 elements"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args);
    INFO("kiln " << c.args << "\n" << r.out);
    CHECK(r.code == c.code);
    CHECK(has(r, c.expect));
    CHECK_FALSE(has(r, "bad_alloc"));
  }
}

TEST_CASE("cli: past the isl limits, program order (a schedule that took 110 s)") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  // Since the value planner (scheduler/plan_values.h) it schedules in well under a second; a
  // limit of operations, which counts the same on every machine, still sends its larger
  // kernels to program order, and the result stays right.
  std::string target =
      "tests/data/slow_schedule.toml:slow_schedule --specialize --config ISL_OPS=100000";
  Result shown = kiln("show " + target + " --stage schedule", env);
  CHECK(shown.code == 0);
  CHECK(has(shown, "in program order"));
  Result r = kiln("run " + target + " --runtime cc", env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "PASS"));
  // A time limit of a millisecond: program order, or where even that takes longer, one message.
  Result ms = kiln(
      "show tests/data/slow_schedule.toml:slow_schedule --specialize --config "
      "ISL_MS=1 --stage schedule",
      env);
  CAPTURE(ms.out);
  if (ms.code == 0)
    CHECK(has(ms, "in program order"));
  else
    CHECK(has(ms, "even in program order (--config ISL_OPS=N and ISL_MS=N raise them)"));
  CHECK(kiln("show ops/nn.toml:softmax --config ISL_MS=-1 --stage schedule").code == 2);
}

TEST_CASE("cli: --config keys are the knobs of the registry; others are exit 2") {
  if (!std::getenv("KILN_BIN")) return;
  const std::string known =
      "known keys: BF16DOT, BLAS, CHECK, FASTMATH, GPU_ATTN, GPU_MMA, GPU_TILE, GPU_TMA, "
      "GPU_WGMMA, ISL_MS, "
      "ISL_OPS, "
      "MATRIX, "
      "MICRO, "
      "PACK_ROWS, PARALLEL, PREFETCH, "
      "SIMD, "
      "SIMPLIFY, "
      "STREAM, "
      "THREADS, "
      "TILE, TUNED, "
      "VECTORIZE, VNNI\n";
  struct Case {
    std::string args;
    int code;
    std::string expect;
  };
  const Case cases[] = {
      {"run ops/nn.toml:softmax --config TIEL=64", 2,
       "kiln: error: unknown --config key 'TIEL' (did you mean TILE?); " + known},
      {"run ops/nn.toml:softmax --runtime clang --config OMP=1", 2,
       "kiln: error: unknown --config key 'OMP'; " + known},
      {"show ops/nn.toml:softmax --stage code --config TIEL=64", 2, "unknown --config key 'TIEL'"},
      {"show ops/nn.toml:softmax --config TIEL=64", 2, "unknown --config key 'TIEL'"},
      {"compile ops/nn.toml:softmax --config TILE=8,NOPE=1", 2, "unknown --config key 'NOPE'"},
      {"run ops/nn.toml:softmax --config THREADS=-1", 2,
       "--config THREADS expects a thread count (0: every core), got '-1'"},
      {"run ops/nn.toml:softmax --config TILE=32abc --runtime cc", 2, "--config TILE expects"},
      {"run tests/data/cli.toml:scale --runtime cc --test N=9 --config tile=0,threads=2", 0,
       "PASS"},
      {"run --help", 0, "runtime     the threads a parallel runtime (openmp) runs kernels on"},
      {"show --help", 0, "scheduler   tile sizes of permutable loop bands"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args);
    CAPTURE(c.args);
    CAPTURE(r.out);
    CHECK(r.code == c.code);
    CHECK(has(r, c.expect));
  }
}

TEST_CASE("cli: a descriptor's [config] key that is no knob is an error naming the file") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  const std::string bad = (tmp.path / "mine.toml").string(),
                    good = (tmp.path / "tiled.toml").string();
  std::ofstream(bad) << "name = \"mine\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
                     << "[config]\nomp = 1\n";
  std::ofstream(good) << "name = \"tiled\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
                      << "[config]\nmicro = 0\nthreads = 2\n";
  Result r = kiln("run tests/data/cli.toml:scale --test N=4 --runtime " + bad);
  CAPTURE(r.out);
  CHECK(r.code == 2);
  CHECK(has(
      r, "kiln: error: " + bad + ": unknown [config] key 'omp'; known keys: BF16DOT, BLAS, CHECK"));
  r = kiln("show ops/nn.toml:matmul --stage code --runtime cc");
  CHECK(has(r, "c2t += 256"));  // register-tiled in k blocks by default
  CHECK_FALSE(has(r, "(s_M - 1), 32)"));
  r = kiln("show ops/nn.toml:matmul --stage code --runtime " + good);
  CHECK(r.code == 0);
  CHECK(has(r, "(s_M - 1), 32)"));  // micro = 0 from the descriptor: isl's tiles instead
  CHECK_FALSE(has(r, "c2t += 64"));
  r = kiln("run tests/data/cli.toml:scale --test N=4 --runtime " + good + " --config TILE=BAD");
  CHECK(r.code == 2);
  CHECK(has(r, "--config TILE expects"));
}

TEST_CASE("cli: THREADS changes no generated code, so it leaves the cache key alone") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  const std::string run = "run tests/data/cli.toml:scale --runtime cc --test N=5 --debug 1 ";
  Result r = kiln(run + "--config THREADS=1", env);
  CHECK(r.code == 0);
  CHECK(has(r, "(cache miss)"));
  r = kiln(run + "--config THREADS=3", env);
  CHECK(has(r, "(cache hit)"));
  r = kiln(run + "--config TILE=4", env);
  CHECK(has(r, "(cache miss)"));
}

namespace {

/** The number after `"key": ` in a one-line JSON object; NaN when the key is missing or null. */
double json_number(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return std::nan("");
  const char* p = json.c_str() + at + key.size() + 4;
  char* end = nullptr;
  double v = std::strtod(p, &end);
  return end == p ? std::nan("") : v;
}

}  // namespace

TEST_CASE("cli: bench times a composite against another runtime and prints one JSON object") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  Result r = kiln(
      "bench ops/nn.toml:softmax --runtime clang --test N=64 --batch 8 --repeat 3 --vs runtime:cc "
      "--json",
      env);
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.front() == '{');
  CHECK(r.out.find('\n') == r.out.size() - 1);  // one line
  for (const char* key : {"composite", "runtime", "sizes", "median_ms", "min_ms", "max_ms",
                          "gflops", "gbps", "baseline", "baseline_median_ms", "ratio"})
    CHECK(has(r, "\"" + std::string(key) + "\": "));
  CHECK(has(r, "\"composite\": \"softmax\", \"runtime\": \"clang\""));
  CHECK(has(r, "\"sizes\": {\"N\": 64, \"batch0\": 8}"));
  CHECK(has(r, "\"baseline\": \"runtime:cc\""));
  CHECK(has(r, "\"repeats\": 3"));
  CHECK(has(r, "\"outputs_match\": true"));
  CHECK(json_number(r.out, "bytes") == 2 * 4 * 64 * 8);  // x read, y written
  double median = json_number(r.out, "median_ms"), min = json_number(r.out, "min_ms");
  CHECK(min > 0);
  CHECK(median >= min);
  CHECK(json_number(r.out, "max_ms") >= median);
  CHECK(json_number(r.out, "gflops") > 0);
  CHECK(json_number(r.out, "gbps") > 0);
  CHECK(json_number(r.out, "baseline_median_ms") > 0);
  CHECK(json_number(r.out, "ratio") > 0);
  // Without --vs: no baseline, a null ratio; without --json: the readable report.
  Result alone = kiln("bench ops/nn.toml:softmax --test N=64 --batch 8 --repeat 2 --json", env);
  CHECK(alone.code == 0);
  CHECK(has(alone, "\"baseline\": null"));
  CHECK(has(alone, "\"ratio\": null"));
  Result text = kiln("bench ops/nn.toml:softmax --test N=64 --batch 8 --repeat 2 --vs copy", env);
  CAPTURE(text.out);
  CHECK(text.code == 0);
  CHECK(has(text, "GFLOP/s"));
  CHECK(has(text, "copy time / kiln time"));
  CHECK(has(text, "2 runs after 3 warm-ups, alternated with the baseline"));
}

TEST_CASE("cli: bench --vs openblas times cblas sgemm on a matmul and checks its result") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
#if defined(KILN_SANITIZED)
  // As for libomp below: LeakSanitizer's exit-time scan crashed ("Tracer caught signal 11") in
  // this child after its run passed, with OpenBLAS's threads in the process.
  env += " ASAN_OPTIONS=detect_leaks=0";
#endif
  Result r = kiln(
      "bench ops/nn.toml:matmul --runtime clang --test M=33,K=17,N=9 --repeat 3 --vs openblas "
      "--json",
      env);
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  CHECK(has(r, "\"baseline\": \"openblas\""));
  CHECK(has(r, "\"outputs_match\": true"));
  CHECK(json_number(r.out, "flops") == 2 * 33 * 17 * 9);
  CHECK(json_number(r.out, "ratio") > 0);
  Result f64 = kiln(
      "bench ops/nn.toml:matmul --runtime cc --dtype T=f64 --test M=5,K=7,N=3 --repeat 2 --vs "
      "openblas --json",
      env);
  CAPTURE(f64.out);
  CHECK(f64.code == 0);
  CHECK(has(f64, "\"outputs_match\": true"));
}

TEST_CASE("cli: bench refuses what it cannot time and a kernel that disagrees with its baseline") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  struct Case {
    std::string args;
    int code;
    std::string expect;
  };
  const std::string softmax = "bench ops/nn.toml:softmax --test N=16 --batch 2 --repeat 1 ";
  const Case cases[] = {
      {softmax + "--vs nonsense", 2,
       "kiln: error: unknown baseline 'nonsense' for --vs; known baselines: openblas, torch, "
       "torch.compile, copy, runtime:NAME"},
      {"bench tests/data/cli.toml:scale --test N=4 --vs torch", 2,
       "kiln: error: --vs torch: composite 'scale' has no PyTorch baseline; give it one"},
      {softmax + "--vs runtime:", 2, "unknown baseline 'runtime:'"},
      {softmax + "--vs runtime:nope", 2, "known runtimes:"},
      {softmax + "--vs runtime:interp", 2, "the interpreter is not a compiled runtime"},
      {softmax + "--vs openblas", 2,
       "--vs openblas needs a composite that is a single matrix product; 'softmax' is not"},
      {"bench ops/nn.toml:bmm --test B=2,M=3,K=4,N=5 --vs openblas", 2, "'bmm' is not"},
      {softmax + "--runtime interp", 2, "--runtime interp is the interpreter"},
      {"bench ops/nn.toml:softmax --test N=-1", 2, "kiln: error: size N must not be negative"},
      {"bench ops/nn.toml:softmax --test N=4 --batch -1", 2,
       "kiln: error: --batch dimension 0 is -1; a dimension must not be negative"},
      {"bench tests/data/cli.toml:outer --test M=4", 2, "size variable N of 'outer' is not bound"},
      {softmax + "--repeat 0", 2, "--repeat"},
      {softmax + "--vs composite:", 2, "unknown baseline 'composite:'"},
      {softmax + "--vs composite:nope", 2, "no composite 'nope' in ops/nn.toml"},
      {softmax + "--vs composite:layernorm", 2,
       "--vs composite:layernorm: 'layernorm' takes (f32[2, 16], f32[16], f32[16]) and gives "
       "(f32[2, 16]), but 'softmax' takes (f32[2, 16])"},
      {softmax + "--vs composite:log_softmax", 3, "output 'y' differs from composite:log_softmax"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args, env);
    INFO("kiln " << c.args << "\n" << r.out);
    CHECK(r.code == c.code);
    CHECK(has(r, c.expect));
  }
  // Another composite of the file (or of FILE:NAME) on the same inputs, its outputs checked.
  for (const std::string& vs :
       {"composite:prefix_sum_masked", "composite:ops/reduce.toml:cumsum"}) {
    Result same = kiln(
        "bench ops/reduce.toml:prefix_sum_bounded --dtype T=f64 --test N=9 --repeat 2 "
        "--json --vs " +
            vs,
        env);
    INFO(same.out);
    CHECK(same.code == 0);
    CHECK(has(same, "\"baseline\": \"" + vs + "\""));
    CHECK(has(same, "\"outputs_match\": true"));
  }
  // A baseline whose kernel is wrong (exp2 compiled as sqrt: the prelude's libm path, taken
  // under KILN_VECLIB, calls __builtin_exp2f): exit 3 and no ratio.
  std::ofstream(tmp.path / "wrong.toml")
      << "name = \"wrong\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
      << "flags = [\"-std=c11\", \"-DKILN_VECLIB=1\", \"-D__builtin_exp2f=__builtin_sqrtf\"]\n";
  Result r = kiln(softmax + "--json --vs runtime:" + (tmp.path / "wrong.toml").string(), env);
  CAPTURE(r.out);
  CHECK(r.code == 3);
  CHECK(has(r, "output 'y' differs from runtime:"));
  CHECK_FALSE(has(r, "ratio"));
}

TEST_CASE("cli: bench --vs torch reports a helper that cannot start or has no PyTorch") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  const std::string softmax = "bench ops/nn.toml:softmax --test N=16 --batch 2 --repeat 1 ";
  Result r = kiln(softmax + "--vs torch", env + " KILN_PYTHON=/nonexistent/python");
  CAPTURE(r.out);
  CHECK(r.code == 4);
  CHECK(has(r, "kiln: error: --vs torch: cannot start the Python '/nonexistent/python'"));
  // A Python that ends without a word: how it ended, not a hang.
  r = kiln(softmax + "--vs torch", env + " KILN_PYTHON=false");
  CAPTURE(r.out);
  CHECK(r.code == 4);
  CHECK(has(r, "the helper (false torch_baseline.py) ended without a reply (exit status 1)"));
  // The helper itself, under a Python without PyTorch (-S: no site-packages, so no torch).
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
    MESSAGE("python3 is not installed; skipping the helper's own message");
    return;
  }
  std::filesystem::path python = tmp.path / "python-no-site";
  std::ofstream(python) << "#!/bin/sh\nexec python3 -S \"$@\"\n";
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  r = kiln(softmax + "--vs torch", env + " KILN_PYTHON=" + python.string());
  CAPTURE(r.out);
  CHECK(r.code == 4);
  CHECK(has(r, "kiln: error: --vs torch: PyTorch cannot be imported by"));
  CHECK(has(r, "set KILN_PYTHON to a Python that has it"));
}

TEST_CASE("cli: bench --vs torch runs the baseline expression and checks its outputs") {
  // Needs a Python with PyTorch: KILN_TEST_PYTHON (tools/baselines/setup_torch.sh makes one).
  const char* python = std::getenv("KILN_TEST_PYTHON");
  if (!std::getenv("KILN_BIN") || !python || !*python) {
    MESSAGE("KILN_TEST_PYTHON is not set; skipping the PyTorch baseline test");
    return;
  }
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string() + " KILN_PYTHON=" + python;
  for (const std::string& what :
       {"ops/nn.toml:softmax --test N=33 --batch 3", "ops/nn.toml:conv2d --attr pad=1",
        "ops/nn.toml:dense_gelu", "ops/reduce.toml:sum --attr keepdim=true",
        // a size named F beside F.linear: the integer with the module's attributes
        "tests/regressions/user_kernels.toml:swiglu_mlp --test M=3,E=8,F=16"}) {
    Result r = kiln("bench " + what + " --repeat 2 --vs torch --json", env);
    INFO("kiln bench " << what << "\n" << r.out);
    CHECK(r.code == 0);
    CHECK(has(r, "\"baseline\": \"torch\""));
    CHECK(has(r, "\"outputs_match\": true"));
    CHECK(json_number(r.out, "ratio") > 0);
  }
  // An expression that disagrees with the composite: exit 3, no ratio.
  std::ofstream(tmp.path / "off.toml")
      << "[off]\nin = { x = \"f32[N]\" }\nout = { y = \"f32[N]\" }\nbody = \"y = x * 2\"\n"
      << "test = { sizes = { N = 8 } }\nbaseline = { torch = \"x * 3\" }\n";
  Result r = kiln("bench " + (tmp.path / "off.toml").string() + " --repeat 1 --vs torch", env);
  CAPTURE(r.out);
  CHECK(r.code == 3);
  CHECK(has(r, "output 'y' differs from torch's"));
  // One that fails in Python: its message with the baseline's location.
  std::ofstream(tmp.path / "bad.toml")
      << "[bad]\nin = { x = \"f32[N]\" }\nout = { y = \"f32[N]\" }\nbody = \"y = x\"\n"
      << "test = { sizes = { N = 8 } }\nbaseline = { torch = \"x @ nothing\" }\n";
  r = kiln("bench " + (tmp.path / "bad.toml").string() + " --repeat 1 --vs torch", env);
  CAPTURE(r.out);
  CHECK(r.code == 4);
  CHECK(has(r, "bad.toml:6:22: NameError: name 'nothing' is not defined"));
}

TEST_CASE("cli: --runtime openmp runs a composite and passes against the interpreter") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
#if defined(KILN_SANITIZED)
  // LeakSanitizer's exit-time scan crashes ("Tracer caught signal 11") in a process that ran
  // this softmax on libomp, after the run passed; the scan is off for this child (as for the
  // correctness suite: docs/decisions.md, "libomp under the sanitizers").
  env += " ASAN_OPTIONS=detect_leaks=0";
#endif
  Result r =
      kiln("run ops/nn.toml:softmax --runtime openmp --test N=1000 --batch 4 --debug 1", env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "PASS"));
  CHECK(has(r, "cache miss"));
}

TEST_CASE("cli: show prints each loop's mapping and the openmp pragmas they give") {
  if (!std::getenv("KILN_BIN")) return;
  const std::string softmax = "show ops/nn.toml:softmax --batch 4 ";
  // SIMD=32: the C compiler's vector width, whatever this CPU's (64 where AVX-512 runs at full
  // width, below).
  Result r = kiln(softmax + "--runtime openmp --stage schedule --config SIMD=32");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "map parallel (collapse 2), map simd"));
  CHECK(has(r, "// parallel (band 0.0, coincident)"));
  CHECK(has(r, "// simd (band 2.0, reduction)"));
  CHECK(has(r, "alloc local acc1 = element of S4(c0, _)"));  // S3 stores the exponential
  r = kiln(softmax + "--runtime openmp --stage code --config SIMD=32");
  CHECK(has(r, "#pragma omp parallel for schedule(static)"));
  CHECK(has(r, "#pragma omp simd reduction(+:acc1)"));
  // SIMD=64: the float loops take 16 lanes of 64 bytes, which the pragma asks for.
  r = kiln(softmax + "--runtime openmp --stage schedule --config SIMD=64");
  CHECK(has(r, "map simd (64-byte vectors)"));
  CHECK(has(r, "// simd 16 lanes (band 2.0, reduction)"));
  r = kiln(softmax + "--runtime openmp --stage code --config SIMD=64");
  CHECK(has(r, "#pragma omp simd simdlen(16) reduction(+:acc1)"));
  // The plain C backend maps nothing: no thread or vector mapping, no pragma.
  r = kiln(softmax + "--runtime clang --stage schedule");
  CHECK(has(r, "// serial (band 0.0, coincident)"));
  CHECK_FALSE(has(r, "// parallel"));
  CHECK_FALSE(has(kiln(softmax + "--runtime clang --stage code"), "#pragma omp"));
  // PARALLEL=0 and VECTORIZE=0 drop their steps.
  r = kiln(softmax + "--runtime openmp --stage code --config PARALLEL=0,VECTORIZE=0");
  CHECK(r.code == 0);
  CHECK_FALSE(has(r, "#pragma omp"));
}

TEST_CASE(
    "cli: --runtime cuda shows its mapping and code, compiles through NVRTC, and needs a GPU") {
  if (!std::getenv("KILN_BIN")) return;
  TempDir tmp;
  std::string env = "KILN_CACHE=" + (tmp.path / "cache").string();
  const std::string softmax = "ops/nn.toml:softmax --batch 4 --runtime cuda ";
  Result r = kiln("show " + softmax + "--stage schedule", env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(has(r, "map gpu blocks and threads"));
  CHECK(has(r, "// block.x (band 0.0, coincident, groups of"));  // scheduler/group_rows.h
  CHECK(has(r, "// thread.x (band 1.0, reduction)"));
  CHECK(has(r, "single  // one thread of the block"));
  r = kiln("show " + softmax + "--stage code", env);
  CHECK(has(r, "kiln_group_reduce(acc0"));
  // Without a batch the row is the whole tensor: kernels are cut where every block would have
  // to see another's reduction, and the reductions run in one block.
  r = kiln("show ops/nn.toml:softmax --runtime cuda --stage schedule", env);
  CHECK(has(r, "// kernel kiln_softmax_2"));
  CHECK(has(r, "// one block: no loop runs across blocks"));
  // NVRTC needs no GPU: the artifact is a CUBIN (an ELF file).
  std::string cubin = (tmp.path / "softmax.cubin").string();
  r = kiln("compile " + softmax + "--object -o " + cubin, env);
  CHECK(r.code == 0);
  CHECK(read_file(cubin).rfind("\x7f"
                               "ELF",
                               0) == 0);
  // A module NVRTC 13.0 fails with --split-compile=0 ("Failed to read bitcode": attention's
  // backward in f64, eight kernels) compiles: on one thread (the default), and where
  // KILN_NVRTC_SPLIT=1 asks for the split, on the plugin's second try, without it.
  const std::string grad = (tmp.path / "attention_grad.toml").string();
  r = kiln("grad ops/nn.toml:attention --wrt q,k,v --dtype T=f64 -o " + grad, env);
  REQUIRE(r.code == 0);
  r = kiln("compile " + grad + " --runtime cuda --object -o " + cubin, env);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  r = kiln("compile " + grad + " --runtime cuda --object -o " + cubin,
           "KILN_CACHE=off KILN_NVRTC_SPLIT=1");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  // Running needs a device: with none, one line and exit 4 before any work.
  r = kiln("run " + softmax + "--test N=64", env);
  if (r.code == 0) {
    MESSAGE("a GPU is present: the no-device message is not checked");
    CHECK(has(r, "PASS"));
    return;
  }
  CHECK(r.code == 4);
  // Only the error: the interpreter did not run first, nothing was compiled.
  CHECK(r.out.find("kiln: error: cuda runtime: cannot run kernels: no CUDA device found (") == 0);
  CHECK(r.out.find('\n') == r.out.size() - 1);
  r = kiln("bench " + softmax + "--test N=64 --json", env);
  CHECK(r.code == 4);
  CHECK(has(r, "no CUDA device found"));
}
