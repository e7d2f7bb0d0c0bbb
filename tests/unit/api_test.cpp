// The public API (include/kiln/kiln.h): compile once, run at two size bindings on host buffers,
// compare with naive loops and with the reference interpreter; error paths throw the documented
// exception types; docs/api.md quotes docs/examples/api_example.cpp verbatim.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "driver/host_cpu.h"
#include "kiln/kiln.h"

namespace {

using Sizes = std::map<std::string, int64_t>;

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>((i * 7919) % 23) - 5.0f * scale;
  return v;
}

std::vector<float> naive_softmax(const std::vector<float>& x, int64_t rows, int64_t n) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &x[r * n];
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < n; ++c)
      m = std::max(m, static_cast<double>(row[c]));
    for (int64_t c = 0; c < n; ++c)
      s += std::exp(row[c] - m);
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = static_cast<float>(std::exp(row[c] - m) / s);
  }
  return y;
}

std::vector<float> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                                int64_t k, int64_t n) {
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(a[i * k + p]) * b[p * n + j];
      y[i * n + j] = static_cast<float>(s);
    }
  return y;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4).scale(1.0));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("api: softmax compiled once runs at two batch and size bindings") {
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::CompileSettings settings;
  settings.batch_rank = 1;
  kiln::Compiled softmax = kiln::compile(spec, "softmax", "clang", settings);
  kiln::Compiled reference = kiln::compile(spec, "softmax", "interp", settings);
  CHECK(softmax.inputs() == std::vector<std::string>{"x"});
  CHECK(softmax.outputs() == std::vector<std::string>{"y"});
  CHECK(softmax.dtype("y") == "f32");
  CHECK(softmax.size_vars() == std::vector<std::string>{"batch0", "N"});
  CHECK(softmax.symbolic_shape("x") == std::vector<std::string>{"batch0", "N"});
  for (Sizes sizes : {Sizes{{"batch0", 3}, {"N", 7}}, Sizes{{"batch0", 5}, {"N", 1000}}}) {
    CAPTURE(sizes.at("N"));
    int64_t rows = sizes.at("batch0"), n = sizes.at("N");
    CHECK(softmax.shape("y", sizes) == std::vector<int64_t>{rows, n});
    CHECK(softmax.byte_size("y", sizes) == static_cast<size_t>(rows * n * 4));
    std::vector<float> x = ramp(rows * n, 0.5f), y(rows * n), y_ref(rows * n);
    softmax.run({x.data(), y.data()}, sizes);
    reference.run({x.data(), y_ref.data()}, sizes);
    check_close(y, naive_softmax(x, rows, n));
    check_close(y, y_ref);
  }
}

TEST_CASE("api: matmul compiled once runs at two size bindings") {
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::Compiled matmul = kiln::compile(spec, "matmul");
  kiln::Compiled reference = kiln::compile(spec, "matmul", "interp");
  CHECK(matmul.inputs() == std::vector<std::string>{"a", "b"});
  CHECK(matmul.size_vars() == std::vector<std::string>{"M", "K", "N"});
  for (Sizes sizes : {Sizes{{"M", 3}, {"K", 5}, {"N", 7}}, Sizes{{"M", 17}, {"K", 32}, {"N", 9}}}) {
    int64_t m = sizes.at("M"), k = sizes.at("K"), n = sizes.at("N");
    std::vector<float> a = ramp(m * k, 0.25f), b = ramp(k * n, 0.125f), y(m * n), y_ref(m * n);
    matmul.run({a.data(), b.data(), y.data()}, sizes);
    reference.run({a.data(), b.data(), y_ref.data()}, sizes);
    check_close(y, naive_matmul(a, b, m, k, n));
    check_close(y, y_ref);
  }
}

TEST_CASE("api: a const weight is packed at the first run and kept until it changes") {
  // dense_gelu's w is `const`: its packed panels stay in a workspace while w is the same
  // buffer at the same sizes. K = 300 spans two k blocks; N = 133 has full, narrow and partial
  // lane tiles, all packed from w.
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::Compiled reference = kiln::compile(spec, "dense_gelu", "interp");
  for (const char* runtime : {"clang", "cc", "openmp"}) {
    CAPTURE(runtime);
    kiln::Compiled dense = kiln::compile(spec, "dense_gelu", runtime);
    Sizes sizes{{"M", 7}, {"K", 300}, {"N", 133}};
    std::vector<float> a = ramp(7 * 300, 0.01f), w = ramp(300 * 133, 0.003f),
                       bias = ramp(133, 0.1f);
    std::vector<float> y(7 * 133), want(7 * 133);
    auto run = [&](std::vector<float>& weights, const Sizes& at) {
      dense.run({a.data(), weights.data(), bias.data(), y.data()}, at);
      reference.run({a.data(), weights.data(), bias.data(), want.data()}, at);
    };
    run(w, sizes);
    check_close(y, want);
    a = ramp(7 * 300, -0.02f);  // a is not const: read afresh at every run
    run(w, sizes);
    check_close(y, want);
    // w changed in place without a word: the kept panels still hold the old w, which shows
    // that they were kept (the documented contract: call weights_changed()).
    std::vector<float> old_y = y, old_w = w;
    for (float& v : w)
      v = -v;
    dense.run({a.data(), w.data(), bias.data(), y.data()}, sizes);
    CHECK(y == old_y);
    dense.weights_changed();
    run(w, sizes);
    check_close(y, want);
    CHECK(y != old_y);
    run(old_w, sizes);  // another buffer: packed afresh
    check_close(y, want);
    Sizes smaller{{"M", 5}, {"K", 40}, {"N", 70}};  // the same buffers, other sizes
    run(old_w, smaller);
    y.resize(5 * 70);
    want.resize(5 * 70);
    check_close(y, want);
  }
}

TEST_CASE("api: a const 8-bit weight's k quads and column sums are packed once and kept") {
  // matmul_i8_i8_const's w[k, n] is `const`: on a CPU with VNNI (or without, on the widened
  // fallback) its quads of k and each k block's column sums stay in the workspace
  // (backends/packed_weights.h). K = 1030: two k blocks, the last partial, not a multiple of 4;
  // N = 70: a partial lane tile. Exact in i32, so every result is compared bit for bit.
  kiln::Spec spec = kiln::Spec::load("tests/regressions/int8_contractions.toml");
  kiln::Compiled reference = kiln::compile(spec, "matmul_i8_i8_const", "interp");
  const int64_t m = 3, k = 1030, n = 70;
  for (const char* runtime : {"clang", "cc", "openmp"}) {
    CAPTURE(runtime);
    kiln::Compiled mm = kiln::compile(spec, "matmul_i8_i8_const", runtime);
    Sizes sizes{{"M", m}, {"K", k}, {"N", n}};
    std::vector<int8_t> a(m * k), w(k * n);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = static_cast<int8_t>(i * 37 + 11);
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<int8_t>(i * 101 + 5);
    std::vector<int32_t> y(m * n), want(m * n);
    auto run = [&]() {
      mm.run({a.data(), w.data(), y.data()}, sizes);
      reference.run({a.data(), w.data(), want.data()}, sizes);
    };
    run();
    CHECK(y == want);
    for (int8_t& v : a)
      v = static_cast<int8_t>(-v);  // a is not const: read afresh
    run();
    CHECK(y == want);
    // w changed in place without a word: the kept quads and sums still give the old product.
    // Under openmp the row blocks run in parallel beside the lane blocks (collapse(2)): two
    // threads would fill one region, so the pack is made at every call there (not kept).
    // On a CPU with AMX-INT8 the product runs on the matrix unit, whose packs are made at every
    // call (backends/packed_weights.h): nothing is kept there either.
    const bool kept = std::string(runtime) != "openmp" && !kiln::host_cpu().amx_int8;
    std::vector<int32_t> old_y = y;
    for (int8_t& v : w)
      v = static_cast<int8_t>(v ^ 0x55);
    mm.run({a.data(), w.data(), y.data()}, sizes);
    CHECK((y == old_y) == kept);
    mm.weights_changed();
    run();
    CHECK(y == want);
    CHECK(y != old_y);
  }
}

TEST_CASE("api: settings choose dtype, config and specialised sizes") {
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::CompileSettings settings;
  settings.dtypes = {{"T", "f64"}};
  settings.config = {{"TILE", "4"}};
  settings.fixed_sizes = {{"K", 3}};
  kiln::Compiled matmul = kiln::compile(spec, "matmul", "clang", settings);
  CHECK(matmul.dtype("a") == "f64");
  CHECK(matmul.size_vars() == std::vector<std::string>{"M", "N"});
  std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, y(4);
  matmul.run({a.data(), b.data(), y.data()}, {{"M", 2}, {"N", 2}});
  CHECK(y == std::vector<double>{4, 5, 10, 11});
}

TEST_CASE("api: a bad spec throws InvalidSpec with file:line:col") {
  try {
    kiln::Spec::load("tests/error/bad_type_syntax.toml");
    FAIL("no exception");
  } catch (const kiln::InvalidSpec& e) {
    CHECK(std::string(e.what()).find("tests/error/bad_type_syntax.toml:4:17: error:") !=
          std::string::npos);
    CHECK(e.line() == 4);
    CHECK(e.column() == 17);
  }
  auto load_and_compile = [] {
    kiln::Spec spec = kiln::Spec::load("tests/error/unknown_name.toml");
    kiln::compile(spec, "add_one", "interp");
  };
  CHECK_THROWS_WITH_AS(load_and_compile(), doctest::Contains("unknown_name.toml:6:17: error:"),
                       kiln::InvalidSpec);
}

TEST_CASE("api: caller mistakes throw std::invalid_argument") {
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  CHECK(spec.has("softmax"));
  CHECK_FALSE(spec.has("no_such_op"));
  CHECK_THROWS_AS(kiln::compile(spec, "no_such_op"), std::invalid_argument);
  CHECK_THROWS_AS(kiln::compile(spec, "matmul", "no_such_runtime"), std::invalid_argument);
  kiln::CompileSettings bad_dtype;
  bad_dtype.dtypes = {{"T", "i32"}};
  CHECK_THROWS_AS(kiln::compile(spec, "matmul", "interp", bad_dtype), std::invalid_argument);
  kiln::Compiled matmul = kiln::compile(spec, "matmul", "interp");
  std::vector<float> buf(4);
  CHECK_THROWS_AS(matmul.run({buf.data()}, {{"M", 1}, {"K", 1}, {"N", 1}}), std::invalid_argument);
  CHECK_THROWS_AS(matmul.run({buf.data(), buf.data(), buf.data()}, {{"M", 1}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(matmul.dtype("z"), std::invalid_argument);
  // run_device is for runtimes of device memory; the interpreter and CPU runtimes read the host's.
  CHECK_FALSE(matmul.device_memory());
  CHECK_THROWS_WITH_AS(matmul.run_device({buf.data(), buf.data(), buf.data()},
                                         {{"M", 1}, {"K", 1}, {"N", 1}}, nullptr),
                       doctest::Contains("call run(), not run_device()"), std::invalid_argument);
  kiln::Compiled on_cpu = kiln::compile(spec, "matmul", "clang");
  CHECK_FALSE(on_cpu.device_memory());
  CHECK_THROWS_AS(on_cpu.run_device({buf.data(), buf.data(), buf.data()},
                                    {{"M", 1}, {"K", 1}, {"N", 1}}, nullptr),
                  std::invalid_argument);
  // A size to specialise that the composite does not have is a mistake, not a no-op.
  kiln::CompileSettings stray;
  stray.fixed_sizes = {{"Q", 4}};
  CHECK_THROWS_WITH_AS(kiln::compile(spec, "matmul", "interp", stray), doctest::Contains("'Q'"),
                       std::invalid_argument);
}

TEST_CASE("api: an unknown config key or a bad value throws std::invalid_argument") {
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  for (const char* runtime : {"clang", "cc", "interp"}) {
    CAPTURE(runtime);
    kiln::CompileSettings typo;
    typo.config = {{"TIEL", "64"}};
    CHECK_THROWS_WITH_AS(
        kiln::compile(spec, "softmax", runtime, typo),
        "unknown --config key 'TIEL' (did you mean TILE?); known keys: BF16DOT, BLAS, "
        "CHECK, FASTMATH, GPU_ATTN, GPU_MMA, GPU_TILE, GPU_TMA, GPU_WGMMA, ISL_MS, ISL_OPS, "
        "MATRIX, MICRO, "
        "PACK_ROWS, PARALLEL, PREFETCH, "
        "SIMD, "
        "SIMPLIFY, STREAM, THREADS, TILE, TUNED, "
        "VECTORIZE, VNNI",
        std::invalid_argument);
    kiln::CompileSettings bad;
    bad.config = {{"THREADS", "many"}};
    CHECK_THROWS_WITH_AS(kiln::compile(spec, "softmax", runtime, bad),
                         doctest::Contains("--config THREADS expects"), std::invalid_argument);
  }
  kiln::CompileSettings threads;
  threads.config = {{"threads", "2"}};
  CHECK_NOTHROW(kiln::compile(spec, "softmax", "cc", threads));
}

TEST_CASE("api: docs/api.md quotes the example program verbatim") {
  std::string example = read_text("docs/examples/api_example.cpp");
  REQUIRE_FALSE(example.empty());
  CHECK(read_text("docs/api.md").find(example) != std::string::npos);
}

TEST_CASE("api: KILN_DEBUG prints each build to stderr; KILN_DUMP writes source, schedule, plan") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kiln-api-dump-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  kiln::Spec spec = kiln::Spec::load("ops/nn.toml");
  kiln::CompileSettings settings;
  settings.cache_dir = (dir / "cache").string();
  std::stringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  ::setenv("KILN_DEBUG", "1", 1);
  ::setenv("KILN_DUMP", (dir / "dump").c_str(), 1);
  try {
    kiln::compile(spec, "softmax", "cc", settings);
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  ::unsetenv("KILN_DEBUG");
  ::unsetenv("KILN_DUMP");
  std::cerr.rdbuf(old);
  CAPTURE(err.str());
  CHECK(err.str().find("kiln: softmax on cc: 1 kernel(s), compile ") == 0);
  CHECK(err.str().find("(cache miss)") != std::string::npos);
  CHECK(err.str().find("; stages: simplified ") != std::string::npos);
  std::set<std::string> kinds;
  for (const auto& e : fs::directory_iterator(dir / "dump")) {
    std::string n = e.path().filename().string();
    CHECK(n.rfind("softmax-", 0) == 0);
    kinds.insert(n.substr(n.find('.')));
    CHECK(fs::file_size(e.path()) > 0);
  }
  CHECK(kinds == std::set<std::string>{".c", ".plan.txt", ".schedule.txt"});
  ::setenv("KILN_DEBUG", "9", 1);
  CHECK_THROWS_WITH_AS(kiln::compile(spec, "softmax", "cc", settings),
                       doctest::Contains("KILN_DEBUG expects a debug level 0..5, got '9'"),
                       std::invalid_argument);
  ::unsetenv("KILN_DEBUG");
  fs::remove_all(dir);
}
