#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bad_entries.h"
#include "kiln/plugin_api.h"
#include "runtimes/runtime.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/** y[i] = 2 * x[i] for i < sizes[0], in the plugin calling convention. */
const char* kDoubleKernel = R"(#include <stdint.h>
void k(void* const* buffers, const int64_t* sizes) {
  const float* x = (const float*)buffers[0];
  float* y = (float*)buffers[1];
  for (int64_t i = 0; i < sizes[0]; ++i) y[i] = 2.0f * x[i];
}
)";

/** A fresh empty folder under the system temp folder, removed at scope exit. */
struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "kiln-rt-test-XXXXXX").string();
    path = mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
};

/** Opens a runtime whose cache lives in `cache_dir`. */
std::unique_ptr<Runtime> open_runtime(const std::string& name, const fs::path& cache_dir) {
  setenv("KILN_CACHE", cache_dir.c_str(), 1);
  return Runtime::open(name);
}

/** Compiles `source` (with a tag so each test gets its own key), runs it, checks y = 2x. */
bool compile_and_check(Runtime& rt, const std::string& source, CompileInfo* info) {
  CompiledModule module = rt.compile(source, {}, info, {"k"});
  void* kernel = rt.lookup(module, "k");
  if (!kernel) return false;
  const int64_t n = 1000;
  auto* x = static_cast<float*>(rt.alloc(n * sizeof(float)));
  auto* y = static_cast<float*>(rt.alloc(n * sizeof(float)));
  std::vector<float> host(n), out(n);
  for (int64_t i = 0; i < n; ++i)
    host[i] = static_cast<float>(i) - 3.5f;
  rt.copy_to_device(x, host.data(), n * sizeof(float));
  void* buffers[] = {x, y};
  int64_t sizes[] = {n};
  rt.launch(kernel, buffers, sizes);
  rt.synchronize();
  rt.copy_to_host(out.data(), y, n * sizeof(float));
  rt.free(x);
  rt.free(y);
  for (int64_t i = 0; i < n; ++i)
    if (out[i] != 2.0f * host[i]) return false;
  return true;
}

std::string tagged(const std::string& tag) {
  return "/* " + tag + " */\n" + kDoubleKernel;
}

fs::path entry_path(const fs::path& cache_dir, const std::string& key) {
  return cache_dir / (key + ".kc");
}

/** Runs `body` in a forked child; true when it exited with status 0. */
template <typename F>
bool in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("runtimes compile, load, look up and launch a kernel") {
  for (const char* name : {"cc", "clang"}) {
    CAPTURE(name);
    TempDir cache;
    auto rt = open_runtime(name, cache.path);
    CHECK(rt->name() == name);
    CHECK(rt->backend() == "c");
    CHECK(!rt->compiler_version().empty());
    CHECK(!rt->target().empty());
    CompileInfo info;
    CHECK(compile_and_check(*rt, tagged("launch"), &info));
    CHECK_FALSE(info.cache_hit);
    CHECK(info.key.size() == 64);
    CHECK(info.warnings.empty());
    CompiledModule module = rt->compile(tagged("launch"), {}, nullptr);
    CHECK(rt->lookup(module, "no_such_kernel") == nullptr);
    CHECK_THROWS_WITH_AS(rt->compile("this is not C", {}, nullptr),
                         doctest::Contains("compile failed"), std::runtime_error);
  }
}

TEST_CASE("descriptors are parsed") {
  RuntimeDescriptor d = RuntimeDescriptor::parse_file(Runtime::open("cc")->descriptor().path);
  CHECK(d.name == "cc");
  CHECK(d.backend == "c");
  CHECK(d.plugin == "kiln_runtime_cc");
  CHECK(d.concurrent_compile);  // kiln tune compiles candidates on several threads
  // Issue 10: `threads = 1` was read by no code but entered every cache key twice.
  CHECK(d.config.empty());
  TempDir dir;
  for (const char* config : {"", "[config]\nTILE = 0\n"}) {
    std::ofstream(dir.path / "mine.toml")
        << "name = \"cc\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
        << config;
    RuntimeDescriptor mine = RuntimeDescriptor::parse_file((dir.path / "mine.toml").string());
    CHECK(mine.config.size() == (*config ? 1u : 0u));
    if (*config) CHECK(mine.config.at("TILE") == "0");
  }
}

TEST_CASE("descriptor [config] defaults do not enter the runtime's cache key") {
  // They are --config defaults: the driver merges them into the options, and the program
  // identity (the `source` of cache_key) carries their effect once.
  TempDir dir;
  std::string keys[2];
  for (int k = 0; k < 2; ++k) {
    fs::path path = dir.path / ("cc" + std::to_string(k) + ".toml");
    std::ofstream(path) << "name = \"cc\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
                        << (k ? "[config]\nthreads = 4\n" : "");
    keys[k] = Runtime::open(path.string())->cache_key("source", {"-O2"});
  }
  CHECK(keys[0] == keys[1]);
}

TEST_CASE("an unknown runtime is refused with the available names") {
  CHECK_THROWS_WITH_AS(Runtime::open("no-such-runtime"),
                       doctest::Contains("no runtime 'no-such-runtime': no descriptor "
                                         "no-such-runtime.toml in "),
                       UnknownRuntime);
  CHECK_THROWS_WITH_AS(Runtime::open("no-such-runtime"), doctest::Contains("clang"),
                       std::runtime_error);
}

TEST_CASE("runtime arguments that name no descriptor, and descriptors with bad values") {
  // Issue 9, finding 5.
  TempDir dir;
  const std::string so = (dir.path / "libmine.so").string();
  std::ofstream(so) << "not a descriptor";
  CHECK_THROWS_WITH_AS(Runtime::open(so),
                       doctest::Contains(("'" + so + "' is not a runtime descriptor").c_str()),
                       UnknownRuntime);
  try {
    Runtime::open(so);
  } catch (const UnknownRuntime& e) {
    CHECK(e.not_a_descriptor());
    CHECK(std::string(e.what()).find("//") == std::string::npos);
    CHECK(std::string(e.what()).ends_with("; known runtimes: " + join_names(Runtime::known())));
    CHECK(std::count(e.known().begin(), e.known().end(), "clang") == 1);
  }
  CHECK_THROWS_WITH_AS(Runtime::open((dir.path / "gone.toml").string()),
                       doctest::Contains("gone.toml: no such file"), UnknownRuntime);
  // A search folder given with a trailing slash still makes one path.
  CHECK_THROWS_WITH_AS(
      Runtime::open("foo", fs::current_path().string() + "/"),
      doctest::Contains((" in " + fs::current_path().string() + "/runtimes;").c_str()),
      UnknownRuntime);

  struct Bad {
    const char* text;
    const char* message;  // after "FILE"
  };
  const Bad bad[] = {
      {"name = 5\nbackend = \"c\"\nplugin = \"p\"\n",
       ":1:8: 'name' must be a string, got an integer"},
      {"name = \"x\"\nbackend = [\"c\"]\nplugin = \"p\"\n",
       ":2:11: 'backend' must be a string, got an array"},
      {"name = \"x\"\nbackend = \"c\"\n", ": missing key 'plugin' (a string)"},
      {"name = \"x\"\nbackend = \"c\"\nplugin = \"p\"\nflags = [\"-O2\", 3.5]\n",
       ":4:17: 'flags' must hold strings, got a floating-point"},
      {"name = \"x\"\nbackend = \"c\"\nplugin = \"p\"\nflags = \"-O2\"\n",
       ":4:9: 'flags' must be an array of strings, got a string"},
      {"name = \"x\"\nbackend = \"c\"\nplugin = \"p\"\nconfig = 1\n",
       ":4:10: 'config' must be a table, got an integer"},
      {"name = \"x\"\nbackend = \"c\"\nplugin = \"p\"\nconcurrent_compile = \"yes\"\n",
       ":4:22: 'concurrent_compile' must be true or false, got a string"},
      {"name = \"x\n", ":1:10: "},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.text);
    const std::string path = (dir.path / "bad.toml").string();
    std::ofstream(path) << b.text;
    CHECK_THROWS_WITH_AS(RuntimeDescriptor::parse_file(path),
                         doctest::Contains((path + b.message).c_str()), std::runtime_error);
  }
}

TEST_CASE("a plugin built for another ABI version is refused, naming both versions") {
  TempDir dir;
  fs::path source = fs::absolute("tests/unit/data/bad_abi_plugin.c");
  REQUIRE(fs::exists(source));
  for (int abi : {KILN_PLUGIN_ABI_VERSION - 1, 999}) {
    CAPTURE(abi);
    std::string stem = "bad_abi_" + std::to_string(abi);
    fs::path library = dir.path / ("lib" + stem + ".so");
    std::string cmd = "cc -shared -fPIC -DFAKE_ABI=" + std::to_string(abi) + " -I" +
                      (fs::current_path() / "include").string() + " -o " + library.string() + " " +
                      source.string();
    REQUIRE(std::system(cmd.c_str()) == 0);
    fs::path descriptor = dir.path / (stem + ".toml");
    std::ofstream(descriptor) << "name = \"bad\"\nbackend = \"c\"\nplugin = \"" << library.string()
                              << "\"\n";
    std::string expected = "plugin " + library.string() + " was built for plugin ABI " +
                           std::to_string(abi) + "; this Kiln needs ABI " +
                           std::to_string(KILN_PLUGIN_ABI_VERSION);
    CHECK_THROWS_WITH_AS(Runtime::open(descriptor.string()), doctest::Contains(expected.c_str()),
                         std::runtime_error);
  }
}

TEST_CASE("the cache: miss, then hit without compiling") {
  for (const char* name : {"cc", "clang"}) {
    CAPTURE(name);
    TempDir cache;
    auto rt = open_runtime(name, cache.path);
    CompileInfo first, second;
    CHECK(compile_and_check(*rt, tagged("hit"), &first));
    CHECK(compile_and_check(*rt, tagged("hit"), &second));
    CHECK_FALSE(first.cache_hit);
    CHECK(second.cache_hit);
    CHECK(first.key == second.key);
    CHECK(rt->cache().stats().entries == 1);
    if (std::string(name) == "cc") {
      // With a compiler that always fails, only a cache hit can succeed.
      setenv("CC", "false", 1);
      CompileInfo third;
      CHECK(compile_and_check(*rt, tagged("hit"), &third));
      CHECK(third.cache_hit);
      CHECK_THROWS_WITH_AS(rt->compile(tagged("miss"), {}, nullptr),
                           doctest::Contains("compile failed"), std::runtime_error);
      unsetenv("CC");
    }
    CompileInfo other_flags;
    CHECK(compile_and_check(*rt, tagged("hit"), &other_flags));
    rt->compile(tagged("hit"), {"-DEXTRA=1"}, &other_flags);
    CHECK_FALSE(other_flags.cache_hit);
    CHECK(other_flags.key != first.key);
    CHECK(rt->cache().clear() == 2);
    CHECK(rt->cache().stats().entries == 0);
  }
}

TEST_CASE("the cache drops corrupt and truncated entries and rebuilds them") {
  TempDir cache;
  auto rt = open_runtime("cc", cache.path);
  CompileInfo info;
  REQUIRE(compile_and_check(*rt, tagged("corrupt"), &info));
  fs::path entry = entry_path(cache.path, info.key);
  REQUIRE(fs::exists(entry));
  const auto size = fs::file_size(entry);

  SUBCASE("a flipped byte") {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 10));
    char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(size - 10));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  SUBCASE("a truncated file") {
    fs::resize_file(entry, size / 2);
  }
  SUBCASE("a truncated header") {
    fs::resize_file(entry, 20);
  }

  CompileInfo rebuilt;
  CHECK(compile_and_check(*rt, tagged("corrupt"), &rebuilt));
  CHECK_FALSE(rebuilt.cache_hit);
  REQUIRE(rebuilt.warnings.size() == 1);
  CHECK(rebuilt.warnings[0].find("dropped cache entry " + entry.string()) != std::string::npos);
  CHECK(fs::file_size(entry) == size);
  CompileInfo again;
  CHECK(compile_and_check(*rt, tagged("corrupt"), &again));
  CHECK(again.cache_hit);
  CHECK(again.warnings.empty());
}

TEST_CASE("an unusable cache folder degrades to no caching with one warning") {
  TempDir dir;
  std::ofstream(dir.path / "file") << "not a folder";
  fs::create_directory(dir.path / "readonly");
  fs::permissions(dir.path, fs::perms::all & ~fs::perms::others_write & ~fs::perms::group_write);
  fs::permissions(dir.path / "readonly", fs::perms::all & ~fs::perms::owner_write &
                                             ~fs::perms::group_write & ~fs::perms::others_write);
  const std::vector<fs::path> unusable = {dir.path / "file" / "kiln", dir.path / "readonly"};
  for (const fs::path& bad : unusable) {
    CAPTURE(bad);
    // A child process, so the once-per-process warning is this case's own.
    CHECK(in_child([&] {
      // Root may write anywhere: the child drops to an unprivileged user first.
      if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return false;
      auto rt = open_runtime("cc", bad);
      size_t warnings = 0;
      CompileInfo info;
      for (int k = 0; k < 3; ++k) {
        if (!compile_and_check(*rt, tagged("readonly"), &info) || info.cache_hit) return false;
        warnings += info.warnings.size();
      }
      auto second = open_runtime("cc", bad);
      if (!compile_and_check(*second, tagged("readonly"), &info)) return false;
      warnings += info.warnings.size();
      return warnings == 1 && !rt->cache().enabled();
    }));
  }
}

TEST_CASE("two processes writing one key at once both succeed") {
  TempDir cache;
  int go[2];
  REQUIRE(pipe(go) == 0);
  std::vector<pid_t> children;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char c;
      (void)!read(go[0], &c, 1);
      auto rt = open_runtime("cc", cache.path);
      CompileInfo info;
      _exit(compile_and_check(*rt, tagged("race"), &info) && info.warnings.empty() ? 0 : 1);
    }
    children.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  auto rt = open_runtime("cc", cache.path);
  CHECK(rt->cache().ls().size() == 1);
  CompileInfo info;
  CHECK(compile_and_check(*rt, tagged("race"), &info));
  CHECK(info.cache_hit);
  CHECK(info.warnings.empty());
  size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(cache.path))
    leftovers += e.path().filename().string()[0] == '.';
  CHECK(leftovers == 0);
}

TEST_CASE("the clang runtime vectorises exp2 and log2 through libmvec") {
  // LLVM 19's libmvec table lacks exp2 and log2; runtimes/clang/libmvec_variants adds them, so
  // the object calls a vector variant and the results stay those of the scalar functions.
  const char* source = R"(#include <stdint.h>
void k(void* const* buffers, const int64_t* sizes) {
  const float* x = (const float*)buffers[0];
  float* y = (float*)buffers[1];
  double* z = (double*)buffers[2];
  for (int64_t i = 0; i < sizes[0]; ++i) y[i] = __builtin_exp2f(x[i]);
  for (int64_t i = 0; i < sizes[0]; ++i) z[i] = __builtin_log2((double)x[i] + 40.0);
}
)";
  TempDir cache;
  auto rt = open_runtime("clang", cache.path);
  const std::string& target = rt->target();
  std::string isa = target.find("+avx2") != std::string::npos     ? "d"
                    : target.find("+sse4.1") != std::string::npos ? "b"
                                                                  : "";
  if (isa.empty()) return;  // no libmvec variant for this CPU
  std::vector<uint8_t> object = rt->build_artifact("libmvec", [&] { return source; }, {});
  std::string bytes(object.begin(), object.end());
  CHECK(bytes.find("_ZGV" + isa + "N" + (isa == "d" ? "8" : "4") + "v_exp2f") != std::string::npos);
  // The f64 loop converts from f32, which sets its width: 8 lanes take AVX-512's variant where
  // the target has it (one zmm; the pass widens the caller's legal vectors to pass it so).
  bool log2_variant =
      bytes.find("_ZGV" + isa + "N" + (isa == "d" ? "4" : "2") + "v_log2") != std::string::npos ||
      (target.find("+avx512f") != std::string::npos &&
       bytes.find("_ZGVeN8v_log2") != std::string::npos);
  CHECK(log2_variant);

  CompiledModule module = rt->compile(source, {}, nullptr);
  void* kernel = rt->lookup(module, "k");
  REQUIRE(kernel != nullptr);
  const int64_t n = 1003;  // a vector body and a scalar remainder
  std::vector<float> x(n), y(n);
  std::vector<double> z(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = -30.0f + 0.06f * static_cast<float>(i);
  x[0] = -INFINITY;
  x[1] = NAN;
  x[2] = 200.0f;
  void* buffers[] = {x.data(), y.data(), z.data()};
  int64_t sizes[] = {n};
  rt->launch(kernel, buffers, sizes);
  CHECK(y[0] == 0.0f);
  CHECK(std::isnan(y[1]));
  CHECK(std::isinf(y[2]));
  for (int64_t i = 3; i < n; ++i) {
    CAPTURE(x[i]);
    CHECK(y[i] == doctest::Approx(std::exp2(static_cast<double>(x[i]))).epsilon(4e-7));
    CHECK(z[i] == doctest::Approx(std::log2(static_cast<double>(x[i]) + 40.0)).epsilon(1e-15));
  }
}

namespace {

std::string file_bytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("a cache entry that passes its checks but does not load is dropped and rebuilt") {
  // Issue 9, finding 3: another kernel's object or garbage under a valid header failed every
  // later run until `kiln cache clear`.
  const std::string other =
      "#include <stdint.h>\nvoid other(void* const* b, const int64_t* s) { (void)b; (void)s; }\n";
  for (const char* name : {"cc", "clang"}) {
    CAPTURE(name);
    TempDir cache;
    auto rt = open_runtime(name, cache.path);
    CompileInfo a, b;
    REQUIRE(compile_and_check(*rt, tagged("A"), &a));
    rt->compile(other, {}, &b, {"other"});
    const fs::path entry_a = entry_path(cache.path, a.key), entry_b = entry_path(cache.path, b.key);
    const std::string file_a = file_bytes(entry_a);
    REQUIRE(file_a.size() > 56);
    const std::string payload_a = file_a.substr(56);

    struct Plant {
      const char* what;
      std::function<void()> plant;
      bool on_a;           // the bad entry is A's (else B's)
      const char* reason;  // in the warning
    };
    const Plant plants[] = {
        {"A's payload under a version-1 header over B",
         [&] {
           std::ofstream(entry_b, std::ios::binary) << kiln::test::old_format_entry(payload_a);
         },
         false, "format version 1"},
        {"A's entry file copied over B's",
         [&] { fs::copy_file(entry_a, entry_b, fs::copy_options::overwrite_existing); }, false,
         "another key's entry"},
        {"A's payload stored under B's key",
         [&] { rt->cache().put(b.key, payload_a.data(), payload_a.size(), nullptr); }, false,
         "has no kernel 'other'"},
        {"a truncated artifact of several object files under A's key",
         [&] {
           std::string junk = std::string("KILN-OBJECTS-1\n") + std::string(8, '\2') +
                              "\x7f"
                              "ELF";
           rt->cache().put(a.key, junk.data(), junk.size(), nullptr);
         },
         true, "load failed"},
        {"garbage ELF stored under A's key",
         [&] {
           std::string junk = kiln::test::garbage_elf();
           rt->cache().put(a.key, junk.data(), junk.size(), nullptr);
         },
         true, "load failed"},
    };
    for (const Plant& p : plants) {
      CAPTURE(p.what);
      p.plant();
      const fs::path& entry = p.on_a ? entry_a : entry_b;
      CompileInfo rebuilt, again;
      if (p.on_a)
        CHECK(compile_and_check(*rt, tagged("A"), &rebuilt));
      else
        CHECK(rt->compile(other, {}, &rebuilt, {"other"}).lookup("other") != nullptr);
      CHECK_FALSE(rebuilt.cache_hit);
      REQUIRE(rebuilt.warnings.size() == 1);
      CHECK(rebuilt.warnings[0].find("dropped cache entry " + entry.string() + ": ") !=
            std::string::npos);
      CHECK(rebuilt.warnings[0].find(p.reason) != std::string::npos);
      CHECK(rebuilt.warnings[0].ends_with("; recompiling"));
      if (p.on_a)
        CHECK(compile_and_check(*rt, tagged("A"), &again));
      else
        rt->compile(other, {}, &again, {"other"});
      CHECK(again.cache_hit);
      CHECK(again.warnings.empty());
    }
    CHECK(file_bytes(entry_a) == file_a);
    // A freshly compiled module without an expected kernel is an error, not a retry loop.
    CHECK_THROWS_WITH_AS(rt->compile(tagged("A"), {}, nullptr, {"k", "nope"}),
                         doctest::Contains("has no kernel 'nope'"), std::runtime_error);
  }
}

TEST_CASE("the clang runtime compiles a large program's kernels in parts, on threads") {
  // Four kernels of several thousand instructions each, sharing a static helper and reading one
  // external table: split_compile.h gives each part some kernels, a copy of the helper and a
  // declaration of the table (defined in part 0 alone), and the JIT links the parts' objects.
  std::string source =
      "#include <stdint.h>\n"
      "float kiln_table[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n"
      "static float helper(float v, int j) { return v * 0.5f + (float)j; }\n";
  const int kernels = 4, lines = 1500;
  for (int k = 0; k < kernels; ++k) {
    source += "void k" + std::to_string(k) +
              "(void* const* buffers, const int64_t* sizes) {\n"
              "  float* y = (float*)buffers[0];\n  (void)sizes;\n  volatile float v = 0;\n";
    for (int j = 0; j < lines; ++j)
      source += "  v = helper(v, " + std::to_string((j + k) % 7) + ");\n";
    source += "  y[0] = v * kiln_table[" + std::to_string(k) + "];\n}\n";
  }
  std::vector<std::string> names;
  for (int k = 0; k < kernels; ++k)
    names.push_back("k" + std::to_string(k));
  TempDir cache;
  auto rt = open_runtime("clang", cache.path);
  CompileInfo info;
  CompiledModule module = rt->compile(source, {}, &info, names);
  for (int k = 0; k < kernels; ++k) {
    CAPTURE(k);
    void* kernel = rt->lookup(module, names[k]);
    REQUIRE(kernel != nullptr);
    float y = -1;
    void* buffers[] = {&y};
    int64_t sizes[] = {1};
    rt->launch(kernel, buffers, sizes);
    float want = 0;
    for (int j = 0; j < lines; ++j)
      want = want * 0.5f + static_cast<float>((j + k) % 7);
    CHECK(y == want * static_cast<float>(k + 1));
  }
  // On two cores or more the artifact holds several object files.
  const std::string payload = file_bytes(entry_path(cache.path, info.key)).substr(56);
  if (std::thread::hardware_concurrency() >= 2)
    CHECK(payload.starts_with("KILN-OBJECTS-1\n"));
  else
    CHECK(
        payload.starts_with("\x7f"
                            "ELF"));
}

TEST_CASE("the cache keeps at most KILN_CACHE_MAX bytes, the least recently used out first") {
  TempDir dir;
  ::setenv("KILN_CACHE_MAX", "300", 1);  // three entries of 100 bytes (56 of header)
  Cache cache(dir.path.string());
  const std::vector<uint8_t> payload(44, 7);
  auto key = [](char c) { return std::string(64, c); };
  std::string warning;
  for (char c : {'a', 'b', 'c'})
    REQUIRE(cache.put(key(c), payload.data(), payload.size(), &warning, std::string("entry ") + c));
  // a oldest, then b, then c; then a read: a is the most recently used.
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(cache.entry_path(key('a')), now - std::chrono::seconds(300));
  fs::last_write_time(cache.entry_path(key('b')), now - std::chrono::seconds(200));
  fs::last_write_time(cache.entry_path(key('c')), now - std::chrono::seconds(100));
  REQUIRE(cache.get(key('a'), &warning).has_value());
  REQUIRE(cache.put(key('d'), payload.data(), payload.size(), &warning, "entry d"));
  ::unsetenv("KILN_CACHE_MAX");
  CHECK_FALSE(fs::exists(cache.entry_path(key('b'))));
  CHECK_FALSE(fs::exists(dir.path / (key('b') + ".label")));
  std::vector<CacheEntryInfo> entries = cache.ls();
  REQUIRE(entries.size() == 3);
  CHECK(entries.back().key == key('c'));  // the least recently used last
  for (const CacheEntryInfo& e : entries)
    CHECK(e.label == "entry " + std::string(1, e.key[0]));
  CHECK(Cache::max_bytes() == uint64_t{2} << 30);
  ::setenv("KILN_CACHE_MAX", "64M", 1);
  CHECK(Cache::max_bytes() == uint64_t{64} << 20);
  ::unsetenv("KILN_CACHE_MAX");
  CHECK(cache.clear() == 3);
  CHECK(fs::is_empty(dir.path));
}
