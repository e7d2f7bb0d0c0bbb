// The public API's additions for the Python package (docs/python.md): specs from a string, with
// diagnostics quoting the string; const inputs; the knobs, runtimes and cache as data.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

const char* kScale = R"([meta]
use = ["std:math.toml"]

[scale]
doc  = "y = a * x + 1 over a weight a."
in   = { x = "T[N]", a = "const T[N]" }
out  = { y = "T[N]" }
types = { T = ["f32", "f64"] }
body = "y = a * x + 1.0"
)";

}  // namespace

TEST_CASE("api: Spec::from_string compiles and runs; its errors quote the string") {
  kiln::Spec spec = kiln::Spec::from_string(kScale, "inline.toml");
  CHECK(spec.composites() == std::vector<std::string>{"scale"});
  CHECK(spec.has("gelu_tanh"));  // from the used standard library file
  CHECK(spec.doc("scale") == "y = a * x + 1 over a weight a.");
  for (const char* runtime : {"interp", "cc"}) {
    CAPTURE(runtime);
    kiln::Compiled scale = kiln::compile(spec, "scale", runtime);
    CHECK(scale.is_const("a"));
    CHECK_FALSE(scale.is_const("x"));
    std::vector<float> x = {1, 2, 3}, a = {2, 3, 4}, y(3);
    scale.run({x.data(), a.data(), y.data()}, {{"N", 3}});
    CHECK(y == std::vector<float>{3, 7, 13});
  }
  // a syntax error found while loading
  try {
    kiln::Spec::from_string("[f]\nin = { x = \"T[N\" }\n", "broken.toml");
    FAIL("no exception");
  } catch (const kiln::InvalidSpec& e) {
    CHECK(e.file() == "broken.toml");
    CHECK(e.line() == 2);
    CHECK(std::string(e.what()).find("broken.toml:2:") == 0);
  }
  // an error found when compile lowers the body: the caret line comes from the string
  std::string bad = kScale;
  bad.replace(bad.rfind("a * x"), 5, "a * z");
  kiln::Spec bad_spec = kiln::Spec::from_string(bad, "bad_body.toml");
  try {
    kiln::compile(bad_spec, "scale", "interp");
    FAIL("no exception");
  } catch (const kiln::InvalidSpec& e) {
    CHECK(e.file() == "bad_body.toml");
    CHECK(e.line() == 9);
    CHECK(std::string(e.what()).find("\n  body = \"y = a * z + 1.0\"\n") != std::string::npos);
  }
}

TEST_CASE("api: config_knobs, runtimes and the cache as data") {
  std::vector<kiln::ConfigKnob> knobs = kiln::config_knobs();
  bool tile = false;
  for (const kiln::ConfigKnob& k : knobs)
    if (k.name == "TILE") {
      tile = true;
      CHECK(k.default_value == "32");
      CHECK(k.stage == "scheduler");
      CHECK(k.in_cache_key);
    }
  CHECK(tile);
  bool cc = false;
  for (const kiln::RuntimeInfo& r : kiln::runtimes())
    if (r.name == "cc") {
      cc = true;
      CHECK(r.backend == "c");
      CHECK(r.usable);
    }
  CHECK(cc);

  std::string dir = (std::filesystem::temp_directory_path() /
                     ("kiln-api-info-cache-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  kiln::Spec spec = kiln::Spec::from_string(kScale, "inline.toml");
  kiln::CompileSettings settings;
  settings.cache_dir = dir;
  kiln::compile(spec, "scale", "cc", settings);
  kiln::CacheInfo info = kiln::cache_info(dir);
  CHECK(info.dir == dir);
  CHECK(info.entries == 1);
  CHECK(info.bytes > 0);
  CHECK(kiln::clear_cache(dir) == 1);
  CHECK(kiln::cache_info(dir).entries == 0);
  std::filesystem::remove_all(dir);
}
