/** \file
 * The tuning database (docs/tuning.md): what `kiln tune` measured fastest, one small text file
 * per key under the cache folder's `tuned/` (runtimes/cache.h picks the folder; KILN_CACHE=off
 * turns the database off too). The key is the lowered graph (dtypes and all), the runtime's name
 * and target, the size bindings and every cache-key knob except the tuned ones, so a later
 * compile of the same composite, runtime and sizes finds the entry before it schedules. A file is
 * written to a temporary name and renamed, like a cache entry; one that does not read back whole
 * (a bad checksum, a knob or value the table refuses) is ignored with a warning.
 */
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver/tune_space.h"
#include "ir/interpreter.h"

namespace kiln {

class Runtime;
struct SpecFile;

/** What one tuning found. */
struct TuneEntry {
  TuneCandidate knobs;    ///< the winner's values of the tuned knobs
  std::string label;      ///< what was tuned, for `kiln tune ls` ("matmul [M=8] on clang")
  double default_ms = 0;  ///< the median of the untuned candidate
  double best_ms = 0;     ///< the winner's median
};

/** The key of graph `g` compiled for runtime `runtime` (name) on `target` (Runtime::target)
 *  with `opt` at `sizes`: 64 hex digits. The tuned knobs (tunable_knobs) stay out of it. */
std::string tune_key(const Graph& g, const std::string& runtime, const std::string& target,
                     const SizeBindings& sizes, const CompileOptions& opt);

/** `sizes` with each size rounded up to the next power of two (0 and 1 stay): the size bucket
 *  an entry is also stored under, so that nearby sizes find tuned knobs. */
SizeBindings size_bucket(const SizeBindings& sizes);

/** The key of the size bucket of `sizes` (size_bucket): tune_key's with the bucket's sizes,
 *  marked so that it never equals an exact key. */
std::string tune_bucket_key(const Graph& g, const std::string& runtime, const std::string& target,
                            const SizeBindings& sizes, const CompileOptions& opt);

/** "K=8,M=8,N=8". */
std::string sizes_text(const SizeBindings& sizes);

/** The text of a database file holding `e` under `key`: "kiln-tune 1", the fields, and a
 *  "sha256 ..." line over them, last. */
std::string entry_text(const std::string& key, const TuneEntry& e);

/** Parses entry_text's format for `key`; nothing, with the reason in `why`, when the text is not
 *  whole: not an entry, a bad checksum, another key, a knob that is not tunable or a value the
 *  knob refuses. */
std::optional<TuneEntry> parse_entry(const std::string& key, const std::string& text,
                                     std::string& why);

/** True for a key as tune_key makes them: 64 lowercase hex digits. */
bool valid_tune_key(const std::string& key);

/** The database in the folder `tuned/` of a cache folder. Methods never throw on I/O trouble. */
class TuneDb {
 public:
  /** `cache_dir` empty: Cache::default_dir(); the database is off when that is off. */
  explicit TuneDb(const std::string& cache_dir = "");
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  /** The entry of `key`, or nothing; a file that is there but bad sets `*warning`. */
  std::optional<TuneEntry> get(const std::string& key, std::string* warning) const;
  /** Stores `e` under `key` atomically; false with `*warning` set when it cannot. */
  bool put(const std::string& key, const TuneEntry& e, std::string* warning) const;
  /** Every readable entry with its key, by label; bad files add to `warnings`. */
  std::vector<std::pair<std::string, TuneEntry>> ls(std::vector<std::string>* warnings) const;
  /** Deletes every entry; returns how many files. */
  size_t clear() const;

 private:
  std::string dir_;
};

/** False under TUNED=0 (CompileOptions::tuned): the database is not consulted. */
bool tuning_wanted(const CompileOptions& opt);

/** The database's knobs for `g` on `rt` at `sizes`, compiled with `opt` (compile_options'
 *  result for the caller's `config`), to add to `config` before compile_options runs again:
 *  the entry of the exact sizes, else that of their size bucket (tune_bucket_key); empty under
 *  TUNED=0 (tuning_wanted) or when there is neither; a knob `config` pins keeps the caller's
 *  value. Under opt.debug >= 1 says what it found on opt.log ("tuned: MICRO=... (from the tuning
 *  database, exact sizes)" or "..., size bucket K=8,M=8,N=8)"); a bad entry is ignored with a
 *  warning on stderr. */
std::map<std::string, std::string> tuned_config(const CompileOptions& opt, const Graph& g,
                                                const Runtime& rt, const SizeBindings& sizes,
                                                const std::map<std::string, std::string>& config,
                                                const std::string& cache_dir = "");

/** compile_options (driver/instantiate.h) for `config` with the database's knobs for `g` on
 *  `rt` at `sizes` added where `config` does not pin them (tuned_config): `adjust` runs on the
 *  options before the lookup (its debug level and log say what is found) and again on the
 *  options compiled with the tuned knobs. What `kiln run`, `bench` and the API compile with. */
CompileOptions tuned_compile_options(const SpecFile& file,
                                     const std::map<std::string, std::string>& config,
                                     const Runtime& rt, const Graph& g, const SizeBindings& sizes,
                                     const std::string& cache_dir = "",
                                     const std::function<void(CompileOptions&)>& adjust = {});

}  // namespace kiln
