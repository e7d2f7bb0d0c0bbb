#include "dsl/check.h"

#include "ir/verifier.h"

namespace kiln {

std::vector<LowerOptions> check_instances(const Composite& c, size_t cap) {
  std::vector<LowerOptions> choices(1);
  for (const TypeVar& tv : c.types) {
    std::vector<LowerOptions> next;
    for (const LowerOptions& partial : choices)
      for (DType d : tv.allowed) {
        if (next.size() >= cap) break;
        LowerOptions o = partial;
        o.dtypes[tv.name] = d;
        next.push_back(o);
      }
    choices = next;
  }
  bool batched = false;
  for (const Param& p : c.inputs)
    batched |= p.type.batch;
  if (!batched) return choices;
  std::vector<LowerOptions> out;
  for (LowerOptions o : choices)
    for (int rank : {0, 2}) {
      o.batch_rank = rank;
      out.push_back(o);
    }
  return out;
}

void check_composite(const Library& lib, const Composite& c) {
  for (const LowerOptions& opt : check_instances(c))
    verify_or_throw(lower_composite(lib, c, opt));
}

const SpecFile& check_file(Library& lib, const std::string& path) {
  const SpecFile& f = lib.load(path);
  for (const auto& c : f.composites)
    check_composite(lib, *c);
  return f;
}

}  // namespace kiln
