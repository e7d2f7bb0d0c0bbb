// `kiln run --weights FILE.safetensors` (tools/kiln/run_files.h): the composite's inputs from a
// weights file, by name, with '.' read as '_', or stacked from numbered blocks.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

#include "ir/safetensors.h"
#include "tools/kiln/run_files.h"

namespace kiln::cli {

namespace {

/** A tensor of a numbered block (`h.3.ln_1.weight`): the name without its first component that
 *  is a number, dots read as '_' (`h_ln_1_weight`), and that number. */
std::optional<std::pair<std::string, int64_t>> block_member(const std::string& name) {
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    if (!part.empty() && part.size() < 10 &&
        std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(c); })) {
      std::string rest = name.substr(0, start == 0 ? 0 : start - 1) +
                         (end < name.size() ? (start == 0 ? "" : ".") + name.substr(end + 1) : "");
      std::replace(rest.begin(), rest.end(), '.', '_');
      return std::make_pair(rest, std::stoll(part));
    }
    start = end + 1;
  }
  return std::nullopt;
}

/** The tensors of blocks 0 .. n - 1, one each, of one dtype and shape, stacked along a new
 *  leading axis; a UsageError naming what is missing or different. */
Tensor stack(const SafetensorsFile& file, const std::string& input,
             std::vector<std::pair<int64_t, const SafetensorsEntry*>> blocks) {
  std::sort(blocks.begin(), blocks.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::string what = "--weights " + file.path() + ": input '" + input + "' stacks tensors '" +
                           blocks.front().second->name + "' …";
  const SafetensorsEntry& first = *blocks.front().second;
  for (size_t k = 0; k < blocks.size(); ++k) {
    const SafetensorsEntry& e = *blocks[k].second;
    if (blocks[k].first != static_cast<int64_t>(k))
      throw UsageError(what + ": block " + std::to_string(k) + " is " +
                       (blocks[k].first > static_cast<int64_t>(k) ? "missing" : "given twice"));
    if (e.dtype != first.dtype || e.dims != first.dims)
      throw UsageError(what + ": '" + e.name + "' is " + tensor_type_str(file.tensor(e)) + ", '" +
                       first.name + "' " + tensor_type_str(file.tensor(first)));
  }
  std::vector<int64_t> dims = first.dims;
  dims.insert(dims.begin(), static_cast<int64_t>(blocks.size()));
  const size_t bytes = first.end - first.begin;
  std::vector<uint8_t> all(bytes * blocks.size());
  for (size_t k = 0; k < blocks.size(); ++k)
    if (bytes) std::memcpy(all.data() + k * bytes, file.data(*blocks[k].second), bytes);
  return tensor_from_bytes(first.dtype, dims, all.data());
}

}  // namespace

void read_weights(const std::string& path, const Loaded& l, GivenInputs& given) {
  std::optional<SafetensorsFile> file;
  try {
    file.emplace(path);
  } catch (const SafetensorsError& e) {
    throw UsageError(std::string("--weights ") + e.what());
  }
  // Each tensor under its name with '.' read as '_', and each numbered block's tensor under the
  // name of its stack.
  std::map<std::string, std::vector<const SafetensorsEntry*>> as_identifier;
  std::map<std::string, std::vector<std::pair<int64_t, const SafetensorsEntry*>>> stacks;
  for (const SafetensorsEntry& e : file->header().tensors) {
    std::string id = e.name;
    std::replace(id.begin(), id.end(), '.', '_');
    if (id != e.name) as_identifier[id].push_back(&e);
    if (auto m = block_member(e.name)) stacks[m->first].emplace_back(m->second, &e);
  }
  std::string names;
  size_t found = 0;
  for (const Param& p : l.comp->inputs) {
    names += (names.empty() ? "" : ", ") + p.name;
    const SafetensorsEntry* e = file->find(p.name);
    if (!e && as_identifier.count(p.name)) {
      const std::vector<const SafetensorsEntry*>& v = as_identifier.at(p.name);
      if (v.size() > 1)
        throw UsageError("--weights " + path + ": tensors '" + v[0]->name + "' and '" + v[1]->name +
                         "' both read as input '" + p.name + "'");
      e = v[0];
    }
    std::optional<GivenInput> value;
    if (e) {
      value =
          GivenInput{file->tensor(*e), "--weights " + path + ": tensor '" + e->name + "'" +
                                           (e->name == p.name ? "" : " (input " + p.name + ")")};
    } else if (stacks.count(p.name)) {
      const auto& blocks = stacks.at(p.name);
      value = GivenInput{stack(*file, p.name, blocks), "--weights " + path + ": the " +
                                                           std::to_string(blocks.size()) +
                                                           " tensors stacked as input " + p.name};
    }
    if (!value) continue;
    if (given.count(p.name))
      throw UsageError("--weights " + path + ": input '" + p.name + "' is given by " +
                       given.at(p.name).origin + " too");
    given[p.name] = std::move(*value);
    ++found;
  }
  if (found == 0)
    throw UsageError("--weights " + path + ": the file holds none of '" + l.comp->name +
                     "''s inputs (" + names + ")");
}

}  // namespace kiln::cli
