#include "tests/support/runtime_sweep.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "backends/backend.h"
#include "driver/compare.h"
#include "driver/config.h"
#include "driver/executable.h"
#include "driver/instantiate.h"
#include "ir/npy.h"
#include "tests/support/harness.h"

namespace kiln::test {

namespace {

/** Renders `g` for `rt`'s backend and compiles it through the plugin, as `kiln compile --object`
 *  does: a device backend's code is compiled on a machine with no device. Under the sanitizers
 *  only a process's first program is compiled and the rest rendered: the plugin's compiler
 *  (NVRTC) is not instrumented, and the rendering is what they check. */
void compile_through(const Graph& g, Runtime& rt, const CompileOptions& opt) {
  const Backend& backend = backend_for(rt.backend());
  LoweredProgram p = plan_program(g, opt);
  std::string identity = program_identity(p, rt.backend(), opt);
  auto make_source = [&] {
    generate_code(p, backend, opt);
    return p.source;
  };
#if defined(KILN_SANITIZED)
  static bool compiled_one = false;
  if (compiled_one) {
    CHECK(!make_source().empty());
    return;
  }
  compiled_one = true;
#endif
  std::vector<uint8_t> artifact = rt.build_artifact(identity, make_source, {});
  CHECK(!artifact.empty());
}

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

/** How one composite, dtype and batch shape fared over its test table. */
struct Outcome {
  int cases = 0;
  int failed = 0;
  double max_rel = 0;  ///< the largest relative error of any output element
  std::string note;    ///< the last error's message
};

/** The dtype a sweep program binds, or "-" where its composite has no type variable. */
std::string dtype_text(const RunSpec& spec) {
  return spec.dtypes.empty() ? "-" : std::string(dtype_name(spec.dtypes.begin()->second));
}

/** Appends one line for `spec` to the file $KILN_SWEEP_REPORT names (tests/gpu/run.sh makes a
 *  table of it): runtime, composite, dtype, batch rank, cases, failed, max relative error, note. */
void report(const std::string& runtime, const RunSpec& spec, const Outcome& o) {
  const char* path = std::getenv("KILN_SWEEP_REPORT");
  if (!path || !*path) return;
  std::ofstream out(path, std::ios::app);
  const std::string dtype = dtype_text(spec);
  std::string note = o.note.substr(0, o.note.find('\n'));
  out << runtime << "\t" << spec.target << "\t" << dtype << "\t" << spec.batch.size() << "\t"
      << o.cases << "\t" << o.failed << "\t" << o.max_rel << "\t" << note << "\n";
}

/** Where $KILN_SWEEP_SAVE names a folder, writes the inputs of a run that disagreed with the
 *  interpreter there, as `kiln run --input` reads them: FOLDER/COMPOSITE.DTYPE.bBATCH.cCASE/
 *  NAME.npy, with sizes.txt holding the case's sizes as `--test` takes them. */
void save_failing_inputs(const RunSpec& spec, const Run& run, size_t case_index) {
  const char* root = std::getenv("KILN_SWEEP_SAVE");
  if (!root || !*root) return;
  const std::string dtype = dtype_text(spec);
  std::string name = spec.target.substr(spec.target.rfind(':') + 1) + "." + dtype + ".b" +
                     std::to_string(spec.batch.size()) + ".c" + std::to_string(case_index);
  std::filesystem::path dir = std::filesystem::path(root) / name;
  std::filesystem::create_directories(dir);
  for (size_t k = 0; k < run.inputs.size(); ++k)
    write_npy((dir / (run.graph[run.graph.inputs[k]].name + ".npy")).string(), run.inputs[k]);
  std::ofstream sizes(dir / "sizes.txt");
  const char* sep = "";
  for (const auto& [size, value] : run.sizes) {
    sizes << sep << size << "=" << value;
    sep = ",";
  }
  sizes << "\n";
}

}  // namespace

Shard sweep_shard() {
  const char* s = std::getenv("KILN_SWEEP_SHARD");
  Shard out;
  if (!s || !*s) return out;
  std::string v = s;
  size_t slash = v.find('/');
  auto whole_number = [](const std::string& t) {  // digits only, no sign or trailing text
    size_t used = 0;
    const int n = std::stoi(t, &used);
    if (used != t.size() || t.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument(t);
    return n;
  };
  try {
    if (slash == std::string::npos) throw std::invalid_argument(v);
    out.index = whole_number(v.substr(0, slash));
    out.count = whole_number(v.substr(slash + 1));
  } catch (const std::exception&) {
    out.count = 0;
  }
  if (out.count < 1 || out.index < 0 || out.index >= out.count)
    throw std::runtime_error("KILN_SWEEP_SHARD='" + v + "': expected I/N with 0 <= I < N");
  return out;
}

bool sweep_takes(const std::string& target) {
  const char* only = std::getenv("KILN_SWEEP_ONLY");
  return !only || !*only || target.find(only) != std::string::npos;
}

std::vector<std::string> spec_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

SweepCount check_runtime(const std::string& runtime_name, const std::vector<std::string>& files,
                         const std::map<std::string, std::string>& config,
                         const std::function<void(CutOptions&)>& cut, bool compile_only) {
  std::unique_ptr<Runtime> rt = Runtime::open(runtime_name);
  std::string cache = fresh_cache_dir(runtime_name);
  rt->use_cache_dir(cache);
  SweepCount count;
  const Shard shard = sweep_shard();
  int program = -1;  // the index of each (composite, dtype, batch) in the sweep, for the shard
  for (const std::string& path : files) {
    Library lib;
    const SpecFile& f = lib.load(path);
    // On a device, the options `kiln run` and `kiln test` compile with: the backend's cuts and
    // build, the target's instructions (warpgroup products and the TMA on sm_90a). On the CPU
    // the descriptor's defaults, the cuts the sweep's own (the Python suite checks every ops/
    // composite through the API's options on clang, openmp and cc; these sweeps under the
    // CLI's options took over 38 minutes here, against 26 in CI: docs/decisions.md).
    CompileOptions copt;
    if (backend_for(rt->backend()).memory() == MemoryKind::device) {
      copt = compile_options(f, config, *rt);
      copt.log = nullptr;
    } else {
      copt = config_options(config, &rt->descriptor());
      copt.cut = CutOptions{};
    }
    if (cut) cut(copt.cut);
    for (const auto& c : f.composites) {
      const TypeVar* tv = c->types.empty() ? nullptr : &c->types[0];
      bool batched = false;
      for (const Param& p : c->inputs)
        batched |= p.type.batch;
      std::vector<std::vector<int64_t>> batches = c->test.batches;
      if (batches.empty() || !batched) batches = {{}};
      for (DType d : dtypes_to_try(tv))
        for (const auto& batch : batches) {
          if (++program % shard.count != shard.index) continue;
          test::RunSpec spec;
          spec.target = path + ":" + c->name;
          if (!sweep_takes(spec.target)) continue;
          if (tv) spec.dtypes[tv->name] = d;
          spec.batch = batch;
          CAPTURE(runtime_name);
          CAPTURE(config.size());
          CAPTURE(spec.target);
          CAPTURE(dtype_name(d));
          CAPTURE(batch.size());
          std::unique_ptr<Executable> exe;
          test::Run first;
          Outcome outcome;
          try {
            spec.sizes = c->test.case_sizes(0);
            spec.interpret = !compile_only;
            first = test::run(spec);
            if (compile_only) {
              compile_through(first.graph, *rt, copt);
              ++count.compiled;
              continue;
            }
            exe = std::make_unique<Executable>(first.graph, *rt, copt);
          } catch (const std::exception& e) {
            FAIL_CHECK(std::string(e.what()));  // a char* prints as its address
            outcome.note = e.what();
            report(runtime_name, spec, outcome);
            continue;
          }
          ++count.compiled;
          for (size_t k = 0; k < c->test.case_count(); ++k) {
            spec.sizes = c->test.case_sizes(k);
            CAPTURE(k);
            ++outcome.cases;
            try {
              test::Run want = test::run(spec);
              std::vector<Tensor> got = exe->run(want.inputs, want.sizes);
              bool ok = true;
              for (size_t o = 0; o < got.size(); ++o) {
                Tolerance tol = tolerance_for(want.outputs[o].dtype, c->test.rtol, c->test.atol,
                                              want.outputs[o]);
                Comparison cmp = compare(got[o], want.outputs[o], tol);
                CHECK_MESSAGE(cmp.ok, "output " << o << " element " << cmp.first_bad << ": got "
                                                << cmp.got << ", interpreter " << cmp.want);
                ok &= cmp.ok;
                outcome.max_rel = std::max(outcome.max_rel, cmp.max_rel);
              }
              outcome.failed += !ok;
              if (!ok) save_failing_inputs(spec, want, k);
            } catch (const std::exception& e) {
              FAIL_CHECK(std::string(e.what()));  // a char* prints as its address
              ++outcome.failed;
              outcome.note = e.what();
            }
            ++count.runs;
          }
          report(runtime_name, spec, outcome);
        }
    }
  }
  std::filesystem::remove_all(cache);
  MESSAGE(runtime_name << ": " << count.compiled << " compiles, " << count.runs << " checked runs");
  return count;
}

}  // namespace kiln::test
