// kiln::Weights (include/kiln/kiln.h): the public face of ir/safetensors.h.
#include <cctype>
#include <stdexcept>

#include "include/kiln/kiln.h"
#include "ir/safetensors.h"

namespace kiln {

struct Weights::Impl {
  SafetensorsFile file;
};

namespace {

const SafetensorsEntry& entry(const SafetensorsFile& f, const std::string& name) {
  const SafetensorsEntry* e = f.find(name);
  if (!e) throw std::invalid_argument(f.path() + ": no tensor named '" + name + "'");
  return *e;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims)
    s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

Weights::Weights(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Weights::Weights(Weights&&) noexcept = default;
Weights& Weights::operator=(Weights&&) noexcept = default;
Weights::~Weights() = default;

Weights Weights::open(const std::string& path) {
  try {
    return Weights(std::make_unique<Impl>(Impl{SafetensorsFile(path)}));
  } catch (const SafetensorsError& e) {
    throw std::runtime_error(e.what());
  }
}

std::vector<std::string> Weights::names() const {
  std::vector<std::string> out;
  for (const SafetensorsEntry& e : impl_->file.header().tensors)
    out.push_back(e.name);
  return out;
}

bool Weights::has(const std::string& name) const {
  return impl_->file.find(name) != nullptr;
}

std::string Weights::dtype(const std::string& name) const {
  return std::string(dtype_name(entry(impl_->file, name).dtype));
}

std::vector<int64_t> Weights::shape(const std::string& name) const {
  return entry(impl_->file, name).dims;
}

const void* Weights::data(const std::string& name) const {
  return impl_->file.data(entry(impl_->file, name));
}

size_t Weights::byte_size(const std::string& name) const {
  const SafetensorsEntry& e = entry(impl_->file, name);
  return static_cast<size_t>(e.end - e.begin);
}

std::map<std::string, std::string> Weights::metadata() const {
  return impl_->file.header().metadata;
}

std::map<std::string, int64_t> Weights::bind(const Compiled& c, const std::string& input,
                                             const std::string& name,
                                             const std::map<std::string, int64_t>& sizes) const {
  const std::string tensor = name.empty() ? input : name;
  const SafetensorsEntry& e = entry(impl_->file, tensor);
  const std::string what = impl_->file.path() + ": tensor '" + tensor + "' for input '" + input +
                           "' of '" + c.composite() + "'";
  const std::string want = c.dtype(input);
  if (want != dtype_name(e.dtype))
    throw std::invalid_argument(what + ": the input is " + want + ", the file holds " +
                                std::string(dtype_name(e.dtype)));
  const std::vector<std::string> dims = c.symbolic_shape(input);
  if (dims.size() != e.dims.size())
    throw std::invalid_argument(what + ": the file's shape " + dims_text(e.dims) + " has " +
                                std::to_string(e.dims.size()) + " dimensions; the input has " +
                                std::to_string(dims.size()));
  std::map<std::string, int64_t> bound = sizes, out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!is_identifier(dims[d])) continue;
    auto it = bound.find(dims[d]);
    if (it != bound.end() && it->second != e.dims[d])
      throw std::invalid_argument(what + ": " + dims[d] + " = " + std::to_string(it->second) +
                                  ", but the file has " + std::to_string(e.dims[d]) + " there");
    bound[dims[d]] = out[dims[d]] = e.dims[d];
  }
  // Every dimension, now that its variables may be bound (one whose variables are not yet
  // bound is left to the caller's run).
  std::vector<int64_t> expect;
  try {
    expect = c.shape(input, bound);
  } catch (const std::invalid_argument&) {
    return out;
  }
  if (expect != e.dims)
    throw std::invalid_argument(what + ": the file's shape " + dims_text(e.dims) +
                                " is not the input's " + dims_text(expect));
  return out;
}

}  // namespace kiln
