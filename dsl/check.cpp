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

SpecError size_check_error(const SizeCheck& check, const std::string& problem) {
  SpecError e({check.site.file, check.site.line, check.site.col}, problem);
  for (const CheckSite& call : check.trace)
    e.trace.push_back({call.file, call.line, call.col});
  return e;
}

void check_composite(const Library& lib, const Composite& c, std::vector<SizeCheck>* deferred) {
  for (const LowerOptions& opt : check_instances(c)) {
    Graph g = lower_composite(lib, c, opt);
    verify_or_throw(g);
    for (size_t k = 0; !c.test.sizes.empty() && k < c.test.case_count(); ++k)
      for (const SizeCheck& check : g.checks)
        if (auto problem = size_check_failure(check, c.test.case_sizes(k)))
          throw size_check_error(
              check, *problem + " (test case " + std::to_string(k + 1) + " of '" + c.name + "')");
    if (!deferred) continue;
    for (const SizeCheck& check : g.checks) {
      bool seen = false;
      for (const SizeCheck& d : *deferred)
        seen |= d.site == check.site && d.claim == check.claim && d.trace == check.trace;
      if (!seen) deferred->push_back(check);
    }
  }
}

const SpecFile& check_file(Library& lib, const std::string& path,
                           std::vector<SizeCheck>* deferred) {
  const SpecFile& f = lib.load(path);
  for (const auto& c : f.composites)
    check_composite(lib, *c, deferred);
  return f;
}

}  // namespace kiln
