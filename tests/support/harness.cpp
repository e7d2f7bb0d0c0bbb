#include "tests/support/harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "ir/verifier.h"

namespace kiln::test {

const Tensor& Run::in(const std::string& name) const {
  for (size_t k = 0; k < graph.inputs.size(); ++k)
    if (graph[graph.inputs[k]].name == name) return inputs[k];
  throw std::runtime_error("no input " + name);
}

const Tensor& Run::out(const std::string& name) const {
  for (size_t k = 0; k < graph.outputs.size(); ++k)
    if (graph.outputs[k].name == name) return outputs[k];
  throw std::runtime_error("no output " + name);
}

Run lowered(const std::string& target, SizeBindings sizes, std::vector<int64_t> batch,
            std::map<std::string, AttrValue> attrs) {
  RunSpec spec;
  spec.target = target;
  spec.sizes = std::move(sizes);
  spec.batch = std::move(batch);
  spec.attrs = std::move(attrs);
  return run(spec);
}

Run run(const RunSpec& spec) {
  Run r;
  r.lib = std::make_shared<Library>();
  auto colon = spec.target.rfind(':');
  const SpecFile& f = r.lib->load(spec.target.substr(0, colon));
  r.comp = f.find(spec.target.substr(colon + 1));
  if (!r.comp) throw std::runtime_error("no composite " + spec.target);
  LowerOptions opt;
  opt.dtypes = spec.dtypes;
  opt.batch_rank = static_cast<int>(spec.batch.size());
  opt.attrs = spec.attrs;
  r.sizes = spec.sizes;
  for (size_t k = 0; k < spec.batch.size(); ++k)
    r.sizes["batch" + std::to_string(k)] = spec.batch[k];
  if (spec.specialize) opt.fixed_sizes = r.sizes;
  r.graph = lower_composite(*r.lib, *r.comp, opt);
  verify_or_throw(r.graph);
  if (!spec.interpret) return r;
  for (size_t k = 0; k < r.graph.inputs.size(); ++k) {
    const Node& n = r.graph[r.graph.inputs[k]];
    if (auto g = spec.given.find(n.name); g != spec.given.end()) {
      r.inputs.push_back(g->second);
      continue;
    }
    double lo = -1, hi = 1;
    if (is_int(n.dtype)) lo = -8, hi = 8;
    if (n.dtype == DType::boolean) lo = 0, hi = 2;
    if (auto it = r.comp->test.ranges.find(n.name); it != r.comp->test.ranges.end())
      std::tie(lo, hi) = it->second;
    if (auto it = spec.ranges.find(n.name); it != spec.ranges.end()) std::tie(lo, hi) = it->second;
    r.inputs.push_back(
        random_tensor(n.dtype, eval_shape(n.shape, r.sizes), spec.seed + 31 * k, lo, hi));
  }
  r.outputs = interpret(r.graph, r.sizes, r.inputs);
  return r;
}

AttrValue attr_int(int64_t v) {
  AttrValue a;
  a.kind = AttrValue::Kind::integer;
  a.integer = v;
  return a;
}

AttrValue attr_float(double v) {
  AttrValue a;
  a.kind = AttrValue::Kind::number;
  a.number = v;
  return a;
}

AttrValue attr_bool(bool v) {
  AttrValue a;
  a.kind = AttrValue::Kind::boolean;
  a.boolean = v;
  return a;
}

AttrValue attr_list(const std::vector<int64_t>& v) {
  AttrValue a;
  a.kind = AttrValue::Kind::list;
  for (int64_t x : v)
    a.list.push_back(attr_int(x));
  return a;
}

size_t offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  size_t o = 0;
  for (size_t k = 0; k < dims.size(); ++k)
    o = o * dims[k] + idx[k];
  return o;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol) {
  REQUIRE(got.numel() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    double g = got.at(k), w = want[k];
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
              std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      std::ostringstream msg;
      msg << "element " << k << ": got " << g << ", want " << w;
      FAIL_CHECK(msg.str());
      return;
    }
  }
}

void for_each_index(const std::vector<int64_t>& dims,
                    const std::function<void(const std::vector<int64_t>&)>& fn) {
  for (int64_t d : dims)
    if (d == 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  for (;;) {
    fn(idx);
    int k = static_cast<int>(dims.size()) - 1;
    while (k >= 0 && ++idx[k] == dims[k])
      idx[k--] = 0;
    if (k < 0) return;
  }
}

std::vector<RunSpec> first_cases(const std::vector<std::string>& dirs) {
  std::vector<std::string> files;
  for (const std::string& dir : dirs)
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<RunSpec> out;
  for (const std::string& path : files) {
    Library lib;
    const SpecFile& f = lib.load(path);
    for (const auto& c : f.composites) {
      if (c->test.case_count() == 0) continue;
      RunSpec spec;
      spec.target = path + ":" + c->name;
      spec.sizes = c->test.case_sizes(0);
      if (!c->types.empty()) spec.dtypes[c->types[0].name] = c->types[0].allowed.at(0);
      bool batched = false;
      for (const Param& prm : c->inputs)
        batched |= prm.type.batch;
      if (batched && !c->test.batches.empty()) spec.batch = c->test.batches.back();
      out.push_back(std::move(spec));
    }
  }
  return out;
}

}  // namespace kiln::test
