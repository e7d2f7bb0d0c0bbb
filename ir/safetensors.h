/** \file
 * safetensors files, the format model weights are shipped in (Hugging Face's): an 8-byte
 * little-endian header length N, N bytes of JSON — an object mapping each tensor's name to
 * `{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}`, offsets into the bytes after
 * the header, plus an optional `"__metadata__"` object of strings — then the tensors' elements,
 * row-major and little-endian. The file is mapped, not read: a tensor's elements are a pointer
 * into the mapping, and the pages a program never touches are never read.
 *
 * Every malformed or hostile file is one SafetensorsError naming the file (and the tensor) and
 * what is wrong — a file shorter than its header, a header that is not such an object, a name
 * given twice, an unknown dtype, a shape whose byte count is not its offsets', offsets outside
 * the data or overlapping another tensor's — and the parser never reads outside the bytes it is
 * given (tests/fuzz/safetensors_fuzzer.cpp). Gaps between tensors are allowed.
 */
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

/** A file that is not a safetensors file Kiln reads: "FILE: what is wrong". */
struct SafetensorsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** One tensor of a file's header. */
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
  uint64_t begin = 0;  ///< its first byte, counted from the start of the data
  uint64_t end = 0;    ///< one past its last byte
};

/** A file's header, checked against the file's size. */
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;  ///< in the order of their offsets
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  ///< where the data begins in the file: 8 + the header's length
};

/** The header of the `size` bytes of a safetensors file at `data`; `name` goes into error
 *  messages. Throws SafetensorsError. */
SafetensorsHeader parse_safetensors(const void* data, size_t size, const std::string& name);

/** A safetensors file mapped into memory for as long as the object lives: copy-on-write, so
 *  that a write into a tensor changes this process's pages and never the file. */
class SafetensorsFile {
 public:
  /** Maps and checks the file at `path`. Throws SafetensorsError. */
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  /** The tensor named `name`, or null. */
  const SafetensorsEntry* find(const std::string& name) const;
  /** Its elements in the mapping (not copied; aligned as the file places them). */
  const void* data(const SafetensorsEntry& e) const;
  /** Its elements copied into a Tensor. */
  Tensor tensor(const SafetensorsEntry& e) const;

 private:
  std::string path_;
  const uint8_t* map_ = nullptr;
  size_t size_ = 0;
  SafetensorsHeader header_;
};

/** The bytes of a safetensors file holding `tensors` in order, each written from its dtype. */
std::vector<uint8_t> safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata = {});

/** The spelling of a dtype in safetensors headers ("F32", "BF16", "BOOL", ...). */
const char* safetensors_dtype(DType t);

}  // namespace kiln
