#include "runtimes/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace kiln {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'A', 'C', 'H'};
/** 2: the digest covers the key and the header, not only the payload. */
constexpr uint32_t kFormatVersion = 2;
constexpr const char* kSuffix = ".kc";

/** The fixed-size header in front of every payload (host byte order). */
struct EntryHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t reserved;
  uint64_t payload_bytes;
  unsigned char entry_sha256[32]; /**< entry_digest(): key, header and payload */
};
static_assert(sizeof(EntryHeader) == 56);

/** One unusable-folder warning per process, whichever Cache hits it first. */
std::atomic<bool> g_warned{false};

/** SHA-256 by Nettle: no global initialisation, where OpenSSL 3's first digest loads its
 *  configuration and providers (≈ 1.2 ms of every run; docs/decisions.md). */
void sha256(const void* data, size_t size, unsigned char out[32]) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, size, static_cast<const uint8_t*>(data));
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

/** The SHA-256 that binds an entry to its key: over the key, the header with entry_sha256
 *  zeroed, and the payload. An entry copied to another key's file fails it. */
void entry_digest(const std::string& key, EntryHeader h, const uint8_t* payload,
                  unsigned char out[32]) {
  std::memset(h.entry_sha256, 0, sizeof h.entry_sha256);
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, key.size() + 1, reinterpret_cast<const uint8_t*>(key.c_str()));
  sha256_update(&ctx, sizeof h, reinterpret_cast<const uint8_t*>(&h));
  sha256_update(&ctx, h.payload_bytes, payload);
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

std::string to_hex(const unsigned char* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t k = 0; k < n; ++k) {
    s += digits[bytes[k] >> 4];
    s += digits[bytes[k] & 15];
  }
  return s;
}

/** mkdir -p; true when `dir` exists as a folder afterwards. */
bool make_dirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::vector<uint8_t>> read_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<uint8_t> bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  close(fd);
  return bytes;
}

/** Why the entry file of `key` is bad, or empty when it is good. */
std::string check_entry(const std::string& key, const std::vector<uint8_t>& file) {
  if (file.size() < sizeof(EntryHeader)) return "truncated header";
  EntryHeader h;
  std::memcpy(&h, file.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "bad magic";
  if (h.format_version != kFormatVersion)
    return "format version " + std::to_string(h.format_version) + ", this Kiln writes version " +
           std::to_string(kFormatVersion);
  if (h.payload_bytes != file.size() - sizeof h) return "payload length mismatch (truncated?)";
  unsigned char digest[32];
  entry_digest(key, h, file.data() + sizeof h, digest);
  if (std::memcmp(digest, h.entry_sha256, 32) != 0)
    return "hash mismatch (corrupt, or another key's entry)";
  return "";
}

/** Deletes temporary files that writers killed mid-write left behind. */
void remove_stale_temporaries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name[0] == '.' && name.find(".tmp.") != std::string::npos)
      unlink((dir + "/" + name).c_str());
  }
  closedir(d);
}

bool valid_key(const std::string& key) {
  return !key.empty() && key.find('/') == std::string::npos && key[0] != '.';
}

}  // namespace

CacheKey& CacheKey::add(std::string_view field) {
  material_ += std::to_string(field.size());
  material_ += ':';
  material_ += field;
  return *this;
}

std::string CacheKey::hex() const {
  return sha256_hex(material_.data(), material_.size());
}

std::string sha256_hex(const void* data, size_t size) {
  unsigned char digest[32];
  sha256(data, size, digest);
  return to_hex(digest, 32);
}

Cache::Cache(std::string dir) : dir_(dir.empty() ? default_dir() : std::move(dir)) {
  if (dir_.empty() && off())
    enabled_ = false;
  else if (dir_.empty())
    disable("no cache folder: set KILN_CACHE, XDG_CACHE_HOME or HOME");
  else if (!make_dirs(dir_))
    disable("cannot create cache folder " + dir_ + ": " + std::strerror(errno));
  else if (access(dir_.c_str(), W_OK | X_OK) != 0)
    disable("cache folder " + dir_ + " is not writable");
}

bool Cache::off() {
  const char* d = std::getenv("KILN_CACHE");
  return d && std::string_view(d) == "off";
}

std::string Cache::default_dir() {
  if (off()) return "";
  if (const char* d = std::getenv("KILN_CACHE"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/kiln";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/kiln";
  return "";
}

void Cache::disable(const std::string& why) {
  enabled_ = false;
  if (!g_warned.exchange(true)) pending_warning_ = why + "; compiled kernels will not be cached";
}

std::string Cache::take_warning() {
  return std::exchange(pending_warning_, std::string());
}

std::optional<std::vector<uint8_t>> Cache::get(const std::string& key, std::string* warning) {
  if (warning) *warning = take_warning();
  if (!enabled_ || !valid_key(key)) return std::nullopt;
  std::optional<std::vector<uint8_t>> file = read_file(entry_path(key));
  if (!file) return std::nullopt;
  if (std::string why = check_entry(key, *file); !why.empty()) {
    std::string dropped = drop(key, why);
    if (warning) *warning = std::move(dropped);
    return std::nullopt;
  }
  file->erase(file->begin(), file->begin() + sizeof(EntryHeader));
  utimensat(AT_FDCWD, entry_path(key).c_str(), nullptr, 0);  // used now: last to be evicted
  return file;
}

uint64_t Cache::max_bytes() {
  constexpr uint64_t kDefault = uint64_t{2} << 30;
  const char* v = std::getenv("KILN_CACHE_MAX");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  uint64_t n = std::strtoull(v, &end, 10);
  if (end == v) return kDefault;
  switch (*end) {
    case 'K':
    case 'k':
      return n << 10;
    case 'M':
    case 'm':
      return n << 20;
    case 'G':
    case 'g':
      return n << 30;
    default:
      return n;
  }
}

bool Cache::put(const std::string& key, const void* data, size_t size, std::string* warning,
                const std::string& label) {
  if (warning) *warning = take_warning();
  if (!enabled_ || !valid_key(key)) return false;
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format_version = kFormatVersion;
  h.payload_bytes = size;
  entry_digest(key, h, static_cast<const uint8_t*>(data), h.entry_sha256);

  std::string tmp = dir_ + "/." + key + ".tmp." + std::to_string(getpid()) + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    disable("cannot write to cache folder " + dir_ + ": " + std::strerror(errno));
    if (warning && warning->empty()) *warning = take_warning();
    return false;
  }
  fchmod(fd, 0644);
  // No fsync: after a crash an entry may be short or zeroed, and get() detects that by the
  // payload hash and rebuilds it; an fsync would cost every cold compile milliseconds.
  bool ok = write_all(fd, &h, sizeof h) && write_all(fd, data, size);
  ok = close(fd) == 0 && ok;
  std::string path = entry_path(key);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    if (warning && warning->empty()) *warning = "could not write cache entry " + key;
    return false;
  }
  if (!label.empty()) {
    std::string label_path = dir_ + "/" + key + ".label";
    if (FILE* f = std::fopen(label_path.c_str(), "w")) {
      std::fputs(label.c_str(), f);
      std::fclose(f);
    }
  }
  // Least recently used first out, never the entry just stored.
  std::vector<CacheEntryInfo> entries = ls();
  uint64_t total = 0, cap = max_bytes();
  for (const CacheEntryInfo& e : entries)
    total += e.bytes;
  for (auto e = entries.rbegin(); e != entries.rend() && total > cap; ++e) {
    if (e->key == key) continue;
    if (unlink(entry_path(e->key).c_str()) == 0) total -= e->bytes;
    unlink((dir_ + "/" + e->key + ".label").c_str());
  }
  return true;
}

std::string Cache::entry_path(const std::string& key) const {
  return dir_ + "/" + key + kSuffix;
}

std::string Cache::drop(const std::string& key, const std::string& why) {
  std::string path = entry_path(key);
  if (!enabled_ || !valid_key(key)) return "";
  unlink((dir_ + "/" + key + ".label").c_str());
  if (unlink(path.c_str()) != 0 && errno != ENOENT)
    return "cannot remove bad cache entry " + path + " (" + why + "): " + std::strerror(errno);
  return "dropped cache entry " + path + ": " + why + "; recompiling";
}

std::vector<CacheEntryInfo> Cache::ls() const {
  std::vector<CacheEntryInfo> out;
  DIR* d = opendir(dir_.c_str());
  if (!d) return out;
  const size_t suffix_len = std::strlen(kSuffix);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name[0] == '.' || name.size() <= suffix_len ||
        name.compare(name.size() - suffix_len, suffix_len, kSuffix) != 0)
      continue;
    struct stat st;
    if (stat((dir_ + "/" + name).c_str(), &st) != 0) continue;
    CacheEntryInfo info;
    info.key = name.substr(0, name.size() - suffix_len);
    info.bytes = static_cast<uint64_t>(st.st_size);
    info.mtime = static_cast<int64_t>(st.st_mtime);
    info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (FILE* f = std::fopen((dir_ + "/" + info.key + ".label").c_str(), "r")) {
      char buf[512];
      size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      info.label.assign(buf, n);
      std::fclose(f);
    }
    out.push_back(std::move(info));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const CacheEntryInfo& a, const CacheEntryInfo& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.key < b.key;
  });
  return out;
}

CacheStats Cache::stats() const {
  CacheStats s;
  for (const CacheEntryInfo& e : ls()) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

size_t Cache::clear() {
  size_t n = 0;
  for (const CacheEntryInfo& e : ls()) {
    if (unlink((dir_ + "/" + e.key + kSuffix).c_str()) == 0) ++n;
    unlink((dir_ + "/" + e.key + ".label").c_str());
  }
  remove_stale_temporaries(dir_);
  return n;
}

}  // namespace kiln
