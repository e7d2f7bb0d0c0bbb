// Plugin ABI 3: the run-time settings (configure) and the launch geometry reach a plugin, from
// Runtime and from an Executable; the openmp runtime runs a parallel loop on the configured
// threads through the in-process clang JIT and libomp.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "driver/executable.h"
#include "kiln/plugin_api.h"
#include "runtimes/runtime.h"
#include "tests/support/cli.h"
#include "tests/support/harness.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/** What tests/unit/data/recording_plugin.c records (the same layout). */
struct Recorded {
  int configures;
  int threads;
  int launches;
  kiln_launch last;
};

/** The recording plugin, built into `dir`, and a descriptor for it; returns the descriptor. */
fs::path build_recording_plugin(const fs::path& dir, fs::path* library) {
  fs::path source = fs::absolute("tests/unit/data/recording_plugin.c");
  *library = dir / "librecording.so";
  std::string cmd = "cc -shared -fPIC -I" + (fs::current_path() / "include").string() + " -o " +
                    library->string() + " " + source.string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  fs::path descriptor = dir / "recording.toml";
  std::ofstream(descriptor) << "name = \"recording\"\nbackend = \"c\"\nplugin = \""
                            << library->string() << "\"\n";
  return descriptor;
}

/** The record of the loaded recording plugin (RTLD_NOLOAD: the Runtime holds the library). */
const Recorded& recorded(const fs::path& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(handle != nullptr);
  auto fn = reinterpret_cast<const Recorded* (*)()>(dlsym(handle, "kiln_test_recorded"));
  REQUIRE(static_cast<bool>(fn));
  const Recorded* r = fn();
  dlclose(handle);  // drops only this reference
  return *r;
}

/** Each element doubled, the team size in team[0] and the thread that did element i in
 *  owner[i]: no omp.h, the two functions are declared. */
const char* kParallelKernel = R"(#include <stdint.h>
int omp_get_num_threads(void);
int omp_get_thread_num(void);
void k(void* const* buffers, const int64_t* sizes) {
  const float* x = (const float*)buffers[0];
  float* y = (float*)buffers[1];
  int32_t* team = (int32_t*)buffers[2];
  int32_t* owner = (int32_t*)buffers[3];
  #pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < sizes[0]; ++i) {
    y[i] = 2.0f * x[i];
    owner[i] = omp_get_thread_num();
    if (i == 0) team[0] = omp_get_num_threads();
  }
}
)";

/** The cores this process may run on: what libomp's "every core" means. */
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  return CPU_COUNT(&set);
}

}  // namespace

TEST_CASE("the openmp runtime runs a parallel loop on the configured threads") {
  clitest::TempDir cache;
  setenv("KILN_CACHE", cache.path.c_str(), 1);
  std::unique_ptr<Runtime> rt = Runtime::open("openmp");
  CHECK(rt->name() == "openmp");
  CHECK(rt->backend() == "openmp");
  CHECK(rt->describe_device().find("OpenMP") != std::string::npos);
  CompiledModule module = rt->compile(kParallelKernel, {}, nullptr, {"k"});
  void* kernel = rt->lookup(module, "k");
  REQUIRE(kernel != nullptr);
  const int64_t n = 1000;
  for (int threads : {2, 1, 3, 0}) {
    CAPTURE(threads);
    std::vector<float> x(n), y(n, -1.0f);
    std::vector<int32_t> team(1, -1), owner(n, -1);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i) - 3.5f;
    void* buffers[] = {x.data(), y.data(), team.data(), owner.data()};
    int64_t sizes[] = {n};
    rt->configure({threads});
    CHECK(rt->config().threads == threads);
    rt->launch(kernel, buffers, sizes);
    rt->synchronize();
    int want = threads > 0 ? threads : usable_cores();
    CHECK(team[0] == want);
    CHECK(std::set<int32_t>(owner.begin(), owner.end()).size() ==
          static_cast<size_t>(std::min<int64_t>(want, n)));
    for (int64_t i = 0; i < n; ++i)
      if (y[i] != 2.0f * x[i]) FAIL("element " << i << ": " << y[i]);
  }
  // The kernels need no omp.h, but it is found (clang's resource folder) where one includes it.
  CompiledModule with_header =
      rt->compile("#include <omp.h>\nint max_threads(void) { return omp_get_max_threads(); }\n", {},
                  nullptr, {"max_threads"});
  CHECK(reinterpret_cast<int (*)()>(rt->lookup(with_header, "max_threads"))() >= 1);
  unsetenv("KILN_CACHE");
}

TEST_CASE("the openmp runtime loads a cached parallel kernel (no prepare, no compile)") {
  // A cache hit calls only load: the JIT must find libomp without the compile flags.
  clitest::TempDir cache;
  setenv("KILN_CACHE", cache.path.c_str(), 1);
  for (int round = 0; round < 2; ++round) {
    std::unique_ptr<Runtime> rt = Runtime::open("openmp");
    CompileInfo info;
    CompiledModule module = rt->compile(kParallelKernel, {}, &info, {"k"});
    CHECK(info.cache_hit == (round == 1));
    const int64_t n = 64;
    std::vector<float> x(n, 1.0f), y(n);
    std::vector<int32_t> team(1), owner(n);
    void* buffers[] = {x.data(), y.data(), team.data(), owner.data()};
    int64_t sizes[] = {n};
    rt->configure({2});
    rt->launch(rt->lookup(module, "k"), buffers, sizes);
    CHECK(team[0] == 2);
    CHECK(y[n - 1] == 2.0f);
  }
  unsetenv("KILN_CACHE");
}

TEST_CASE("CompileOptions::threads and the launch geometry reach the plugin") {
  clitest::TempDir dir;
  setenv("KILN_CACHE", (dir.path / "cache").c_str(), 1);
  fs::path library;
  fs::path descriptor = build_recording_plugin(dir.path, &library);
  std::unique_ptr<Runtime> rt = Runtime::open(descriptor.string());
  const Recorded& rec = recorded(library);
  CHECK(rec.configures == 1);  // the defaults, when the runtime opened
  CHECK(rec.threads == 0);

  test::RunSpec spec;
  spec.target = "ops/math.toml:add";
  spec.sizes = {{"N", 16}};
  test::Run run = test::run(spec);
  CompileOptions three;
  three.threads = 3;
  Executable exe(run.graph, *rt, three);
  size_t kernels = exe.program().plan.kernels.size();
  const int64_t n = 16;
  REQUIRE(exe.launch_geometry(&n).size() == kernels);
  CHECK(exe.launch_geometry(&n).at(0) == LaunchGeometry{});  // the c backend's: 1x1x1
  CHECK(exe.runtime_config().threads == 3);
  exe.run(run.inputs, run.sizes);
  CHECK(rec.threads == 3);
  CHECK(rec.configures == 2);
  CHECK(rec.launches == static_cast<int>(kernels));
  CHECK(rec.last.struct_size == sizeof(kiln_launch));
  for (int d = 0; d < 3; ++d) {
    CHECK(rec.last.grid[d] == 1);
    CHECK(rec.last.block[d] == 1);
  }
  CHECK(rec.last.shared_bytes == 0);
  CHECK(rec.last.stream == nullptr);
  exe.run(run.inputs, run.sizes);
  CHECK(rec.configures == 2);  // unchanged settings are not handed again

  LaunchGeometry g;
  g.grid = {4, 2, 1};
  g.block = {32, 8, 1};
  g.shared_bytes = 128;
  exe.set_launch_geometry(std::vector<LaunchGeometry>(kernels, g));
  exe.run(run.inputs, run.sizes);
  CHECK(rec.last.grid[0] == 4);
  CHECK(rec.last.grid[1] == 2);
  CHECK(rec.last.block[1] == 8);
  CHECK(rec.last.shared_bytes == 128);
  CHECK_THROWS_AS(exe.set_launch_geometry(std::vector<LaunchGeometry>(kernels + 1)),
                  std::invalid_argument);

  // Another executable on the same runtime with other settings: each run hands its own.
  Executable every_core(run.graph, *rt, CompileOptions{});
  every_core.run(run.inputs, run.sizes);
  CHECK(rec.threads == 0);
  exe.run(run.inputs, run.sizes);
  CHECK(rec.threads == 3);
  CHECK(rec.configures == 4);
  CHECK_THROWS_WITH_AS(rt->configure({-2}), doctest::Contains("thread count"), std::runtime_error);
  // A second runtime on the same plugin library shares the plugin's settings: opening it hands
  // the defaults, so the first runtime's executable hands its own again (what the library last
  // took is remembered per library, not per Runtime).
  {
    std::unique_ptr<Runtime> again = Runtime::open(descriptor.string());
    CHECK(rec.threads == 0);
    exe.run(run.inputs, run.sizes);
    CHECK(rec.threads == 3);
  }

  // The argument counts a GPU plugin packs into the kernel's parameter struct.
  // An executable hands each kernel its buffers, as many entries as the plan's kernels take at
  // most (kernel_params), and every size.
  CHECK(rec.last.num_buffers == kernel_params(exe.program().plan));
  CHECK(rec.last.num_sizes == exe.program().plan.size_vars.size());
  void* buffers[2] = {nullptr, nullptr};
  int64_t sizes[1] = {16};
  rt->launch(reinterpret_cast<void*>(&sizes), buffers, sizes, g, nullptr, 2, 1);
  CHECK(rec.last.num_buffers == 2);
  CHECK(rec.last.num_sizes == 1);
  CHECK(rec.last.grid[0] == 4);
  unsetenv("KILN_CACHE");
}
