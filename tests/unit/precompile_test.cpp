// Executable::precompile on several threads at once, as `kiln tune --jobs` runs it: every
// candidate compiles into one cache without error, and an Executable made afterwards loads it
// from the cache and computes what the interpreter does. On cc and clang, whose descriptors say
// concurrent_compile.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "driver/compare.h"
#include "driver/config.h"
#include "driver/executable.h"
#include "tests/support/harness.h"

namespace fs = std::filesystem;

TEST_CASE("precompile: threads compile candidates into one cache at once; a later load hits") {
  const fs::path dir = fs::temp_directory_path() / ("kiln-precompile-" + std::to_string(getpid()));
  kiln::test::RunSpec spec;
  spec.target = "ops/nn.toml:matmul";
  spec.sizes = {{"M", 9}, {"N", 7}, {"K", 5}};
  kiln::test::Run run = kiln::test::run(spec);
  const std::vector<std::string> tiles = {"16", "32", "64", "128", "8", "4"};
  auto options = [](const std::string& tile) {
    kiln::CompileOptions opt;
    kiln::find_knob("TILE")->parse(tile, opt);
    return opt;
  };
  for (const char* name : {"cc", "clang"}) {
    CAPTURE(name);
    std::vector<std::string> errors(tiles.size());
    std::vector<std::thread> threads;
    for (size_t k = 0; k < tiles.size(); ++k)
      threads.emplace_back([&, k] {
        try {
          std::unique_ptr<kiln::Runtime> rt = kiln::Runtime::open(name);
          rt->use_cache_dir(dir.string());
          kiln::Graph own = run.graph;
          kiln::Executable::precompile(own, *rt, options(tiles[k]));
        } catch (const std::exception& e) {
          errors[k] = e.what();
        }
      });
    for (std::thread& t : threads)
      t.join();
    for (const std::string& e : errors)
      CHECK(e == "");
    for (const std::string& tile : tiles) {
      CAPTURE(tile);
      std::unique_ptr<kiln::Runtime> rt = kiln::Runtime::open(name);
      rt->use_cache_dir(dir.string());
      kiln::Executable exe(run.graph, *rt, options(tile));
      CHECK(exe.build_info().compile.cache_hit);
      std::vector<kiln::Tensor> got = exe.run(run.inputs, run.sizes);
      const kiln::Tensor& want = run.outputs.at(0);
      CHECK(kiln::compare(got.at(0), want, kiln::tolerance_for(want.dtype, 1e-5, 1e-5, want)).ok);
    }
  }
  fs::remove_all(dir);
}
