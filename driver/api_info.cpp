// The public API's questions about the installation (include/kiln/kiln.h): the --config knobs
// (driver/config.h), the runtime descriptors found (what `kiln runtimes` lists) and the
// compiled-code cache (`kiln cache stats` and `clear`).
#include <memory>

#include "driver/config.h"
#include "kiln/kiln.h"
#include "runtimes/cache.h"
#include "runtimes/runtime.h"

namespace kiln {

std::vector<ConfigKnob> config_knobs() {
  std::vector<ConfigKnob> out;
  for (const Knob& k : knobs())
    out.push_back({k.name, knob_stage_name(k.stage), k.default_value, k.help, k.in_cache_key});
  return out;
}

std::vector<RuntimeInfo> runtimes() {
  std::vector<RuntimeInfo> out;
  for (const auto& [name, path] : Runtime::descriptors()) {
    RuntimeInfo info;
    info.name = name;
    info.descriptor = path;
    try {
      std::unique_ptr<Runtime> rt = Runtime::open(path);
      info.backend = rt->backend();
      info.device = rt->describe_device();
      rt->probe();
      info.usable = true;
    } catch (const std::exception& e) {
      info.note = e.what();
    }
    out.push_back(std::move(info));
  }
  return out;
}

CacheInfo cache_info(const std::string& dir) {
  if (dir.empty() && Cache::off()) return {};
  Cache cache(dir);
  CacheStats stats = cache.stats();
  return {cache.dir(), stats.entries, stats.bytes};
}

size_t clear_cache(const std::string& dir) {
  if (dir.empty() && Cache::off()) return 0;
  return Cache(dir).clear();
}

}  // namespace kiln
