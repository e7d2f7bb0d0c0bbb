// scheduler/split_padding: a padded operand read through a window is split out of the window's
// view (a view of the source with the bounds tests, and an unmasked view of that), the graph
// computes the same values, and the value planner stores the padded tensor once on the CPU.
#include <doctest/doctest.h>

#include "scheduler/plan_values.h"
#include "scheduler/split_padding.h"
#include "simplifier/engine.h"
#include "simplifier/rule.h"
#include "tests/support/harness.h"

using namespace kiln;

namespace {

std::vector<NodeId> view_nodes(const Graph& g, bool masked) {
  std::vector<NodeId> out;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id)
    if (g[id].op == Op::view && g[id].view.mask.empty() != masked) out.push_back(id);
  return out;
}

}  // namespace

TEST_CASE("split_padding: conv2d's padded input becomes a value; the window reads it unmasked") {
  SizeBindings sizes{{"B", 2}, {"C", 3}, {"H", 7}, {"W", 9}, {"F", 4}, {"R", 3}, {"S", 3}};
  test::Run r = test::lowered("ops/nn.toml:conv2d", sizes, {}, {{"pad", test::attr_int(1)}});
  Graph g = simplify(r.graph, shipped_rules(), {}).graph;  // as the pipeline plans it
  REQUIRE(view_nodes(g, true).size() == 1);
  CHECK(split_padding(g) == 1);
  std::vector<NodeId> masked = view_nodes(g, true), plain = view_nodes(g, false);
  REQUIRE(masked.size() == 1);
  const Node& padded = g[masked[0]];
  CHECK(g[padded.operands[0]].op == Op::input);
  CHECK(shape_str(padded.shape) == "[B, C, H + 2, W + 2]");
  CHECK(padded.view.mask.size() == 2);
  // The window over it has no test and reads it.
  bool window = false;
  for (NodeId id : plain)
    window = window || g[id].operands[0] == masked[0];
  CHECK(window);
  // The same values as the graph before.
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], r.outputs[0].f, 0, 0);
  // On the CPU the planner stores it: read F times per element inline.
  ValueOptions cpu;
  cpu.masked_view_cost = kMaskedViewCost;
  CHECK(plan_values(g, cpu).stored(masked[0]));
  CHECK_FALSE(plan_values(g, ValueOptions{}).stored(masked[0]));
  CHECK(split_padding(g) == 0);  // done once
}

TEST_CASE("split_padding: strided and dilated windows, and pads read once, stay as they are") {
  SizeBindings sizes{{"B", 1}, {"C", 2}, {"H", 11}, {"W", 10}, {"F", 3}, {"R", 3}, {"S", 2}};
  test::Run r = test::lowered(
      "ops/nn.toml:conv2d", sizes, {},
      {{"pad", test::attr_int(2)}, {"stride", test::attr_int(2)}, {"dilation", test::attr_int(2)}});
  Graph g = r.graph;
  CHECK(split_padding(g) == 1);
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  test::expect_close(got[0], r.outputs[0].f, 0, 0);
  // An elementwise op on a pad reads each padded element once: nothing to gain.
  test::Run once = test::lowered("ops/tensor.toml:pad", {{"N", 5}}, {},
                                 {{"before", test::attr_int(2)}, {"after", test::attr_int(1)}});
  Graph h = once.graph;
  CHECK(split_padding(h) == 0);
}
