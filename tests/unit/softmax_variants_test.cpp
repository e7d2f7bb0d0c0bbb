// scheduler/online_softmax's variants of the fused attention kernel for a head known only at
// run time: the lanes rule, the table of lane ranges, the ranges on the tile and in the loop IR.
#include <doctest/doctest.h>

#include "scheduler/cut_kernels.h"
#include "scheduler/online_softmax.h"
#include "scheduler/softmax_tile.h"
#include "tests/support/harness.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
using kiln::test::gpu_cut_options;
using kiln::test::plan_of;

TEST_CASE("cut: a head known at run time: the fused kernel at 64 lanes and at 128, by the head") {
  // The lanes a block computes for a head: 128 for 65-128 (the scores once), else 64.
  CHECK(softmax_tile_lanes(1) == 64);
  CHECK(softmax_tile_lanes(64) == 64);
  CHECK(softmax_tile_lanes(65) == 128);
  CHECK(softmax_tile_lanes(128) == 128);
  CHECK(softmax_tile_lanes(129) == 64);
  KernelPlan att =
      plan_of("ops/nn.toml:attention", {{"B", 1}, {"H", 2}, {"L", 3}, {"S", 4}, {"D", 5}},
              DType::f16, {}, true);
  REQUIRE(cut_kernels(att, gpu_cut_options()).kernels == 1);
  const Kernel& k = att.kernels[0];
  // D symbolic: 64 lanes when compiling, and the head a launch chooses by.
  std::optional<IntExpr> head = softmax_launch_head(att, k);
  REQUIRE(head);
  CHECK(head->eval({{"D", 100}}) == 100);
  CHECK(softmax_tile_shape(att, k).lanes == 64);
  LoopNest nest = softmax_contraction_nest(att, k, softmax_tile_shape(att, k));
  REQUIRE(find_softmax_tile(nest));
  CHECK(find_softmax_tile(nest)->tile_lanes == 64);
  SoftmaxTileShape wide = softmax_tile_shape(att, k);
  wide.lanes = 128;
  CHECK(find_softmax_tile(softmax_contraction_nest(att, k, wide))->tile_lanes == 128);
  CHECK(softmax_lanes_symbol("kiln_attention_0", 128) == "kiln_attention_0_l128");
  // The variants: 64 lanes launched at heads up to 64, 128 at 65 to 128 (the kernel itself, 64
  // lanes for any head, above). k's head is v's (the same D), so what the head decides is known
  // when compiling each; the loop IR says so.
  const std::vector<SoftmaxLaneVariant>& lv = softmax_lane_variants();
  REQUIRE(lv.size() == 2);
  CHECK((lv[0].lanes == 64 && lv[0].min_lanes == 0 && lv[0].max_lanes == 64));
  CHECK((lv[1].lanes == 128 && lv[1].min_lanes == 65 && lv[1].max_lanes == 128));
  for (const SoftmaxLaneVariant& v : lv)
    for (int64_t lanes : {v.min_lanes, v.max_lanes})
      CHECK(softmax_tile_lanes(lanes) == v.lanes);  // the choice for a head known when compiling
  CHECK(softmax_head_is_lanes(att, k));
  SoftmaxTileShape variant = softmax_variant_shape(att, k, softmax_tile_shape(att, k), lv[1]);
  CHECK(variant.lanes == 128);
  CHECK(variant.head_min == 65);
  CHECK(variant.head_max == 128);
  LoopNest wide_nest = softmax_contraction_nest(att, k, variant);
  CHECK(find_softmax_tile(wide_nest)->head_max == 128);
  CHECK(loop_nest_to_text(wide_nest).find("; launched for heads of 65 to 128 only") !=
        std::string::npos);
  CHECK(loop_nest_to_text(nest).find("launched for heads") == std::string::npos);
  LoopNest short_nest = softmax_contraction_nest(
      att, k, softmax_variant_shape(att, k, softmax_tile_shape(att, k), lv[0]));
  CHECK(find_softmax_tile(short_nest)->tile_lanes == 64);
  CHECK(loop_nest_to_text(short_nest).find("; launched for heads of 0 to 64 only") !=
        std::string::npos);
  // Where k's head is another size than v's, the lanes say nothing of it.
  Kernel other_head = k;
  const int scores = find_softmax_contraction(att, k, 0)->statement(1);
  other_head.statements[scores].extents.back() = IntExpr::var("E");
  REQUIRE(is_softmax_contraction_kernel(att, other_head));
  CHECK_FALSE(softmax_head_is_lanes(att, other_head));
  CHECK(
      softmax_variant_shape(att, other_head, softmax_tile_shape(att, other_head), lv[1]).head_max ==
      0);
  // A head known when compiling (--specialize, a fixed head): its lanes, no choice at launch.
  for (int d : {128, 64, 256}) {
    CAPTURE(d);
    Kernel fixed = k;
    for (Statement& s : fixed.statements)
      for (IntExpr& e : s.extents)
        if (e == IntExpr::var("D")) e = IntExpr(d);
    REQUIRE(is_softmax_contraction_kernel(att, fixed));
    CHECK_FALSE(softmax_launch_head(att, fixed));
    CHECK(softmax_tile_shape(att, fixed).lanes == softmax_tile_lanes(d));
  }
  // Not a fused attention kernel: no head.
  KernelPlan mm =
      plan_of("ops/nn.toml:matmul", {{"M", 3}, {"K", 4}, {"N", 5}}, DType::f16, {}, true);
  cut_kernels(mm, gpu_cut_options());
  CHECK_FALSE(softmax_launch_head(mm, mm.kernels[0]));
  CHECK(find_softmax_tile(LoopNest{}) == nullptr);
}
