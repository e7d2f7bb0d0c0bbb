// Every composite of ops/ compiled by every CPU runtime (clang and openmp in process, cc as a
// subprocess) and checked against the interpreter at each size of its own test table, for f32
// and f64 and, where the composite allows them, f16 and bf16. One compile serves every size: the
// sizes stay symbolic in the generated code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "driver/compare.h"
#include "driver/config.h"
#include "driver/executable.h"
#include "tests/support/harness.h"

using namespace kiln;

namespace {

/** A cache folder of its own, so that every compile in this test is a real one. */
std::string fresh_cache_dir(const std::string& runtime) {
  auto dir = std::filesystem::temp_directory_path() /
             ("kiln-test-cache-" + std::filesystem::path(runtime).stem().string() + "-" +
              std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

std::vector<DType> dtypes_to_try(const TypeVar* tv) {
  if (!tv) return {DType::f32};
  std::vector<DType> out;
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64})
    if (std::find(tv->allowed.begin(), tv->allowed.end(), d) != tv->allowed.end()) out.push_back(d);
  if (out.empty()) out.push_back(tv->allowed.front());
  return out;
}

/** The spec files of `dir`, sorted. */
std::vector<std::string> spec_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

/** Every composite of `files` (default: ops/) under `runtime_name` with `config` (--config
 *  pairs) and the kernel cuts of `cut`, at every size of its test table. */
void check_runtime(const std::string& runtime_name,
                   const std::vector<std::string>& files = spec_files("ops"),
                   const std::map<std::string, std::string>& config = {},
                   const CutOptions& cut = {}) {
  std::unique_ptr<Runtime> rt = Runtime::open(runtime_name);
  std::string cache = fresh_cache_dir(runtime_name);
  rt->use_cache_dir(cache);
  CompileOptions copt = config_options(config, &rt->descriptor());
  copt.cut = cut;
  int compiled = 0, runs = 0;
  for (const std::string& path : files) {
    Library lib;
    const SpecFile& f = lib.load(path);
    for (const auto& c : f.composites) {
      const TypeVar* tv = c->types.empty() ? nullptr : &c->types[0];
      bool batched = false;
      for (const Param& p : c->inputs)
        batched |= p.type.batch;
      std::vector<std::vector<int64_t>> batches = c->test.batches;
      if (batches.empty() || !batched) batches = {{}};
      for (DType d : dtypes_to_try(tv))
        for (const auto& batch : batches) {
          test::RunSpec spec;
          spec.target = path + ":" + c->name;
          if (tv) spec.dtypes[tv->name] = d;
          spec.batch = batch;
          CAPTURE(runtime_name);
          CAPTURE(config.size());
          CAPTURE(spec.target);
          CAPTURE(dtype_name(d));
          CAPTURE(batch.size());
          std::unique_ptr<Executable> exe;
          test::Run first;
          try {
            spec.sizes = c->test.case_sizes(0);
            first = test::run(spec);
            exe = std::make_unique<Executable>(first.graph, *rt, copt);
          } catch (const std::exception& e) {
            FAIL(e.what());
          }
          ++compiled;
          for (size_t k = 0; k < c->test.case_count(); ++k) {
            spec.sizes = c->test.case_sizes(k);
            CAPTURE(k);
            test::Run want = test::run(spec);
            std::vector<Tensor> got = exe->run(want.inputs, want.sizes);
            for (size_t o = 0; o < got.size(); ++o) {
              Tolerance tol =
                  tolerance_for(want.outputs[o].dtype, c->test.rtol, c->test.atol, want.outputs[o]);
              Comparison cmp = compare(got[o], want.outputs[o], tol);
              CHECK_MESSAGE(cmp.ok, "output " << o << " element " << cmp.first_bad << ": got "
                                              << cmp.got << ", interpreter " << cmp.want);
            }
            ++runs;
          }
        }
    }
  }
  std::filesystem::remove_all(cache);
  MESSAGE(runtime_name << ": " << compiled << " compiles, " << runs << " checked runs");
}

}  // namespace

TEST_CASE("runtime ops: every composite under clang matches the interpreter") {
  check_runtime("clang");
}

TEST_CASE("runtime ops: every composite under cc matches the interpreter") {
  check_runtime("cc");
}

TEST_CASE("runtime ops: every composite under openmp matches the interpreter") {
  check_runtime("openmp");
}

TEST_CASE("runtime ops: every composite under clang with CHECK=1 (every access in bounds)") {
#if defined(__SANITIZE_ADDRESS__)
  // The checks are in the generated code, which the sanitizers do not instrument: the normal
  // build's run says all there is to say, and CI's time is better spent elsewhere.
  MESSAGE("skipped under AddressSanitizer");
#else
  check_runtime("clang", spec_files("ops"), {{"CHECK", "1"}});
#endif
}

TEST_CASE("runtime ops: the crash regressions of tests/regressions under every config") {
  for (const char* runtime : {"clang", "cc", "openmp"})
    for (const std::map<std::string, std::string>& config :
         std::vector<std::map<std::string, std::string>>{{}, {{"TILE", "0"}}, {{"CHECK", "1"}}})
      check_runtime(runtime, spec_files("tests/regressions"), config);
}

TEST_CASE("runtime ops: every composite under the runtimes of KILN_TEST_RUNTIMES") {
  // The conformance run for a new runtime (docs/plugins.md): a comma-separated list of runtime
  // names or descriptor paths. Unset, the test has nothing to do.
  const char* list = std::getenv("KILN_TEST_RUNTIMES");
  std::stringstream names(list ? list : "");
  for (std::string name; std::getline(names, name, ',');) {
    if (name.empty()) continue;
    CAPTURE(name);
    check_runtime(name);
  }
}

TEST_CASE("runtime ops: every composite cut into as many kernels as it can be, with CHECK=1") {
  // A budget of 2 statements and a cut after every reduction: nearly every statement its own
  // kernel, every value crossing a cut stored (scheduler/cut_kernels.h), temps sharing slots
  // across kernels, and every access bounds-checked.
  CutOptions cut;
  cut.max_statements = 2;
  cut.cut_after_reductions = true;
  std::vector<std::string> files = spec_files("ops");
  for (const std::string& f : spec_files("tests/regressions"))
    files.push_back(f);
  check_runtime("clang", files, {{"CHECK", "1"}}, cut);
}
