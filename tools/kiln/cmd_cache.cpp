// `kiln cache ls|stats|clear`: lists, sums up or empties the compiled-composite cache
// ($KILN_CACHE, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; runtimes/cache.h).
#include <algorithm>
#include <ctime>
#include <iostream>

#include "runtimes/cache.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

/** "42s", "5m", "3h", "2d": how long ago `mtime` was. */
std::string format_age(int64_t mtime) {
  int64_t s = std::max<int64_t>(0, static_cast<int64_t>(std::time(nullptr)) - mtime);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

/** The most recently used first: label (or the key where an entry has none), bytes, age, and
 *  the key's first 12 digits. */
void list_entries(const Cache& cache) {
  for (const CacheEntryInfo& e : cache.ls())
    std::cout << (e.label.empty() ? e.key : e.label) << "  " << e.bytes << " bytes, used "
              << format_age(e.mtime) << " ago  [" << e.key.substr(0, 12) << "]\n";
}

void print_stats(const Cache& cache) {
  CacheStats s = cache.stats();
  std::cout << "cache " << cache.dir() << ": " << s.entries
            << (s.entries == 1 ? " entry, " : " entries, ") << s.bytes << " bytes\n";
}

void clear_entries(Cache& cache) {
  size_t n = cache.clear();
  std::cout << "removed " << n << (n == 1 ? " entry" : " entries") << " from " << cache.dir()
            << "\n";
}

}  // namespace

void add_cache_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "cache", "Inspect or empty the compiled-composite cache ($KILN_CACHE or ~/.cache/kiln)");
  cmd->require_subcommand(1);
  auto with_cache = [&exit_code](void (*action)(Cache&)) {
    return [action, &exit_code] {
      if (Cache::off()) throw UsageError("the cache is off (KILN_CACHE=off)");
      Cache cache(Cache::default_dir());
      if (!cache.enabled()) throw UsageError("the cache folder " + cache.dir() + " is unusable");
      action(cache);
      exit_code = Exit::ok;
    };
  };
  cmd->add_subcommand("ls",
                      "List the entries, most recently used first: what was compiled "
                      "(composite, runtime, input types, sizes), size, age, key")
      ->callback(with_cache([](Cache& c) { list_entries(c); }));
  cmd->add_subcommand("stats", "Print the folder, the number of entries and their total size")
      ->callback(with_cache([](Cache& c) { print_stats(c); }));
  cmd->add_subcommand("clear", "Delete every entry")->callback(with_cache(clear_entries));
}

}  // namespace kiln::cli
