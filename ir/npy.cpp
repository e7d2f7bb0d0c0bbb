#include "ir/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "ir/limits.h"

namespace kiln {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

/** The dict literal of a header, read strictly and never past `end`. */
class HeaderReader {
 public:
  HeaderReader(const char* p, const char* end, const std::string& name)
      : p_(p), end_(end), name_(name) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw NpyError(name_ + ": header: " + why);
  }
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r'))
      ++p_;
  }
  bool eat(char c) {
    skip_space();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    if (!eat(c)) fail(std::string("expected ") + what);
  }
  std::string quoted() {
    skip_space();
    if (p_ >= end_ || (*p_ != '\'' && *p_ != '"')) fail("expected a quoted string");
    char quote = *p_++;
    const char* begin = p_;
    while (p_ < end_ && *p_ != quote)
      ++p_;
    if (p_ >= end_) fail("a string does not end");
    return std::string(begin, p_++);
  }
  bool boolean() {
    skip_space();
    for (const char* word : {"True", "False"}) {
      size_t n = std::strlen(word);
      if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) {
        p_ += n;
        return word[0] == 'T';
      }
    }
    fail("expected True or False");
  }
  /** `(3, 4)`, `(3,)` or `()`. */
  std::vector<int64_t> shape() {
    expect('(', "'(' before the shape");
    std::vector<int64_t> dims;
    while (!eat(')')) {
      skip_space();
      const char* begin = p_;
      int64_t v = 0;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("a dimension overflows");
        v = v * 10 + (*p_++ - '0');
      }
      if (p_ == begin) fail("expected a dimension");
      if (p_ < end_ && *p_ == 'L') ++p_;  // Python 2's long integers
      dims.push_back(v);
      if (dims.size() > static_cast<size_t>(kMaxRank))
        fail("more than " + std::to_string(kMaxRank) + " dimensions");
      if (!eat(',')) {
        expect(')', "',' or ')' in the shape");
        break;
      }
    }
    return dims;
  }

 private:
  const char* p_;
  const char* end_;
  const std::string& name_;
};

/** The dtype of a `descr` such as `<f4` or `|u1`; an error for any other. */
DType dtype_of(const std::string& descr, const std::string& name) {
  if (descr.size() == 3 && descr[0] == '>' && descr.substr(1) != "i1" && descr.substr(1) != "u1" &&
      descr.substr(1) != "b1")
    throw NpyError(name + ": big-endian elements ('" + descr +
                   "'); save them little-endian (x.astype(x.dtype.newbyteorder('<')))");
  static const struct {
    const char* code;
    DType dtype;
  } kCodes[] = {{"f8", DType::f64}, {"f4", DType::f32}, {"f2", DType::f16}, {"i8", DType::i64},
                {"i4", DType::i32}, {"i2", DType::i16}, {"i1", DType::i8},  {"u1", DType::u8},
                {"u2", DType::u16}, {"u4", DType::u32}, {"u8", DType::u64}, {"b1", DType::boolean}};
  if (descr.size() == 3 &&
      (descr[0] == '<' || descr[0] == '|' || descr[0] == '=' || descr[0] == '>'))
    for (const auto& c : kCodes)
      if (descr.compare(1, 2, c.code) == 0) return c.dtype;
  throw NpyError(name + ": elements of type '" + descr +
                 "'; Kiln reads f8, f4, f2, i8, i4, i2, i1, u1, u2, u4, u8 and b1");
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::f64:
      return "<f8";
    case DType::f32:
      return "<f4";
    case DType::f16:
      return "<f2";
    case DType::bf16:
      return "<f4";  // written as f32 (npy_bytes converts)
    case DType::i64:
      return "<i8";
    case DType::i32:
      return "<i4";
    case DType::i16:
      return "<i2";
    case DType::i8:
      return "|i1";
    case DType::u8:
      return "|u1";
    case DType::u16:
      return "<u2";
    case DType::u32:
      return "<u4";
    case DType::u64:
      return "<u8";
    case DType::boolean:
      return "|b1";
  }
  return "<f4";
}

}  // namespace

Tensor parse_npy(const void* data, size_t size, const std::string& name) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    throw NpyError(name + ": not a .npy file (it does not start with \\x93NUMPY)");
  const uint8_t major = bytes[6];
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw NpyError(name + ": the header is cut short");
    header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8 |
                 static_cast<size_t>(bytes[10]) << 16 | static_cast<size_t>(bytes[11]) << 24;
    offset = 12;
  } else {
    throw NpyError(name + ": format version " + std::to_string(major) +
                   " (Kiln reads versions 1, 2 and 3)");
  }
  if (header_len > size - offset) throw NpyError(name + ": the header is cut short");
  const char* header = reinterpret_cast<const char*>(bytes + offset);
  HeaderReader r(header, header + header_len, name);
  std::string descr;
  bool fortran = false, have_descr = false, have_order = false, have_shape = false;
  std::vector<int64_t> dims;
  r.expect('{', "'{'");
  while (!r.eat('}')) {
    std::string key = r.quoted();
    r.expect(':', "':' after a key");
    if (key == "descr") {
      descr = r.quoted();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = r.boolean();
      have_order = true;
    } else if (key == "shape") {
      dims = r.shape();
      have_shape = true;
    } else {
      r.fail("unknown key '" + key + "'");
    }
    if (!r.eat(',')) {
      r.expect('}', "',' or '}'");
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    r.fail("it needs 'descr', 'fortran_order' and 'shape'");
  if (fortran)
    throw NpyError(name + ": Fortran (column-major) order; save np.ascontiguousarray(x) instead");
  DType dtype = dtype_of(descr, name);
  // The element count against the bytes there are, before anything is allocated.
  const size_t width = dtype_bits(dtype) / 8, have = size - offset - header_len;
  const uint64_t room = have / width;
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > room / static_cast<uint64_t>(d))
      throw NpyError(name + ": the shape needs more elements than the file holds");
    count *= static_cast<uint64_t>(d);
  }
  if (count * width != have)
    throw NpyError(name + ": " + std::to_string(have) + " bytes of elements, where " +
                   std::string(dtype_name(dtype)) + " of that shape takes " +
                   std::to_string(count * width));
  try {
    return tensor_from_bytes(dtype, dims, bytes + offset + header_len);
  } catch (const std::exception& e) {  // past the limits of ir/sizes.h
    throw NpyError(name + ": " + e.what());
  }
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NpyError(path + ": cannot open it");
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(data.data(), data.size(), path);
}

std::vector<uint8_t> npy_bytes(const Tensor& t) {
  Tensor wide;
  const Tensor* body = &t;
  if (t.dtype == DType::bf16) {  // NumPy has no bfloat16
    wide = Tensor(DType::f32, t.dims);
    for (size_t k = 0; k < t.numel(); ++k)
      wide.set(k, t.at(k));
    body = &wide;
  }
  std::string shape = "(";
  for (size_t k = 0; k < t.dims.size(); ++k)
    shape += (k ? ", " : "") + std::to_string(t.dims[k]);
  shape += t.dims.size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + descr_of(t.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Padded with spaces to a multiple of 64 bytes, magic and length included, ending in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out(kMagic, kMagic + 6);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  std::vector<uint8_t> elements = tensor_to_bytes(*body);
  out.insert(out.end(), elements.begin(), elements.end());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::vector<uint8_t> bytes = npy_bytes(t);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw NpyError(path + ": cannot write it");
}

}  // namespace kiln
