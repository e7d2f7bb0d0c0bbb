#include "tools/kiln/run_files.h"

#include <filesystem>
#include <iostream>

#include "ir/npy.h"

namespace kiln::cli {

namespace {

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims)
    s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

}  // namespace

GivenInputs read_inputs(const std::vector<std::string>& items) {
  GivenInputs out;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw UsageError("--input expects NAME=FILE.npy, got '" + item + "'");
    std::string name = item.substr(0, eq), path = item.substr(eq + 1);
    if (out.count(name)) throw UsageError("--input names '" + name + "' twice");
    try {
      out[name] = {read_npy(path), "--input " + name};
    } catch (const NpyError& e) {
      throw UsageError(std::string("--input ") + name + ": " + e.what());
    }
  }
  return out;
}

SizeBindings bind_from_inputs(Loaded& l, const GivenInputs& given, const std::string& test,
                              bool batch_from_files) {
  for (const auto& [name, t] : given) {
    bool known = false;
    for (const Param& p : l.comp->inputs)
      known |= p.name == name;
    if (!known) throw UsageError(t.origin + ": '" + l.comp->name + "' has no input '" + name + "'");
  }
  if (batch_from_files)
    for (const Param& p : l.comp->inputs) {
      auto it = given.find(p.name);
      if (it == given.end() || !p.type.batch) continue;
      const std::vector<int64_t>& dims = it->second.tensor.dims;
      int64_t extra = static_cast<int64_t>(dims.size()) - static_cast<int64_t>(p.type.dims.size());
      if (extra < 0)
        throw UsageError(it->second.origin + ": the file's shape " + dims_str(dims) +
                         " has fewer dimensions than " + p.type.text);
      l.batch.assign(dims.begin(), dims.begin() + extra);
      l.settings.batch_rank = static_cast<int>(extra);
      l.options = usage_error_of([&] { return lower_options(*l.comp, l.settings); });
      break;
    }
  SizeBindings sizes = bind_sizes(l, test);
  const SizeBindings named = parse_sizes(test);
  Graph g = lower_checked(l, nullptr, true);
  // Each dimension that is one size variable binds it; then every dimension must match.
  for (NodeId in : g.inputs) {
    auto it = given.find(g[in].name);
    if (it == given.end()) continue;
    const Shape& shape = g[in].shape;
    const std::vector<int64_t>& dims = it->second.tensor.dims;
    if (dims.size() != shape.size())
      throw UsageError(it->second.origin + ": the file's shape " + dims_str(dims) + " has " +
                       std::to_string(dims.size()) + " dimensions; the input has " +
                       std::to_string(shape.size()) + " (" + shape_str(shape) + ")");
    for (size_t d = 0; d < dims.size(); ++d)
      if (std::optional<std::string> v = shape[d].as_var()) {
        if (named.count(*v) && named.at(*v) != dims[d])
          throw UsageError("--test " + *v + "=" + std::to_string(named.at(*v)) + ", but " +
                           it->second.origin + " has " + std::to_string(dims[d]) + " there");
        sizes[*v] = dims[d];
      }
  }
  for (NodeId in : g.inputs) {
    auto it = given.find(g[in].name);
    if (it == given.end()) continue;
    std::vector<int64_t> want = usage_error_of([&] { return eval_shape(g[in].shape, sizes); });
    if (want != it->second.tensor.dims)
      throw UsageError(it->second.origin + ": the file's shape " +
                       dims_str(it->second.tensor.dims) + " is not the input's " +
                       shape_str(g[in].shape) + " = " + dims_str(want));
  }
  return sizes;
}

GivenInputs take_cotangents(GivenInputs& given, const Loaded& l) {
  GivenInputs out;
  for (auto it = given.begin(); it != given.end();) {
    bool forward = false;
    for (const Param& p : l.comp->inputs)
      forward |= p.name == it->first;
    if (forward) {
      ++it;
    } else {
      out.insert(given.extract(it++));
    }
  }
  return out;
}

void check_cotangents(const Graph& g, const GivenInputs& cotangents, const SizeBindings& sizes) {
  for (const auto& [name, given] : cotangents) {
    const Tensor& t = given.tensor;
    const Node* input = nullptr;
    std::string names;
    for (NodeId id : g.inputs) {
      names += (names.empty() ? "" : ", ") + g[id].name;
      if (g[id].name == name) input = &g[id];
    }
    if (!input)
      throw UsageError("--input " + name + ": '" + g.name + "' has no input '" + name +
                       "'; its inputs are " + names);
    std::vector<int64_t> want = eval_shape(input->shape, sizes);
    if (t.dims != want)
      throw UsageError("--input " + name + ": the file's shape " + dims_str(t.dims) +
                       " is not the input's " + shape_str(input->shape) + " = " + dims_str(want));
  }
}

void use_given_inputs(const Graph& g, const GivenInputs& given, std::vector<Tensor>& inputs) {
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Node& n = g[g.inputs[k]];
    auto it = given.find(n.name);
    if (it == given.end()) continue;
    const Tensor& file = it->second.tensor;
    if (file.dtype == n.dtype) {
      inputs[k] = file;
    } else if (n.dtype == DType::bf16 && (file.dtype == DType::f32 || file.dtype == DType::f16)) {
      Tensor t(DType::bf16, file.dims);  // NumPy has no bfloat16: rounded from the file
      for (size_t e = 0; e < t.numel(); ++e)
        t.set(e, file.at(e));
      inputs[k] = std::move(t);
    } else {
      throw UsageError(it->second.origin + ": the input is " + std::string(dtype_name(n.dtype)) +
                       ", the file holds " + std::string(dtype_name(file.dtype)) +
                       " (convert it, or choose the dtype with --dtype)");
    }
  }
}

void save_outputs(const std::string& dir, const Graph& g, const std::vector<Tensor>& outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string path = (std::filesystem::path(dir) / (g.outputs[k].name + ".npy")).string();
    try {
      write_npy(path, outputs[k]);
    } catch (const NpyError& e) {
      throw UsageError(std::string("--save: ") + e.what());
    }
    std::cout << "  saved " << g.outputs[k].name << " to " << path << "\n";
  }
}

}  // namespace kiln::cli
