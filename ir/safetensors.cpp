#include "ir/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/limits.h"

namespace kiln {

namespace {

using Json = nlohmann::json;

/** The reference implementation's bound on a header; a larger one is not a weights file. */
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {{"F64", DType::f64},     {"F32", DType::f32}, {"F16", DType::f16},
                                 {"BF16", DType::bf16},   {"I64", DType::i64}, {"I32", DType::i32},
                                 {"I16", DType::i16},     {"I8", DType::i8},   {"U64", DType::u64},
                                 {"U32", DType::u32},     {"U16", DType::u16}, {"U8", DType::u8},
                                 {"BOOL", DType::boolean}};

/** Reads one tensor's entry of the header. */
SafetensorsEntry read_entry(const std::string& file, const std::string& name, const Json& v,
                            uint64_t data_bytes) {
  auto fail = [&](const std::string& why) -> SafetensorsError {
    return SafetensorsError(file + ": tensor '" + name + "': " + why);
  };
  if (!v.is_object()) throw fail("its entry is not an object");
  SafetensorsEntry e;
  e.name = name;
  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) throw fail("no \"dtype\" string");
  const std::string& dname = dt->get_ref<const std::string&>();
  const DTypeName* found = nullptr;
  for (const DTypeName& d : kDTypes)
    if (dname == d.name) found = &d;
  if (!found) throw fail("dtype " + dname + " is not one Kiln has");
  e.dtype = found->dtype;
  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array()) throw fail("no \"shape\" array");
  if (shape->size() > static_cast<size_t>(kMaxRank))
    throw fail("a shape of " + std::to_string(shape->size()) + " dimensions (at most " +
               std::to_string(kMaxRank) + ")");
  uint64_t bytes = static_cast<uint64_t>(dtype_bits(e.dtype) / 8);
  for (const Json& d : *shape) {
    if (!d.is_number_unsigned()) throw fail("a dimension that is not a non-negative integer");
    const uint64_t n = d.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (n && bytes > std::numeric_limits<uint64_t>::max() / n))
      throw fail("a shape whose byte count overflows");
    bytes *= n;
    e.dims.push_back(static_cast<int64_t>(n));
  }
  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    throw fail("no \"data_offsets\" pair of non-negative integers");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
  if (e.end < e.begin) throw fail("data offsets " + range + " end before they begin");
  if (e.end > data_bytes)
    throw fail("data offsets " + range + " reach past the " + std::to_string(data_bytes) +
               " bytes of data the file holds");
  if (e.end - e.begin != bytes)
    throw fail("data offsets " + range + " hold " + std::to_string(e.end - e.begin) +
               " bytes; its dtype and shape take " + std::to_string(bytes));
  return e;
}

}  // namespace

SafetensorsHeader parse_safetensors(const void* data, size_t size, const std::string& name) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (size < 8)
    throw SafetensorsError(name + ": " + std::to_string(size) +
                           " bytes, shorter than the 8-byte length a safetensors file begins with");
  uint64_t n = 0;
  for (int b = 7; b >= 0; --b)
    n = n << 8 | p[b];
  if (n > size - 8)
    throw SafetensorsError(name + ": the header's length " + std::to_string(n) +
                           " is more than the file's " + std::to_string(size - 8) +
                           " bytes after it (a truncated file, or not safetensors)");
  if (n > kMaxHeaderBytes)
    throw SafetensorsError(name + ": a header of " + std::to_string(n) +
                           " bytes (safetensors allows at most 100 MiB)");
  const char* text = reinterpret_cast<const char*>(p + 8);
  if (n == 0 || text[0] != '{') throw SafetensorsError(name + ": the header is not a JSON object");
  // Names once each (JSON would keep the last silently) and no deeper than an entry's arrays.
  std::set<std::string> names;
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > 3)
      throw SafetensorsError(name + ": the header nests deeper than a safetensors header does");
    if (event == Json::parse_event_t::key && depth == 1 &&
        !names.insert(parsed.get<std::string>()).second)
      throw SafetensorsError(name + ": the header names '" + parsed.get<std::string>() + "' twice");
    return true;
  };
  Json header;
  try {
    header = Json::parse(text, text + n, check);
  } catch (const Json::exception& e) {
    throw SafetensorsError(name + ": the header is not JSON: " + e.what());
  }
  if (!header.is_object()) throw SafetensorsError(name + ": the header is not a JSON object");
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_bytes = size - h.data_start;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        throw SafetensorsError(name + ": \"__metadata__\" is not an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          throw SafetensorsError(name + ": \"__metadata__\" entry '" + mk + "' is not a string");
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(read_entry(name, key, value, data_bytes));
  }
  std::stable_sort(
      h.tensors.begin(), h.tensors.end(),
      [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  const SafetensorsEntry* last = nullptr;  // the nonempty tensor reaching furthest so far
  for (const SafetensorsEntry& e : h.tensors) {
    if (e.begin == e.end) continue;
    if (last && e.begin < last->end)
      throw SafetensorsError(name + ": tensors '" + last->name + "' and '" + e.name +
                             "' overlap in the data");
    if (!last || e.end > last->end) last = &e;
  }
  return h;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError(path + ": cannot open it: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw SafetensorsError(path + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    // Copy-on-write: a caller that writes into a tensor (a PyTorch tensor over it) changes its
    // own pages, never the file.
    void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw SafetensorsError(path + ": cannot map it: " + std::strerror(err));
    }
    map_ = static_cast<const uint8_t*>(m);
  }
  ::close(fd);
  try {
    header_ = parse_safetensors(map_, size_, path);
  } catch (...) {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      header_(std::move(other.header_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
    header_ = std::move(other.header_);
  }
  return *this;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsEntry& e : header_.tensors)
    if (e.name == name) return &e;
  return nullptr;
}

const void* SafetensorsFile::data(const SafetensorsEntry& e) const {
  return map_ + header_.data_start + e.begin;
}

Tensor SafetensorsFile::tensor(const SafetensorsEntry& e) const {
  return tensor_from_bytes(e.dtype, e.dims, data(e));
}

const char* safetensors_dtype(DType t) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == t) return d.name;
  return "?";
}

std::vector<uint8_t> safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<uint8_t> data;
  for (const auto& [name, t] : tensors) {
    std::vector<uint8_t> bytes = tensor_to_bytes(t);
    header[name] = {{"dtype", safetensors_dtype(t.dtype)},
                    {"shape", t.dims},
                    {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data.insert(data.end(), bytes.begin(), bytes.end());
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data 8-byte aligned, as writers do
  std::vector<uint8_t> out(8);
  for (int b = 0; b < 8; ++b)
    out[b] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * b));
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace kiln
