// Every composite of ops/ at every size of its own test table, with each dtype its type
// variables allow and each batch shape: it must lower, verify and run under the interpreter,
// giving outputs of the declared shapes. The per-family tests check the values.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "dsl/check.h"
#include "ir/verifier.h"
#include "tests/support/harness.h"

using namespace kiln;

TEST_CASE("ops sweep: every composite runs at its test sizes for every allowed dtype") {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator("ops"))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  int runs = 0;
  for (const std::string& path : files) {
    Library lib;
    const SpecFile& f = lib.load(path);
    for (const auto& c : f.composites) {
      CHECK_MESSAGE(!c->doc.empty(), path << ":" << c->name << " has no doc line");
      std::vector<std::vector<int64_t>> batches = c->test.batches;
      if (batches.empty()) batches.push_back({});
      std::vector<DType> dtypes = {DType::f32};
      const TypeVar* tv = c->types.empty() ? nullptr : &c->types[0];
      if (tv) dtypes = tv->allowed;
      for (DType d : dtypes)
        for (const auto& batch : batches)
          for (size_t k = 0; k < c->test.case_count(); ++k) {
            test::RunSpec spec;
            spec.target = path + ":" + c->name;
            spec.sizes = c->test.case_sizes(k);
            if (tv) spec.dtypes[tv->name] = d;
            bool batched = false;
            for (const Param& p : c->inputs)
              batched |= p.type.batch;
            if (batched) spec.batch = batch;
            CAPTURE(spec.target);
            CAPTURE(dtype_name(d));
            CAPTURE(k);
            test::Run r;
            try {
              r = test::run(spec);
            } catch (const SpecError& e) {
              FAIL(format_error(e));
            } catch (const std::exception& e) {
              FAIL(std::string(e.what()));  // a char* prints as its address
            }
            for (size_t o = 0; o < r.outputs.size(); ++o)
              CHECK(r.outputs[o].dims ==
                    eval_shape(r.graph[r.graph.outputs[o].node].shape, r.sizes));
            ++runs;
          }
    }
  }
  MESSAGE("ran " << runs << " composite instances");
}

TEST_CASE("ops sweep: kiln check accepts every file in ops/") {
  for (const auto& e : std::filesystem::directory_iterator("ops")) {
    if (e.path().extension() != ".toml") continue;
    CAPTURE(e.path().string());
    Library lib;
    try {
      check_file(lib, e.path().string());
    } catch (const SpecError& err) {
      FAIL(format_error(err));
    }
  }
}
