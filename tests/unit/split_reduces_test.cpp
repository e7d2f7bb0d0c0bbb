// scheduler/split_reduces: a reduce read only through views that split one of its dimensions by
// sizes (heads from a projection) is computed in the split shape, its operand read through the
// split, and the graph computes the same values; reduces read otherwise stay as they are.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "scheduler/split_reduces.h"
#include "tests/support/harness.h"

using namespace kiln;
namespace fs = std::filesystem;

TEST_CASE("split_reduces: projections read as heads are computed as heads") {
  test::Run r = test::lowered("tests/regressions/user_kernels.toml:mha_projections",
                              {{"B", 2}, {"L", 5}, {"E", 12}});
  Graph g = r.graph;
  CHECK(split_reduces(g) == 3);  // q2, k2, v2 (o is read merged, not split)
  CHECK(verify(g).empty());
  int split = 0;
  for (const Node& n : g.nodes) {
    if (n.op != Op::reduce || shape_str(n.shape) != "[B, L, 4, (E / 4), 1]") continue;
    // A projection's operand reads the weight at (E / 4)·h + d: its view splits it too. (P·V
    // has this shape too, and reads no weight.)
    const Node& product = g[n.operands[0]];
    REQUIRE(product.op == Op::mul);
    for (NodeId o : product.operands) {
      const Node& v = g[o];
      REQUIRE(v.op == Op::view);
      if (g[v.operands[0]].op != Op::input || g[v.operands[0]].name[0] != 'w') continue;
      ++split;
      CHECK(v.view.index.at(0) ==
            IntExpr::index(3) + IntExpr::index(2) * floordiv(IntExpr::var("E"), 4));
    }
  }
  CHECK(split == 3);
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], r.outputs[0].f, 1e-5, 1e-5);
  CHECK(split_reduces(g) == 0);  // done once
}

TEST_CASE("split_reduces: a reduce also read whole, or an output, stays as it is") {
  // softmax's sums and layer norm's statistics are read by divisions, not splitting views.
  for (const char* target : {"ops/nn.toml:softmax", "ops/nn.toml:layernorm"}) {
    test::Run r = test::lowered(target, {{"N", 6}});
    Graph g = r.graph;
    CHECK(split_reduces(g) == 0);
  }
  // The heads split from an input (no reduce to split) leave the graph as it is.
  test::Run packed = test::lowered("tests/regressions/user_kernels.toml:attn_packed_heads",
                                   {{"B", 1}, {"L", 3}, {"E", 8}});
  Graph g = packed.graph;
  CHECK(split_reduces(g) == 0);
}

TEST_CASE("split_reduces: a biased projection is computed as heads with its bias") {
  test::Run r = test::lowered("tests/regressions/user_kernels.toml:mha_bias",
                              {{"B", 2}, {"L", 5}, {"E", 12}});
  Graph g = r.graph;
  CHECK(split_reduces(g) == 3);  // q2, k2, v2: the bias adds, with the reduces they read
  CHECK(verify(g).empty());
  int biases = 0;
  for (const Node& n : g.nodes) {
    if (n.op != Op::view || g[n.operands[0]].op != Op::input || g[n.operands[0]].name[0] != 'b')
      continue;
    // The bias is read at the split position (E / 4)·h + d, not through a layout copy.
    ++biases;
    CHECK(n.view.index.size() == 1);
    CHECK(n.view.index.at(0) ==
          IntExpr::index(3) + IntExpr::index(2) * floordiv(IntExpr::var("E"), 4));
  }
  CHECK(biases == 3);
  int adds = 0;
  for (const Node& n : g.nodes) {  // no reduce is left at the projections' merged shape
    CHECK(!(n.op == Op::reduce && shape_str(n.shape) == "[B, L, E, 1]"));
    // The biased heads are stored without the reduce's kept unit dimension: each head's
    // elements innermost, as the attention kernel's TMA copies take them.
    adds += n.op == Op::add && shape_str(n.shape) == "[B, L, 4, (E / 4)]";
  }
  CHECK(adds == 3);
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 1);
  test::expect_close(got[0], r.outputs[0].f, 1e-5, 1e-5);
}

TEST_CASE("split_reduces: a reduce also read outside the split stays, its reader is split") {
  // The raw projection is an output too: the bias add is computed as heads, reading the
  // projection (kept whole) through a view.
  fs::path spec = fs::temp_directory_path() / "kiln_split_reduces_region.toml";
  std::ofstream(spec) << R"([proj_heads]
in    = { x = "f32[B, L, E]", w = "f32[E, E]", bias = "f32[E]" }
out   = { s = "f32[B, L, 4, E / 4]", raw = "f32[B, L, E]" }
body  = """
raw[b, l, o] = sum(x[b, l, e] * w[o, e], e)
s = reshape(raw + bias, [B, L, 4, E / 4]) * 2.0
"""
)";
  test::Run r = test::lowered(spec.string() + ":proj_heads", {{"B", 2}, {"L", 3}, {"E", 8}});
  fs::remove(spec);
  Graph g = r.graph;
  CHECK(split_reduces(g) == 1);
  CHECK(verify(g).empty());
  int whole = 0, split_adds = 0;
  for (const Node& n : g.nodes) {
    whole += n.op == Op::reduce && shape_str(n.shape) == "[B, L, E, 1]";
    split_adds += n.op == Op::add && shape_str(n.shape) == "[B, L, 4, (E / 4)]";
  }
  CHECK(whole == 1);
  CHECK(split_adds == 1);
  std::vector<Tensor> got = interpret(g, r.sizes, r.inputs);
  REQUIRE(got.size() == 2);
  for (size_t i = 0; i < got.size(); ++i)
    test::expect_close(got[i], r.outputs[i].f, 1e-5, 1e-5);
}
