#include "arrays.h"

#include <map>

namespace kiln::py {

namespace {

using Code = nb::dlpack::dtype_code;

const std::map<std::string, nb::dlpack::dtype>& dtypes() {
  auto dt = [](Code c, int bits) { return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1}; };
  static const std::map<std::string, nb::dlpack::dtype> table = {
      {"f64", dt(Code::Float, 64)},   {"f32", dt(Code::Float, 32)}, {"f16", dt(Code::Float, 16)},
      {"bf16", dt(Code::Bfloat, 16)}, {"i64", dt(Code::Int, 64)},   {"i32", dt(Code::Int, 32)},
      {"i16", dt(Code::Int, 16)},     {"i8", dt(Code::Int, 8)},     {"u64", dt(Code::UInt, 64)},
      {"u32", dt(Code::UInt, 32)},    {"u16", dt(Code::UInt, 16)},  {"u8", dt(Code::UInt, 8)},
      {"bool", dt(Code::Bool, 8)}};
  return table;
}

std::string tuple_str(size_t n, const int64_t* v) {
  std::string s = "(";
  for (size_t i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (n == 1 ? ",)" : ")");
}

}  // namespace

std::optional<nb::dlpack::dtype> dlpack_dtype(const std::string& kiln_name) {
  auto it = dtypes().find(kiln_name);
  if (it == dtypes().end()) return std::nullopt;
  return it->second;
}

std::string dtype_name(nb::dlpack::dtype d) {
  for (const auto& [name, t] : dtypes())
    if (t == d) return name;
  static const std::map<uint8_t, std::string> codes = {
      {uint8_t(Code::Int), "int"},         {uint8_t(Code::UInt), "uint"},
      {uint8_t(Code::Float), "float"},     {uint8_t(Code::Bfloat), "bfloat"},
      {uint8_t(Code::Complex), "complex"}, {uint8_t(Code::Bool), "bool"}};
  auto it = codes.find(d.code);
  std::string s = it == codes.end() ? "dtype code " + std::to_string(d.code) + " of " : it->second;
  s += std::to_string(d.bits);
  if (d.lanes != 1) s += "x" + std::to_string(d.lanes);
  return s;
}

bool c_contiguous(const InArray& a) {
  const int64_t* strides = a.stride_ptr();
  if (!strides) return true;  // DLPack: no strides means compact row-major
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) == 0) return true;
    if (a.shape(i) != 1 && strides[i] != expected) {
      for (size_t j = 0; j < i; ++j)  // no elements at all: any strides
        if (a.shape(j) == 0) return true;
      return false;
    }
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

std::string shape_str(const InArray& a) {
  return tuple_str(a.ndim(), a.shape_ptr());
}

std::string strides_str(const InArray& a) {
  if (!a.stride_ptr()) return "(compact)";
  return tuple_str(a.ndim(), a.stride_ptr());
}

bool on_host(const InArray& a) {
  return a.device_type() == nb::device::cpu::value ||
         a.device_type() == nb::device::cuda_host::value;
}

bool on_cuda_device(const InArray& a, int id) {
  return (a.device_type() == nb::device::cuda::value ||
          a.device_type() == nb::device::cuda_managed::value) &&
         a.device_id() == id;
}

std::string device_str(const InArray& a) {
  std::string id = ":" + std::to_string(a.device_id());
  switch (a.device_type()) {
    case nb::device::cpu::value:
      return "cpu";
    case nb::device::cuda::value:
      return "cuda" + id;
    case nb::device::cuda_host::value:
      return "cuda_host";
    case nb::device::rocm::value:
      return "rocm" + id;
    case nb::device::metal::value:
      return "metal" + id;
    default:
      return "device type " + std::to_string(a.device_type()) + id;
  }
}

std::pair<const char*, const char*> byte_range(const InArray& a) {
  const char* p = static_cast<const char*>(a.data());
  return {p, p + a.nbytes()};
}

}  // namespace kiln::py
