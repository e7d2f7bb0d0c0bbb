#include "runtimes/runtime.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "ir/data_dirs.h"
#include "kiln/plugin_api.h"

#ifndef KILN_PLUGIN_BUILD_DIR
#define KILN_PLUGIN_BUILD_DIR ""
#endif

namespace kiln {

namespace {

/** The settings each plugin library last took (kiln_plugin::configure), by its dlopen handle:
 *  every Runtime on one library (one runtime compiled twice, two descriptors naming the same
 *  plugin) shares the plugin's state, so what it has seen is the library's to remember, not a
 *  Runtime's. */
std::mutex applied_mutex;
std::map<void*, RuntimeConfig> applied_configs;

/** The lock of each plugin library whose descriptor does not declare concurrent_compile: its
 *  compile is entered by one thread at a time, whichever Runtime calls it. */
std::mutex compile_locks_mutex;
std::map<void*, std::mutex> compile_locks;

std::unique_lock<std::mutex> serialize_compile(void* library, bool concurrent) {
  if (concurrent) return {};
  std::mutex* lock = nullptr;
  {
    std::lock_guard<std::mutex> hold(compile_locks_mutex);
    lock = &compile_locks[library];  // a map's elements stay where they are
  }
  return std::unique_lock<std::mutex>(*lock);
}

}  // namespace

/** A dlopened plugin library and its function table. */
struct LoadedPlugin {
  void* library = nullptr;
  const kiln_plugin* table = nullptr;
  std::string path;
  ~LoadedPlugin() {
    if (!library) return;
    {
      std::lock_guard<std::mutex> lock(applied_mutex);
      applied_configs.erase(library);  // configure again next time, whatever remains loaded
    }
    dlclose(library);
  }
};

namespace {

namespace fs = std::filesystem;

/** Turns a plugin error into an exception, releasing the plugin's string; the message names the
 *  runtime by its descriptor's name (several descriptors may share one plugin). */
[[noreturn]] void fail(const kiln_plugin& p, const std::string& runtime, const std::string& what,
                       char* error) {
  std::string msg = runtime + " runtime: " + what;
  if (error) {
    msg += ": " + std::string(error);
    p.free_string(error);
  }
  throw std::runtime_error(msg);
}

std::string text_of(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  std::ostringstream out;
  node.visit([&](const auto& value) { out << value; });
  return out.str();
}

/** Splits a colon-separated search path, dropping empty entries. */
std::vector<std::string> split_path(const char* value) {
  std::vector<std::string> dirs;
  std::stringstream ss(value ? value : "");
  for (std::string d; std::getline(ss, d, ':');)
    if (!d.empty()) dirs.push_back(d);
  return dirs;
}

/** The folders searched for descriptors, first match wins: `SEARCH_DIR/runtimes` alone when
 *  given; else each folder of `$KILN_RUNTIME_PATH`, then the shipped descriptors where
 *  ir/data_dirs.h finds them (which may be missing when KILN_RUNTIME_PATH names a folder). */
std::vector<std::string> descriptor_dirs(const std::string& search_dir) {
  if (!search_dir.empty()) return {(fs::path(search_dir) / "runtimes").lexically_normal().string()};
  std::vector<std::string> dirs;
  for (const std::string& d : split_path(std::getenv("KILN_RUNTIME_PATH")))
    dirs.push_back(fs::path(d).lexically_normal().string());
  try {
    dirs.push_back(data_dir(DataDir::runtimes));
  } catch (const DataDirError&) {
    if (dirs.empty()) throw;
  }
  return dirs;
}

std::string descriptor_path(const std::string& name_or_path, const std::string& search_dir) {
  const std::string& arg = name_or_path;
  if (arg.ends_with(".toml")) {
    if (!fs::is_regular_file(arg))
      throw UnknownRuntime("no runtime descriptor " + arg + ": no such file",
                           Runtime::known(search_dir), false);
    return arg;
  }
  bool is_name = !arg.empty() && arg.find('/') == std::string::npos;
  std::vector<std::string> dirs = descriptor_dirs(search_dir);
  if (is_name)
    for (const std::string& dir : dirs)
      if (std::string path = dir + "/" + arg + ".toml"; fs::is_regular_file(path)) return path;
  std::error_code ec;
  if (!is_name || fs::exists(arg, ec))
    throw UnknownRuntime("'" + arg + "' is not a runtime descriptor", Runtime::known(search_dir),
                         true);
  throw UnknownRuntime(
      "no runtime '" + arg + "': no descriptor " + arg + ".toml in " + join_names(dirs),
      Runtime::known(search_dir), false);
}

/** "an integer", "a string": a TOML value's type for a message. */
std::string a_type(toml::node_type type) {
  std::ostringstream name;
  name << type;
  std::string s = name.str();
  return (std::string("aeiou").find(s[0]) != std::string::npos ? "an " : "a ") + s;
}

/** `path:line:col`, or `path` alone where toml++ knows no position. */
std::string located(const std::string& path, const toml::source_region& where) {
  if (where.begin.line == 0) return path;
  return path + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column);
}

/** Folders searched for plugin libraries, first match wins. */
std::vector<std::string> plugin_dirs(const std::string& descriptor_dir) {
  std::vector<std::string> dirs;
  for (const std::string& d : split_path(std::getenv("KILN_PLUGIN_PATH")))
    dirs.push_back(d);
  if (std::string exe = executable_dir(); !exe.empty()) {
    fs::path bin = exe;
    dirs.push_back(bin.string());
    dirs.push_back((bin / "runtimes").string());
    dirs.push_back((bin.parent_path() / "runtimes").string());
    dirs.push_back((bin / plugins_from_executable()).string());
    dirs.push_back((bin.parent_path() / "lib" / "kiln").string());  // tools/gpu/bundle.sh's
  }
  if (std::string lib = library_dir(); !lib.empty())
    dirs.push_back((fs::path(lib) / plugins_from_library()).string());
  if (*KILN_PLUGIN_BUILD_DIR && running_in_build_tree()) dirs.push_back(KILN_PLUGIN_BUILD_DIR);
  dirs.push_back(descriptor_dir);
  // Each folder once, in the first place it comes (the build folder can be two of them).
  std::vector<std::string> unique;
  for (const std::string& d : dirs) {
    std::string normal = fs::path(d).lexically_normal().string();
    if (std::find(unique.begin(), unique.end(), normal) == unique.end()) unique.push_back(normal);
  }
  return unique;
}

std::shared_ptr<LoadedPlugin> load_plugin(const RuntimeDescriptor& desc) {
  fs::path descriptor_dir = fs::path(desc.path).parent_path();
  bool is_path = desc.plugin.find('/') != std::string::npos;
  // A name as CMake names the target ("kiln_runtime_cc") becomes its library's file name; a
  // file name ("libkiln_runtime_cc.so", "mine.so.1") is searched as written, and a name given
  // with its "lib" ("libmine") takes only the ".so".
  const std::string& name = desc.plugin;
  const bool file_name = name.ends_with(".so") || name.find(".so.") != std::string::npos;
  std::string file = is_path || file_name      ? name
                     : name.starts_with("lib") ? name + ".so"
                                               : "lib" + name + ".so";
  std::vector<std::string> dirs = plugin_dirs(descriptor_dir.string());
  std::string path;
  if (is_path) {
    path = fs::path(file).is_absolute() ? file : (descriptor_dir / file).string();
  } else {
    for (const std::string& d : dirs)
      if (fs::exists(d + "/" + file)) {
        path = d + "/" + file;
        break;
      }
  }
  if (path.empty()) {
    std::string where;
    for (const std::string& d : dirs)
      where += "\n  " + d;
    throw std::runtime_error("runtime '" + desc.name + "': plugin " + file +
                             " not found; searched (set KILN_PLUGIN_PATH to add folders):" + where);
  }
  auto plugin = std::make_shared<LoadedPlugin>();
  plugin->path = path;
  // A plugin stays in the process once loaded (RTLD_NODELETE): its static state may hold what
  // must not be torn down and set up again, such as the openmp plugin's hold on libomp, which
  // it loads for good (a second omp_pause_hard at a second unload made the next launch crash
  // in libomp); its destructors run at exit.
  plugin->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!plugin->library)
    throw std::runtime_error("runtime '" + desc.name + "': cannot load plugin " + path + ": " +
                             dlerror());
  auto entry = reinterpret_cast<kiln_plugin_entry_fn>(dlsym(plugin->library, KILN_PLUGIN_ENTRY));
  if (!entry)
    throw std::runtime_error("runtime '" + desc.name + "': " + path + " is not a Kiln plugin (no " +
                             KILN_PLUGIN_ENTRY + ")");
  plugin->table = entry();
  if (!plugin->table)
    throw std::runtime_error("runtime '" + desc.name + "': plugin " + path + " returned no table");
  // abi_version is the first field in every ABI, so it can be read before the rest is trusted.
  if (plugin->table->abi_version != KILN_PLUGIN_ABI_VERSION)
    throw std::runtime_error("runtime '" + desc.name + "': plugin " + path +
                             " was built for plugin ABI " +
                             std::to_string(plugin->table->abi_version) + "; this Kiln needs ABI " +
                             std::to_string(KILN_PLUGIN_ABI_VERSION) + " (rebuild the plugin)");
  return plugin;
}

/** Flags as the plugin ABI wants them: NUL-separated, ending with an empty string. */
std::string pack_flags(const std::vector<std::string>& flags) {
  std::string packed;
  for (const std::string& f : flags)
    packed += f + '\0';
  packed += '\0';
  return packed;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

RuntimeDescriptor RuntimeDescriptor::parse_file(const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(located(path, e.source()) + ": " + std::string(e.description()));
  }
  auto wrong_type = [&](const toml::node& node, const std::string& what) {
    return std::runtime_error(located(path, node.source()) + ": " + what + ", got " +
                              a_type(node.type()));
  };
  RuntimeDescriptor d;
  d.path = path;
  auto require = [&](const char* key) {
    const toml::node* node = t.get(key);
    if (!node) throw std::runtime_error(path + ": missing key '" + key + "' (a string)");
    if (!node->is_string()) throw wrong_type(*node, "'" + std::string(key) + "' must be a string");
    return text_of(*node);
  };
  d.name = require("name");
  d.backend = require("backend");
  d.plugin = require("plugin");
  if (const toml::node* flags = t.get("flags")) {
    if (!flags->is_array()) throw wrong_type(*flags, "'flags' must be an array of strings");
    for (const toml::node& f : *flags->as_array()) {
      if (!f.is_string()) throw wrong_type(f, "'flags' must hold strings");
      d.flags.push_back(text_of(f));
    }
  }
  if (const toml::node* config = t.get("config")) {
    if (!config->is_table()) throw wrong_type(*config, "'config' must be a table");
    for (const auto& [key, value] : *config->as_table())
      d.config[std::string(key.str())] = text_of(value);
  }
  if (const toml::node* concurrent = t.get("concurrent_compile")) {
    if (!concurrent->is_boolean())
      throw wrong_type(*concurrent, "'concurrent_compile' must be true or false");
    d.concurrent_compile = concurrent->as_boolean()->get();
  }
  return d;
}

UnknownRuntime::UnknownRuntime(const std::string& problem, std::vector<std::string> known,
                               bool not_a_descriptor)
    : std::runtime_error(
          problem + (not_a_descriptor ? "; a runtime is a name or a descriptor .toml file" : "") +
          "; known runtimes: " + join_names(known)),
      problem_(problem),
      known_(std::move(known)),
      not_a_descriptor_(not_a_descriptor) {}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

CompiledModule::CompiledModule(std::shared_ptr<LoadedPlugin> plugin, void* handle)
    : plugin_(std::move(plugin)), handle_(handle) {}

CompiledModule::CompiledModule(CompiledModule&& other) noexcept
    : plugin_(std::move(other.plugin_)), handle_(std::exchange(other.handle_, nullptr)) {}

CompiledModule& CompiledModule::operator=(CompiledModule&& other) noexcept {
  if (this != &other) {
    if (handle_) plugin_->table->unload(handle_);
    plugin_ = std::move(other.plugin_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

CompiledModule::~CompiledModule() {
  if (handle_) plugin_->table->unload(handle_);
}

void* CompiledModule::lookup(const std::string& symbol) const {
  return handle_ ? plugin_->table->lookup(handle_, symbol.c_str()) : nullptr;
}

Runtime::Runtime(RuntimeDescriptor desc, std::shared_ptr<LoadedPlugin> plugin)
    : desc_(std::move(desc)), plugin_(std::move(plugin)) {}

std::unique_ptr<Runtime> Runtime::open(const std::string& name_or_path,
                                       const std::string& search_dir) {
  RuntimeDescriptor desc = RuntimeDescriptor::parse_file(descriptor_path(name_or_path, search_dir));
  std::shared_ptr<LoadedPlugin> plugin = load_plugin(desc);
  std::unique_ptr<Runtime> rt(new Runtime(std::move(desc), std::move(plugin)));
  rt->configure(RuntimeConfig());
  return rt;
}

std::vector<std::string> Runtime::known(const std::string& search_dir) {
  std::vector<std::string> names;
  for (const auto& [name, path] : descriptors(search_dir))
    names.push_back(name);
  return names;
}

std::map<std::string, std::string> Runtime::descriptors(const std::string& search_dir) {
  std::map<std::string, std::string> found;
  for (const std::string& dir : descriptor_dirs(search_dir)) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".toml")
        found.emplace(e.path().stem().string(), e.path().string());  // the first folder wins
  }
  return found;
}

const kiln_plugin& Runtime::table() const {
  return *plugin_->table;
}
std::vector<std::string> Runtime::descriptor_folders(const std::string& search_dir) {
  return descriptor_dirs(search_dir);
}
const std::string& Runtime::plugin_path() const {
  return plugin_->path;
}
std::string Runtime::plugin_version() const {
  return table().version;
}
std::string Runtime::compiler_version() const {
  return table().compiler_version();
}
std::string Runtime::target() const {
  return table().target();
}
std::string Runtime::describe_device() const {
  return table().describe_device();
}

void Runtime::use_cache_dir(const std::string& dir) {
  cache_ = std::make_unique<Cache>(dir);
}

Cache& Runtime::cache() {
  if (!cache_) cache_ = std::make_unique<Cache>();
  return *cache_;
}

std::string Runtime::cache_key(const std::string& source,
                               const std::vector<std::string>& flags) const {
  CacheKey key;
  key.add(source).add(desc_.name).add(table().name).add(plugin_version());
  // The descriptor's [config] values are --config defaults: the driver merges them into the
  // options, whose effect on the code `source` (the program identity) already carries.
  key.add(compiler_version()).add(pack_flags(flags));
  key.add(target()).add(kKilnVersion);
  return key.hex();
}

CompiledModule Runtime::compile(const std::string& source,
                                const std::vector<std::string>& extra_flags, CompileInfo* info,
                                const std::vector<std::string>& symbols) {
  return compile_identified(
      source, [&] { return source; }, extra_flags, info, symbols);
}

std::vector<uint8_t> Runtime::build_artifact(const std::string& identity,
                                             const std::function<std::string()>& make_source,
                                             const std::vector<std::string>& extra_flags,
                                             CompileInfo* info, const std::string& label) {
  CompileInfo local;
  CompileInfo& out = info ? *info : local;
  out = CompileInfo();
  return artifact(identity, make_source, extra_flags, true, out, label);
}

std::vector<uint8_t> Runtime::artifact(const std::string& identity,
                                       const std::function<std::string()>& make_source,
                                       const std::vector<std::string>& extra_flags, bool read_cache,
                                       CompileInfo& out, const std::string& label) {
  std::vector<std::string> flags = desc_.flags;
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  out.key = cache_key(identity, flags);
  auto note = [&](const std::string& w) {
    if (!w.empty()) out.warnings.push_back(w);
  };

  auto start = std::chrono::steady_clock::now();
  out.compile_start = start;
  std::string warning;
  std::optional<std::vector<uint8_t>> artifact;
  if (read_cache) {
    artifact = cache().get(out.key, &warning);
    note(warning);
  }
  out.cache_hit = artifact.has_value();
  if (!artifact) {
    // The compiler gets ready on a second core while make_source schedules and renders.
    prepare(extra_flags);
    std::string source = make_source();
    std::string packed = pack_flags(flags);
    kiln_blob blob{nullptr, 0};
    char* error = nullptr;
    std::unique_lock<std::mutex> one_at_a_time =
        serialize_compile(plugin_->library, desc_.concurrent_compile);
    int failed = table().compile(source.c_str(), packed.c_str(), &blob, &error);
    if (one_at_a_time.owns_lock()) one_at_a_time.unlock();
    if (failed != 0) {
      // The source stays where the user can read the compiler's message against it.
      std::string why = error ? error : "";
      if (error) table().free_string(error);
      while (!why.empty() && why.back() == '\n')
        why.pop_back();
      fs::path kept = fs::temp_directory_path() / ("kiln-failed-" + out.key.substr(0, 16) +
                                                   (desc_.backend == "cuda"     ? ".cu"
                                                    : desc_.backend == "opencl" ? ".cl"
                                                                                : ".c"));
      std::ofstream file(kept, std::ios::binary);
      file << source;
      if (file.flush())
        why += (why.empty() ? "" : "\n") + ("the source is kept in " + kept.string());
      throw std::runtime_error(desc_.name + " runtime: compile failed: " + why);
    }
    const auto* bytes = static_cast<const uint8_t*>(blob.data);
    artifact.emplace(bytes, bytes + blob.size);
    table().free_blob(&blob);
    cache().put(out.key, artifact->data(), artifact->size(), &warning, label);
    note(warning);
  }
  out.compile_ms = ms_since(start);
  return std::move(*artifact);
}

void Runtime::prepare(const std::vector<std::string>& extra_flags) {
  if (!table().prepare) return;
  std::vector<std::string> flags = desc_.flags;
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  std::string packed = pack_flags(flags);
  if (prepared_ && packed == prepare_flags_) return;  // what it made waits for the next load
  if (preparing_.joinable()) preparing_.join();
  prepare_flags_ = std::move(packed);
  preparing_ = std::jthread(table().prepare, prepare_flags_.c_str());
  prepared_ = true;
}

CompiledModule Runtime::compile_identified(const std::string& identity,
                                           const std::function<std::string()>& make_source,
                                           const std::vector<std::string>& extra_flags,
                                           CompileInfo* info,
                                           const std::vector<std::string>& symbols,
                                           const std::string& label) {
  CompileInfo local;
  CompileInfo& out = info ? *info : local;
  out = CompileInfo();
  std::vector<uint8_t> bytes = artifact(identity, make_source, extra_flags, true, out, label);
  auto start = std::chrono::steady_clock::now();
  std::string why;
  std::optional<CompiledModule> module = load_checked(bytes, symbols, &why);
  if (!module && out.cache_hit) {
    // A cache entry that passed its hash but does not load (a stale or planted payload): drop
    // it, say so once, and compile afresh, so one bad entry cannot fail every later run.
    if (std::string w = cache().drop(out.key, why); !w.empty()) out.warnings.push_back(w);
    double failed_ms = out.compile_ms + ms_since(start);
    auto first_start = out.compile_start;
    bytes = artifact(identity, make_source, extra_flags, false, out, label);
    out.compile_ms += failed_ms;
    out.compile_start = first_start;
    start = std::chrono::steady_clock::now();
    module = load_checked(bytes, symbols, &why);
  }
  if (!module) throw std::runtime_error(desc_.name + " runtime: " + why);
  out.load_start = start;
  out.load_ms = ms_since(start);
  return std::move(*module);
}

std::optional<CompiledModule> Runtime::load_checked(const std::vector<uint8_t>& bytes,
                                                    const std::vector<std::string>& symbols,
                                                    std::string* why) {
  char* error = nullptr;
  void* handle = table().load(bytes.data(), bytes.size(), &error);
  if (!handle) {
    *why = "load failed";
    if (error) {
      *why += ": " + std::string(error);
      table().free_string(error);
    }
    return std::nullopt;
  }
  prepared_ = false;  // the load took what prepare made
  CompiledModule module(plugin_, handle);
  for (const std::string& s : symbols)
    if (!module.lookup(s)) {
      *why = "compiled module has no kernel '" + s + "'";
      return std::nullopt;
    }
  return module;
}

void* Runtime::lookup(const CompiledModule& module, const std::string& symbol) const {
  return module.lookup(symbol);
}

namespace {
using CopyDevice = int (*)(void*, const void*, size_t, char**);
}  // namespace

bool Runtime::can_copy_device() const {
  return dlsym(plugin_->library, KILN_PLUGIN_COPY_DEVICE) != nullptr;
}

void Runtime::copy_device(void* dst, const void* src, size_t bytes) {
  auto fn = reinterpret_cast<CopyDevice>(dlsym(plugin_->library, KILN_PLUGIN_COPY_DEVICE));
  if (!fn) throw std::runtime_error(desc_.name + " runtime has no device copy");
  char* error = nullptr;
  if (fn(dst, src, bytes, &error) != 0) fail(table(), desc_.name, "device copy failed", error);
}

void Runtime::synchronize_stream(void* stream) {
  using SyncStream = int (*)(void*, char**);
  auto fn = reinterpret_cast<SyncStream>(dlsym(plugin_->library, KILN_PLUGIN_SYNC_STREAM));
  if (!fn) return synchronize();
  char* error = nullptr;
  if (fn(stream, &error) != 0) fail(table(), desc_.name, "waiting for a stream failed", error);
}

std::optional<double> Runtime::device_ms() const {
  using DeviceMs = double (*)();
  auto fn = reinterpret_cast<DeviceMs>(dlsym(plugin_->library, KILN_PLUGIN_DEVICE_MS));
  if (!fn) return std::nullopt;
  double ms = fn();
  if (ms < 0) return std::nullopt;
  return ms;
}

int Runtime::device_units() const {
  using DeviceUnits = int (*)();
  auto fn = reinterpret_cast<DeviceUnits>(dlsym(plugin_->library, KILN_PLUGIN_DEVICE_UNITS));
  return fn ? std::max(fn(), 0) : 0;
}

void Runtime::probe() {
  char* error = nullptr;
  void* p = table().alloc(64, &error);
  if (!p) fail(table(), desc_.name, "cannot run kernels", error);
  table().release(p);
}

void* Runtime::alloc(size_t bytes) {
  char* error = nullptr;
  void* p = table().alloc(bytes, &error);
  if (!p) fail(table(), desc_.name, "alloc of " + std::to_string(bytes) + " bytes failed", error);
  return p;
}

void Runtime::free(void* ptr) {
  table().release(ptr);
}

void Runtime::copy_to_device(void* dst, const void* src, size_t bytes) {
  char* error = nullptr;
  if (table().copy_to_device(dst, src, bytes, &error) != 0)
    fail(table(), desc_.name, "copy failed", error);
}

void Runtime::copy_to_host(void* dst, const void* src, size_t bytes) {
  char* error = nullptr;
  if (table().copy_to_host(dst, src, bytes, &error) != 0)
    fail(table(), desc_.name, "copy failed", error);
}

void Runtime::configure(const RuntimeConfig& config) {
  if (config.threads < 0)
    throw std::runtime_error(desc_.name + " runtime: a thread count must be 0 (every core) or " +
                             "more, got " + std::to_string(config.threads));
  std::lock_guard<std::mutex> lock(applied_mutex);
  auto seen = applied_configs.find(plugin_->library);
  if (seen != applied_configs.end() && seen->second == config) {
    config_ = config;
    return;
  }
  if (table().configure) {
    kiln_runtime_config c{};
    c.struct_size = sizeof c;
    c.threads = config.threads;
    char* error = nullptr;
    if (table().configure(&c, &error) != 0) fail(table(), desc_.name, "configure failed", error);
  }
  applied_configs[plugin_->library] = config;
  config_ = config;
}

void Runtime::launch(void* kernel, void* const* buffers, const int64_t* sizes,
                     const LaunchGeometry& geometry, void* stream, uint32_t num_buffers,
                     uint32_t num_sizes, const std::vector<kiln_tensor_map>* tensor_maps) {
  char* error = nullptr;
  if (!kernel) throw std::runtime_error(desc_.name + " runtime: launch of a null kernel");
  kiln_launch l{};
  l.struct_size = sizeof l;
  for (int d = 0; d < 3; ++d) {
    l.grid[d] = geometry.grid[d];
    l.block[d] = geometry.block[d];
  }
  l.shared_bytes = geometry.shared_bytes;
  l.stream = stream;
  l.num_buffers = num_buffers;
  l.num_sizes = num_sizes;
  if (tensor_maps && !tensor_maps->empty()) {
    l.num_tensor_maps = static_cast<uint32_t>(tensor_maps->size());
    l.tensor_maps = tensor_maps->data();
  }
  if (table().launch(kernel, buffers, sizes, &l, &error) != 0)
    fail(table(), desc_.name, "launch failed", error);
}

void Runtime::synchronize() {
  char* error = nullptr;
  if (table().synchronize(&error) != 0) fail(table(), desc_.name, "synchronize failed", error);
}

}  // namespace kiln
