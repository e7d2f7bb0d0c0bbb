/** \file
 * The host side of runtime plugins: reads a descriptor `runtimes/NAME.toml`, dlopens its plugin
 * (refusing another ABI version), and wraps the C table in RAII types that throw
 * std::runtime_error with the plugin's message. Compiles go through the cache (runtimes/cache.h).
 * This library never links LLVM; the clang plugin brings its own, loaded RTLD_LOCAL.
 */
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ir/launch_geometry.h"
#include "kiln/plugin_api.h"
#include "runtimes/cache.h"

struct kiln_plugin;

namespace kiln {

/** Kiln's version, part of every cache key. */
inline constexpr const char* kKilnVersion = "0.1.0";

/** The run-time settings a runtime gets (kiln_runtime_config): they change how a compiled
 *  kernel runs, not what is compiled, so they are in no cache key. */
struct RuntimeConfig {
  int threads = 0; /**< threads a kernel runs on; 0: every core */
  bool operator==(const RuntimeConfig&) const = default;
};

/** A parsed `runtimes/NAME.toml`. */
struct RuntimeDescriptor {
  std::string name;
  std::string backend;                       /**< renderer: "c", "openmp", "cuda" */
  std::string plugin;                        /**< library base name, e.g. kiln_runtime_cc */
  std::vector<std::string> flags;            /**< compiler flags */
  std::map<std::string, std::string> config; /**< `--config` defaults, values as text */
  /** The plugin's compile may run on several threads at once (`concurrent_compile = true`:
   *  clang, openmp, cc); otherwise Kiln lets one thread at a time into it. */
  bool concurrent_compile = false;
  std::string path; /**< the file it came from */

  /** Parses a descriptor file; throws std::runtime_error naming the file on error. */
  static RuntimeDescriptor parse_file(const std::string& path);
};

/** Thrown by Runtime::open when its argument names no descriptor. what() ends with the known
 *  runtimes; a caller with its own wording (the `kiln` command line) builds on problem(). */
class UnknownRuntime : public std::runtime_error {
 public:
  UnknownRuntime(const std::string& problem, std::vector<std::string> known, bool not_a_descriptor);
  /** "no runtime 'foo': no descriptor foo.toml in DIR", without the known runtimes. */
  const std::string& problem() const { return problem_; }
  /** The runtime names that would work (Runtime::known). */
  const std::vector<std::string>& known() const { return known_; }
  /** True when the argument is a path but not to a `.toml` descriptor (a library, a folder). */
  bool not_a_descriptor() const { return not_a_descriptor_; }

 private:
  std::string problem_;
  std::vector<std::string> known_;
  bool not_a_descriptor_;
};

/** "a, b, c", or "none". */
std::string join_names(const std::vector<std::string>& names);

/** What one Runtime::compile did. */
struct CompileInfo {
  bool cache_hit = false;
  double compile_ms = 0; /**< plugin compile, or cache read on a hit */
  double load_ms = 0;
  /** When the compile (or cache read) and the load began (for `kiln run --trace`). */
  std::chrono::steady_clock::time_point compile_start{}, load_start{};
  std::string key;                   /**< cache key, hex */
  std::vector<std::string> warnings; /**< cache trouble worth telling the user */
};

struct LoadedPlugin;

/** A loaded module; unloads on destruction and keeps its plugin loaded while it lives. */
class CompiledModule {
 public:
  CompiledModule(std::shared_ptr<LoadedPlugin> plugin, void* handle);
  CompiledModule(CompiledModule&& other) noexcept;
  CompiledModule& operator=(CompiledModule&& other) noexcept;
  ~CompiledModule();

  /** A kernel's address, or nullptr. */
  void* lookup(const std::string& symbol) const;

 private:
  std::shared_ptr<LoadedPlugin> plugin_;
  void* handle_ = nullptr;
};

/** One runtime: a descriptor, its plugin and a cache. */
class Runtime {
 public:
  /** Opens a runtime by descriptor name (`NAME.toml` in the first of descriptor_folders() that
   *  has it) or by a path ending in `.toml`. Throws
   *  UnknownRuntime when there is no such descriptor, std::runtime_error for a bad one (with
   *  `file:line:col`) or a plugin that does not load. */
  static std::unique_ptr<Runtime> open(const std::string& name_or_path,
                                       const std::string& search_dir = "");
  /** The names of the descriptors in descriptor_folders(), sorted. */
  static std::vector<std::string> known(const std::string& search_dir = "");
  /** Each descriptor name and the file it comes from (the first folder that has it). */
  static std::map<std::string, std::string> descriptors(const std::string& search_dir = "");
  /** The folders descriptors come from, first match wins: `SEARCH_DIR/runtimes` alone when
   *  search_dir is given; else each folder of `$KILN_RUNTIME_PATH` (colon-separated: runtimes
   *  kept outside Kiln, registered by name), then the shipped ones (ir/data_dirs.h). */
  static std::vector<std::string> descriptor_folders(const std::string& search_dir = "");

  const std::string& name() const { return desc_.name; }
  const std::string& backend() const { return desc_.backend; }
  const RuntimeDescriptor& descriptor() const { return desc_; }
  std::string plugin_version() const;
  /** The plugin library's file, as loaded. */
  const std::string& plugin_path() const;
  std::string compiler_version() const;
  std::string target() const;
  std::string describe_device() const;

  /** Uses the cache folder `dir` instead of Cache::default_dir(). */
  void use_cache_dir(const std::string& dir);
  /** The cache, opened at Cache::default_dir() on first use unless use_cache_dir came first. */
  Cache& cache();

  /** The cache key for `source` compiled with the descriptor's flags plus `extra_flags`. */
  std::string cache_key(const std::string& source, const std::vector<std::string>& flags) const;

  /** Starts the plugin's `prepare` for the descriptor's flags plus `extra_flags` on a second
   *  core and returns: the compiler and the loader get ready while the caller plans the
   *  program, so a cache hit loads at once and a miss compiles sooner. A second call before
   *  the next load, with the same flags, does nothing; so does a plugin without `prepare`. */
  void prepare(const std::vector<std::string>& extra_flags = {});

  /** Compiles (or fetches from the cache) and loads the source that `make_source` returns; the
   *  cache key covers `identity` instead of the source, so a hit never makes the source.
   *  `identity` must determine the source completely. The module must define every name in
   *  `symbols`: a cached entry that fails to load or lacks one is dropped (one warning in
   *  `info`) and compiled afresh; a fresh module that fails throws std::runtime_error. A new
   *  entry is stored with `label`, what `kiln cache ls` shows of it (Cache::put). */
  CompiledModule compile_identified(const std::string& identity,
                                    const std::function<std::string()>& make_source,
                                    const std::vector<std::string>& extra_flags,
                                    CompileInfo* info = nullptr,
                                    const std::vector<std::string>& symbols = {},
                                    const std::string& label = "");

  /** The compiled artifact (the cache entry's payload) of the source `make_source` returns:
   *  read from the cache, else compiled by the plugin and stored. Keyed as compile_identified
   *  keys it; `kiln compile --object` writes it out. */
  std::vector<uint8_t> build_artifact(const std::string& identity,
                                      const std::function<std::string()>& make_source,
                                      const std::vector<std::string>& extra_flags,
                                      CompileInfo* info = nullptr, const std::string& label = "");

  /** Compiles (or fetches from the cache) and loads `source`; `symbols` as compile_identified. */
  CompiledModule compile(const std::string& source, const std::vector<std::string>& extra_flags,
                         CompileInfo* info = nullptr, const std::vector<std::string>& symbols = {});
  void* lookup(const CompiledModule& module, const std::string& symbol) const;

  /** Allocates and frees a few bytes of device memory: a runtime whose device is missing (a
   *  GPU runtime on a machine with no GPU) throws std::runtime_error saying so, before any work
   *  is spent on a program it could not run. */
  void probe();
  void* alloc(size_t bytes);
  void free(void* ptr);
  void copy_to_device(void* dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, const void* src, size_t bytes);
  /** Hands `config` to the plugin's `configure` unless its library last took that one (from any
   *  Runtime on it; Runtime::open
   *  hands the defaults). Throws std::runtime_error with the plugin's message. */
  void configure(const RuntimeConfig& config);
  const RuntimeConfig& config() const { return config_; }
  /** Launches `kernel` on `geometry` and `stream` (nullptr: the default one); `num_buffers` and
   *  `num_sizes` count the entries of `buffers` and `sizes` (a GPU plugin packs them), and
   *  `tensor_maps` the maps its TMA copies read (kiln_tensor_map). */
  void launch(void* kernel, void* const* buffers, const int64_t* sizes,
              const LaunchGeometry& geometry = {}, void* stream = nullptr, uint32_t num_buffers = 0,
              uint32_t num_sizes = 0, const std::vector<kiln_tensor_map>* tensor_maps = nullptr);
  void synchronize();
  /** Waits for the work launched on `stream`, a caller's queue given to launch()
   *  (KILN_PLUGIN_SYNC_STREAM; synchronize() where the plugin lacks it). */
  void synchronize_stream(void* stream);
  /** The device time of the launches the last synchronize waited for, in milliseconds, when the
   *  plugin measures it (KILN_PLUGIN_DEVICE_MS); nothing otherwise. */
  std::optional<double> device_ms() const;
  /** The device's multiprocessors (the plugin's optional KILN_PLUGIN_DEVICE_UNITS), 0 where
   *  the plugin does not say. */
  int device_units() const;
  /** Whether the plugin copies within its memory (KILN_PLUGIN_COPY_DEVICE). */
  bool can_copy_device() const;
  /** Copies `bytes` between two buffers from alloc() and waits; throws when the plugin fails or
   *  has no such copy. */
  void copy_device(void* dst, const void* src, size_t bytes);

 private:
  Runtime(RuntimeDescriptor desc, std::shared_ptr<LoadedPlugin> plugin);
  const kiln_plugin& table() const;
  /** build_artifact's work; `read_cache` false skips the lookup (the entry was just dropped). */
  std::vector<uint8_t> artifact(const std::string& identity,
                                const std::function<std::string()>& make_source,
                                const std::vector<std::string>& extra_flags, bool read_cache,
                                CompileInfo& out, const std::string& label = "");
  /** Loads `bytes` and checks `symbols`; nothing, with the reason in `*why`, on failure. */
  std::optional<CompiledModule> load_checked(const std::vector<uint8_t>& bytes,
                                             const std::vector<std::string>& symbols,
                                             std::string* why);

  RuntimeDescriptor desc_;
  std::shared_ptr<LoadedPlugin> plugin_;
  std::string prepare_flags_;  ///< the packed flags preparing_ holds a pointer to
  bool prepared_ = false;      ///< prepare ran, and no load since has taken what it made
  std::jthread preparing_;     ///< declared last: joins before the members it reads go
  std::unique_ptr<Cache> cache_;
  RuntimeConfig config_;  ///< the settings of this Runtime's last configure()
};

}  // namespace kiln
