// ir/graph_spec.h: every composite of ops/ and of the gradient tests' data, lowered, printed as a
// spec, loaded and lowered again, computes the same outputs on the interpreter (every view,
// constant, reduction and index op the standard library lowers to goes through the printer).
#include <doctest/doctest.h>

#include <cmath>

#include "dsl/library.h"
#include "ir/graph_spec.h"
#include "tests/support/harness.h"

using namespace kiln;

TEST_CASE("graph_spec: every ops/ composite printed as a spec and loaded again") {
  int printed = 0, gathered = 0;
  for (std::string file :
       {"std:math.toml", "std:nn.toml", "std:reduce.toml", "std:tensor.toml", "std:index.toml",
        "std:quant.toml", "std:random.toml", "tests/data/autodiff.toml"}) {
    Library lib;
    const SpecFile& f = lib.load(file);
    for (const auto& comp : f.composites) {
      CAPTURE(comp->name);
      test::RunSpec spec;
      spec.target = file + ":" + comp->name;
      spec.sizes = comp->test.case_sizes(0);
      if (!comp->test.batches.empty()) spec.batch = comp->test.batches[0];
      test::Run r = test::run(spec);
      std::string text = graph_to_spec(r.graph);
      CAPTURE(text);
      gathered += text.find("_at = where(") != std::string::npos;  // a masked view read by offset
      Library again;
      const SpecFile& g = again.load_text(text, "printed.toml");
      Graph h = lower_composite(again, *g.composites.at(0));
      std::vector<Tensor> got = interpret(h, r.sizes, r.inputs);
      REQUIRE(got.size() == r.outputs.size());
      for (size_t k = 0; k < got.size(); ++k) {
        CHECK(got[k].dims == r.outputs[k].dims);
        CHECK(got[k].i == r.outputs[k].i);
        for (size_t e = 0; e < got[k].f.size(); ++e)
          if (got[k].f[e] != r.outputs[k].f[e] &&
              !(std::isnan(got[k].f[e]) && std::isnan(r.outputs[k].f[e])))
            FAIL_CHECK("output " << k << " element " << e << ": " << got[k].f[e] << " vs "
                                 << r.outputs[k].f[e]);
      }
      ++printed;
    }
  }
  CHECK(printed >= 90);
  CHECK(gathered >= 1);  // tests/data/autodiff.toml:prefix's reshape of a padded row
}
