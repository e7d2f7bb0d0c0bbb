// The tuning database: its key, its text files, and applying an entry to a compile.
#include "driver/tune_db.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "driver/config.h"
#include "driver/instantiate.h"
#include "ir/graph.h"
#include "runtimes/cache.h"
#include "runtimes/runtime.h"

namespace kiln {

namespace {

constexpr const char* kMagic = "kiln-tune 1";
constexpr const char* kSuffix = ".tune";

bool is_tunable(const std::string& knob) {
  const std::vector<std::string>& t = tunable_knobs();
  return std::find(t.begin(), t.end(), knob) != t.end();
}

/** The cache-key knobs of `opt` without the tuned ones. */
std::string untuned_identity(const CompileOptions& opt) {
  std::string id;
  for (const Knob& k : knobs())
    if (k.in_cache_key && !is_tunable(k.name)) id += std::string(k.name) + "=" + k.show(opt) + "\n";
  return id;
}

/** The entry as text without its checksum line. */
std::string body_text(const std::string& key, const TuneEntry& e) {
  std::ostringstream out;
  out << kMagic << "\nkey " << key << "\nlabel " << e.label << "\ndefault_ms " << e.default_ms
      << "\nbest_ms " << e.best_ms << "\n";
  for (const auto& [k, v] : e.knobs)
    out << "knob " << k << "=" << v << "\n";
  return out.str();
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

bool valid_tune_key(const std::string& key) {
  return key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string entry_text(const std::string& key, const TuneEntry& e) {
  std::string body = body_text(key, e);
  return body + "sha256 " + sha256_hex(body.data(), body.size()) + "\n";
}

std::optional<TuneEntry> parse_entry(const std::string& key, const std::string& text,
                                     std::string& why) {
  size_t last = text.rfind("sha256 ");
  if (text.rfind(kMagic, 0) != 0 || last == std::string::npos) {
    why = "not a tuning entry";
    return std::nullopt;
  }
  std::string body = text.substr(0, last);
  std::string sum = text.substr(last + 7);
  while (!sum.empty() && (sum.back() == '\n' || sum.back() == '\r'))
    sum.pop_back();
  if (sum != sha256_hex(body.data(), body.size())) {
    why = "checksum mismatch";
    return std::nullopt;
  }
  TuneEntry e;
  std::istringstream in(body);
  std::string line, stored_key;
  std::getline(in, line);
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    std::string field = line.substr(0, sp),
                value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (field == "key") stored_key = value;
    if (field == "label") e.label = value;
    if (field == "default_ms") e.default_ms = std::strtod(value.c_str(), nullptr);
    if (field == "best_ms") e.best_ms = std::strtod(value.c_str(), nullptr);
    if (field != "knob") continue;
    size_t eq = value.find('=');
    std::string k = value.substr(0, eq), v = eq == std::string::npos ? "" : value.substr(eq + 1);
    const Knob* knob = find_knob(k);
    if (!knob || !is_tunable(knob->name)) {
      why = "knob '" + k + "' is not tunable";
      return std::nullopt;
    }
    try {
      CompileOptions scratch;
      knob->parse(v, scratch);
    } catch (const ConfigError& err) {
      why = err.what();
      return std::nullopt;
    }
    e.knobs[knob->name] = v;
  }
  if (stored_key != key) {
    why = "stored under another key";
    return std::nullopt;
  }
  return e;
}

bool tuning_wanted(const CompileOptions& opt) {
  return opt.tuned;
}

std::string tune_key(const Graph& g, const std::string& runtime, const std::string& target,
                     const SizeBindings& sizes, const CompileOptions& opt) {
  CacheKey key;
  key.add(kMagic).add(graph_to_text(g)).add(runtime).add(target).add(untuned_identity(opt));
  for (const auto& [name, value] : sizes)
    key.add(name).add(std::to_string(value));
  return key.hex();
}

SizeBindings size_bucket(const SizeBindings& sizes) {
  SizeBindings bucket;
  for (const auto& [name, value] : sizes) {
    int64_t rounded = 1;
    while (rounded < value && rounded < (int64_t{1} << 62))
      rounded *= 2;
    bucket[name] = value <= 1 ? value : rounded;
  }
  return bucket;
}

std::string tune_bucket_key(const Graph& g, const std::string& runtime, const std::string& target,
                            const SizeBindings& sizes, const CompileOptions& opt) {
  SizeBindings bucket = size_bucket(sizes);
  bucket["<size bucket>"] = 1;  // no composite has this size: never an exact key
  return tune_key(g, runtime, target, bucket, opt);
}

std::string sizes_text(const SizeBindings& sizes) {
  std::string t;
  for (const auto& [k, v] : sizes)
    t += (t.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return t;
}

TuneDb::TuneDb(const std::string& cache_dir) {
  std::string root = cache_dir.empty() ? Cache::default_dir() : cache_dir;
  if (!root.empty()) dir_ = root + "/tuned";
}

std::optional<TuneEntry> TuneDb::get(const std::string& key, std::string* warning) const {
  if (!enabled() || !valid_tune_key(key)) return std::nullopt;
  std::string path = dir_ + "/" + key + kSuffix;
  std::optional<std::string> text = read_text(path);
  if (!text) return std::nullopt;
  std::string why;
  std::optional<TuneEntry> e = parse_entry(key, *text, why);
  if (!e && warning) *warning = "ignored tuning entry " + path + ": " + why;
  return e;
}

bool TuneDb::put(const std::string& key, const TuneEntry& e, std::string* warning) const {
  if (!enabled() || !valid_tune_key(key)) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);  // an error shows at mkstemp below
  std::string text = entry_text(key, e);
  std::string tmp = dir_ + "/." + key + ".tmp." + std::to_string(getpid()) + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  bool ok = fd >= 0;
  if (ok) {
    fchmod(fd, 0644);
    ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = close(fd) == 0 && ok;
    ok = ok && std::rename(tmp.c_str(), (dir_ + "/" + key + kSuffix).c_str()) == 0;
    if (!ok) unlink(tmp.c_str());
  }
  if (!ok && warning)
    *warning = "cannot write tuning entry in " + dir_ + ": " + std::strerror(errno);
  return ok;
}

std::vector<std::pair<std::string, TuneEntry>> TuneDb::ls(
    std::vector<std::string>* warnings) const {
  std::vector<std::pair<std::string, TuneEntry>> out;
  DIR* d = enabled() ? opendir(dir_.c_str()) : nullptr;
  if (!d) return out;
  const size_t n = std::strlen(kSuffix);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name[0] == '.' || name.size() <= n || name.compare(name.size() - n, n, kSuffix) != 0)
      continue;
    std::string key = name.substr(0, name.size() - n), warning;
    if (std::optional<TuneEntry> entry = get(key, &warning))
      out.emplace_back(key, *entry);
    else if (warnings && !warning.empty())
      warnings->push_back(warning);
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second.label != b.second.label ? a.second.label < b.second.label : a.first < b.first;
  });
  return out;
}

size_t TuneDb::clear() const {
  size_t count = 0;
  DIR* d = enabled() ? opendir(dir_.c_str()) : nullptr;
  if (!d) return 0;
  const size_t n = std::strlen(kSuffix);
  std::vector<std::string> doomed;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    bool entry = name.size() > n && name.compare(name.size() - n, n, kSuffix) == 0;
    bool temporary = name.rfind(".", 0) == 0 && name.find(".tmp.") != std::string::npos;
    if (entry || temporary) doomed.push_back(name);
  }
  closedir(d);
  for (const std::string& name : doomed)
    if (unlink((dir_ + "/" + name).c_str()) == 0 && name[0] != '.') ++count;
  return count;
}

std::map<std::string, std::string> tuned_config(const CompileOptions& opt, const Graph& g,
                                                const Runtime& rt, const SizeBindings& sizes,
                                                const std::map<std::string, std::string>& config,
                                                const std::string& cache_dir) {
  std::map<std::string, std::string> tuned;
  TuneDb db(cache_dir);
  if (!tuning_wanted(opt) || !db.enabled()) return tuned;
  std::string warning;
  std::optional<TuneEntry> e = db.get(tune_key(g, rt.name(), rt.target(), sizes, opt), &warning);
  if (!warning.empty()) std::cerr << "kiln: warning: " << warning << "\n";
  std::string source = "exact sizes";
  if (!e && !sizes.empty()) {
    warning.clear();
    e = db.get(tune_bucket_key(g, rt.name(), rt.target(), sizes, opt), &warning);
    if (!warning.empty()) std::cerr << "kiln: warning: " << warning << "\n";
    source = "size bucket " + sizes_text(size_bucket(sizes));
  }
  if (!e) return tuned;
  std::set<std::string> pinned;
  for (const auto& [key, value] : config)
    if (const Knob* k = find_knob(key)) pinned.insert(k->name);
  std::string kept;
  for (const auto& [knob, value] : e->knobs)
    if (pinned.count(knob))
      kept += (kept.empty() ? "" : ", ") + knob;
    else
      tuned[knob] = value;
  if (opt.debug >= 1 && opt.log)
    *opt.log << "tuned: " << (tuned.empty() ? "nothing" : candidate_text(tuned))
             << " (from the tuning database, " << source
             << (kept.empty() ? "" : "; " + kept + " pinned by --config") << ")\n";
  return tuned;
}

CompileOptions tuned_compile_options(const SpecFile& file,
                                     const std::map<std::string, std::string>& config,
                                     const Runtime& rt, const Graph& g, const SizeBindings& sizes,
                                     const std::string& cache_dir,
                                     const std::function<void(CompileOptions&)>& adjust) {
  CompileOptions opt = compile_options(file, config, rt);
  if (adjust) adjust(opt);
  std::map<std::string, std::string> tuned = tuned_config(opt, g, rt, sizes, config, cache_dir);
  if (tuned.empty()) return opt;
  std::map<std::string, std::string> with_tuned = config;
  with_tuned.insert(tuned.begin(), tuned.end());
  opt = compile_options(file, with_tuned, rt);
  if (adjust) adjust(opt);
  return opt;
}

}  // namespace kiln
