/** \file
 * The compiled-composite cache: one file per key under `$KILN_CACHE`, else
 * `$XDG_CACHE_HOME/kiln`, else `~/.cache/kiln`. An entry is a header (magic, format version,
 * payload length, and a SHA-256 over the key, the header and the payload) followed by the
 * payload, so an entry copied to another key's file is as corrupt as a flipped byte. Writes go
 * to a unique temporary file in the same folder and are renamed, so concurrent writers of one
 * key are safe. A corrupt or truncated entry, or one of another format version, is deleted with
 * a warning and reported as a miss; so is an entry the runtime cannot load (Cache::drop). A
 * folder that cannot be created or written disables the cache, with one warning per process.
 * `KILN_CACHE=off` turns the cache off: every compile is a miss and nothing is stored.
 * Each entry may carry a label beside it (`KEY.label`: what was compiled, for `kiln cache ls`).
 * The folder holds at most `$KILN_CACHE_MAX` bytes (default 2 GiB, suffixes K, M, G): a put
 * that goes past it deletes the least recently used entries (a hit counts as a use).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/** An incremental SHA-256 over length-prefixed fields, so ("ab","c") != ("a","bc"). */
class CacheKey {
 public:
  /** Adds one field to the key. */
  CacheKey& add(std::string_view field);
  /** The key as 64 lowercase hex digits. */
  std::string hex() const;

 private:
  std::string material_;
};

/** The SHA-256 of `size` bytes, as 64 lowercase hex digits. */
std::string sha256_hex(const void* data, size_t size);

/** One entry of `kiln cache ls`. */
struct CacheEntryInfo {
  std::string key;
  std::string label;    /**< what was compiled, when the entry was stored with a label */
  uint64_t bytes = 0;   /**< size of the entry file */
  int64_t mtime = 0;    /**< seconds since the epoch */
  int64_t mtime_ns = 0; /**< the same in nanoseconds: the order of use */
};

/** Totals for `kiln cache stats`. */
struct CacheStats {
  size_t entries = 0;
  uint64_t bytes = 0;
};

/** A cache folder. Methods never throw on I/O trouble; they report through `warning`. */
class Cache {
 public:
  /** Opens `dir` (created if missing); empty means default_dir(). A warning about an unusable
   *  folder is stored once per process and handed out by the next get/put. */
  explicit Cache(std::string dir = "");

  /** The folder chosen from $KILN_CACHE, $XDG_CACHE_HOME or $HOME; empty when off(). */
  static std::string default_dir();
  /** Whether $KILN_CACHE is `off`: no cache, and no warning about it. */
  static bool off();

  /** False when the folder is unusable and caching is off. */
  bool enabled() const { return enabled_; }
  const std::string& dir() const { return dir_; }

  /** The payload stored under `key`, or nothing. A bad entry is deleted and `*warning` set. */
  std::optional<std::vector<uint8_t>> get(const std::string& key, std::string* warning);
  /** Deletes the entry of `key`, which is bad for reason `why`; returns the warning to show
   *  ("dropped cache entry PATH: WHY; recompiling"), or empty when the cache is off. */
  std::string drop(const std::string& key, const std::string& why);
  /** The file that holds the entry of `key`. */
  std::string entry_path(const std::string& key) const;
  /** Stores a payload atomically, with `label` beside it when not empty, then evicts the least
   *  recently used entries past max_bytes(). Returns false (and maybe sets `*warning`) on
   *  failure. */
  bool put(const std::string& key, const void* data, size_t size, std::string* warning,
           const std::string& label = "");
  /** $KILN_CACHE_MAX in bytes (a number with an optional K, M or G), else 2 GiB. */
  static uint64_t max_bytes();

  /** All entries, the most recently used first. */
  std::vector<CacheEntryInfo> ls() const;
  CacheStats stats() const;
  /** Deletes all entries (and leftover temporary files); returns how many entries. */
  size_t clear();

 private:
  void disable(const std::string& why);
  std::string take_warning();

  std::string dir_;
  bool enabled_ = true;
  std::string pending_warning_;
};

}  // namespace kiln
