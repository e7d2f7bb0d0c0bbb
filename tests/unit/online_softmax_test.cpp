// scheduler/online_softmax and softmax_tile through the kernel cut: attention, in the layouts
// and variants users write it, forming one online-softmax kernel on the GPU (and where it must
// not), the tile shape it gets, and the score scale folded into the exponent.
#include <doctest/doctest.h>

#include <cctype>
#include <functional>

#include "ir/mma.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/online_softmax.h"
#include "scheduler/softmax_tile.h"
#include "tests/support/harness.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
using kiln::test::check_order;
using kiln::test::cpu_cut_options;
using kiln::test::gpu_cut_options;
using kiln::test::plan_of;

TEST_CASE("cut: on the GPU attention read through a permute and a reshape stays one kernel") {
  // Attention's [B, H, L, D] output with its heads merged, [B, L, 32·H]: the copy that reads
  // o[b, c / 32, l, c % 32] walks o's element instead and writes y[b, l, 32·h + d], the fused
  // kernel's epilogue. The same where q, k and v are slices of a projection computed beside
  // it (a kernel of its own before), and for GPT-2's batch of one.
  const CutOptions opt = gpu_cut_options();
  const std::string file = "tests/regressions/attention_variants.toml:";
  KernelPlan merged = plan_of(file + "attn_merge_heads", {{"B", 2}, {"H", 3}, {"L", 5}, {"S", 7}},
                              DType::f16, {}, true);
  CHECK(cut_kernels(merged, opt).kernels == 1);
  check_order(merged);
  const Kernel& k = merged.kernels.at(0);
  REQUIRE(is_softmax_contraction_kernel(merged, k));
  const Statement& o = k.statements.at(7);
  const Statement& y = k.statements.back();
  CHECK(merged.buffers[y.buffer].name == "y");
  CHECK(y.extents == std::vector<IntExpr>(o.extents.begin(), o.extents.end() - 1));
  // o walks (b, h, l, d, j): y[b, l, 32·h + d] reads o at its element.
  REQUIRE(y.index.size() == 3);
  CHECK(y.index[2] == 32 * IntExpr::var("i1") + IntExpr::var("i3"));
  std::vector<const ScalarExpr*> loads;
  collect_loads(*y.value, loads);
  REQUIRE(loads.size() == 1);
  CHECK(loads[0]->index == o.index);

  KernelPlan projected =
      plan_of(file + "attn_qkv_projection", {{"B", 2}, {"S", 5}, {"C", 64}}, DType::f16, {}, true);
  CHECK(cut_kernels(projected, opt).kernels == 2);
  check_order(projected);
  CHECK(is_softmax_contraction_kernel(projected, projected.kernels.at(1)));

  KernelPlan one = plan_of(file + "attn_batch_of_one", {{"S", 5}, {"C", 64}}, DType::f16, {}, true);
  CHECK(cut_kernels(one, opt).kernels == 1);
  CHECK(is_softmax_contraction_kernel(one, one.kernels.at(0)));

  // A copy of part of the output is not its element: the heads merged and sliced stay apart.
  KernelPlan sliced = plan_of(file + "attn_merge_heads", {{"B", 2}, {"H", 3}, {"L", 5}, {"S", 7}},
                              DType::f16, {}, true);
  Kernel& before = sliced.kernels.at(0);
  Statement& copy = before.statements.back();
  REQUIRE(copy.kind == Statement::Kind::assign);
  copy.extents.back() = copy.extents.back() - 32;  // y[b, l, c] for c < 32·H - 32 only
  CHECK(gather_softmax_contractions(sliced, before) == 0);
  CHECK_FALSE(find_softmax_contraction(sliced, before, 0));
}

TEST_CASE("cut: attention on heads split from a feature axis by a size is one kernel") {
  // q, k, v: [B, L, E] read as [B, L, H, E / H] by a reshape, the result merged back to
  // [B, L, E]: the reads `q[b, i, (E / H)·h + d]` multiply an iterator by a size, so each input
  // is read through an alias of its buffer with E split ([B, L, H, E / H], a window from its
  // first element), and y is written through one at the output's element; no layout copy.
  const std::string file = "tests/regressions/user_kernels.toml:attn_packed_heads";
  KernelPlan plan = plan_of(file, {{"B", 2}, {"L", 17}, {"E", 32}}, DType::f16, {}, true);
  std::map<std::string, const Buffer*> windows;
  for (const Buffer& b : plan.buffers) {
    CHECK(b.name.rfind("l", 0) != 0);  // no layout copy of a view
    if (b.window_of < 0) continue;
    windows[plan.buffers[b.window_of].name] = &b;
    CHECK(b.window_offset == IntExpr(0));
    CHECK(b.arg == plan.buffers[b.window_of].arg);
    CHECK(shape_str(b.shape) == "[B, L, 4, (E / 4)]");
  }
  CHECK(windows.size() == 4);  // q, k, v and y
  for (const Statement& s : plan.kernels.at(0).statements) {
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      for (const IntExpr& i : l->index)
        CHECK(i.is_affine());
    for (const IntExpr& i : s.index)
      CHECK(i.is_affine());
  }
  CHECK(cut_kernels(plan, gpu_cut_options()).kernels == 1);
  check_order(plan);
  const Kernel& k = plan.kernels.at(0);
  REQUIRE(is_softmax_contraction_kernel(plan, k));
  CHECK(plan.buffers[k.statements.back().buffer].window_of >= 0);

  // The heads split from projections computed beside the attention: each projection is
  // computed in the split shape (scheduler/split_reduces.h), reading its weight through a
  // split alias, and stored in f16 too for the tensor cores; the attention is one kernel.
  KernelPlan mha = plan_of("tests/regressions/user_kernels.toml:mha_projections",
                           {{"B", 2}, {"L", 17}, {"E", 32}}, DType::f16, {}, true);
  int windows_of_weights = 0, layout_copies = 0;
  for (const Buffer& b : mha.buffers) {
    layout_copies += b.name[0] == 'l' && std::isdigit(static_cast<unsigned char>(b.name[1]));
    windows_of_weights += b.window_of >= 0 && mha.buffers[b.window_of].name[0] == 'w';
  }
  CHECK(windows_of_weights == 3);  // wq, wk, wv
  CHECK(layout_copies == 1);       // the merged heads the output projection reads
  cut_kernels(mha, gpu_cut_options());
  check_order(mha);
  int fused = 0;
  for (const Kernel& k : mha.kernels)
    if (is_softmax_contraction_kernel(mha, k)) {
      ++fused;
      const Statement& scores = k.statements.at(1);
      std::vector<const ScalarExpr*> loads;
      collect_loads(*scores.value, loads);
      REQUIRE(loads.size() == 2);
      for (const ScalarExpr* l : loads)
        CHECK(mha.buffers[l->buffer].dtype == DType::f16);
    }
  CHECK(fused == 1);

  // A head that is a size of its own, the output merged by a reshape: the same one kernel.
  KernelPlan merged =
      plan_of("tests/regressions/attention_variants.toml:attn_merge_heads_sized",
              {{"B", 2}, {"H", 3}, {"L", 5}, {"S", 7}, {"D", 16}}, DType::f16, {}, true);
  CHECK(cut_kernels(merged, gpu_cut_options()).kernels == 1);
  CHECK(is_softmax_contraction_kernel(merged, merged.kernels.at(0)));
}

TEST_CASE("cut: on the GPU attention in f16 and bf16 is one kernel with an online softmax") {
  const CutOptions opt = gpu_cut_options();
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 3}, {"S", 4}, {"D", 5}};
  for (DType t : {DType::f16, DType::bf16})
    for (bool causal : {false, true}) {
      CAPTURE(dtype_name(t));
      CAPTURE(causal);
      KernelPlan att =
          plan_of("ops/nn.toml:attention", sizes, t, {{"causal", test::attr_bool(causal)}}, true);
      CutCount n = cut_kernels(att, opt);
      check_order(att);
      REQUIRE(n.kernels == 1);
      CHECK(n.materialized == 0);
      const Kernel& k = att.kernels[0];
      REQUIRE(is_softmax_contraction_kernel(att, k));
      std::optional<SoftmaxContraction> f = find_softmax_contraction(att, k, 0);
      REQUIRE(f);
      CHECK(f->row_factors.size() == 1);  // 1 / the row sum
      CHECK(f->a != f->b);
      // One block loop around the tile, whose body names every statement once, in order.
      LoopNest nest = softmax_contraction_nest(att, k, SoftmaxTileShape{});
      REQUIRE(nest.root->kind == LoopNode::Kind::loop);
      CHECK(nest.root->mapping == Mapping::block_x);
      const LoopNode& tile = *nest.root->body.at(0);
      CHECK(tile.key_block == 64);
      REQUIRE(tile.body.size() == k.statements.size());
      for (size_t s = 0; s < tile.body.size(); ++s)
        CHECK(tile.body[s]->statement == static_cast<int>(s));
      // mma.sync per warp unless the target has warpgroup instructions: then both products are
      // wgmma, the scores' m64n64k16 the tile's entry.
      CHECK(tile.mma == nullptr);
      SoftmaxTileShape wide;
      wide.warpgroup = true;
      LoopNest wg = softmax_contraction_nest(att, k, wide);
      const LoopNode& wg_tile = *wg.root->body.at(0);
      REQUIRE(wg_tile.mma != nullptr);
      CHECK(wg_tile.mma == find_warpgroup_mma(t, t, DType::f32, 64));
      CHECK(loop_nest_to_text(wg).find("; warpgroup products m64n64k16." +
                                       std::string(t == DType::bf16 ? "bf16" : "f16")) !=
            std::string::npos);
      CHECK(wg_tile.staged.empty());  // the cp.async copies, two stages
      CHECK(wg_tile.stages == 2);
      // With the TMA: k and v each copied as boxes of 64 keys by 64 of the head or the lanes
      // (innermost first), 1 along b and h (the pipeline's coalesced [0, b·h, j, d] folds its
      // leading 0: the codegen golden's record); three stages; the kernel's maps are theirs.
      wide.tma = true;
      LoopNest tma = softmax_contraction_nest(att, k, wide);
      const LoopNode& tma_tile = *tma.root->body.at(0);
      REQUIRE(tma_tile.staged.size() == 2);
      for (const StagedOperand& o : tma_tile.staged) {
        CHECK(o.tma_box == std::vector<int64_t>{64, 64, 1, 1});
        CHECK(o.tma_fold == 0);
        CHECK(o.tma_k_dim == 2);
        CHECK(o.tma_x_dim == 3);
        CHECK(o.swizzle == 128);
      }
      CHECK(tma_tile.staged[0].tma_buffer == f->b->buffer);
      CHECK(tma_tile.staged[1].tma_buffer == f->v->buffer);
      CHECK(tma_tile.stages == 3);
      CHECK(tensor_maps_of(tma).size() == 2);
      CHECK(loop_nest_to_text(tma).find("; 3 stages of keys and values; keys, by the TMA in boxes "
                                        "of 64x64x1x1; values, by the TMA in boxes of 64x64x1x1") !=
            std::string::npos);
      // Neither q (it moves with the rows) nor k walked along the lanes is a key block's box.
      StagedOperand none;
      CHECK_FALSE(plan_softmax_tma(att, *f->a, *tma_tile.body[1], "c4", t, none));
      CHECK_FALSE(plan_softmax_tma(att, *f->b, *tma_tile.body[1], "c2", t, none));
      CHECK_FALSE(plan_softmax_tma(att, *f->b, *tma_tile.body[1], "c4",
                                   t == DType::f16 ? DType::bf16 : DType::f16, none));
      CHECK(none.tma_box.empty());
    }
  // In f32 the products do not run on tensor cores: scores, softmax and weighted sum.
  KernelPlan f32 = plan_of("ops/nn.toml:attention", sizes, DType::f32, {}, true);
  CHECK(cut_kernels(f32, opt).kernels == 3);
  // A statement reading the scores, or a weight that is not an exponential of X - max, is not
  // an online softmax.
  KernelPlan att = plan_of("ops/nn.toml:attention", sizes, DType::f16, {}, true);
  REQUIRE(find_softmax_contraction(att, att.kernels[0], 0));
  Kernel reads = att.kernels[0];
  Statement extra = reads.statements[3];  // the row max, again, into the output
  extra.kind = Statement::Kind::assign;
  extra.buffer = reads.statements.back().buffer;
  extra.index = reads.statements.back().index;
  extra.extents = reads.statements.back().extents;
  reads.statements.push_back(extra);
  CHECK_FALSE(find_softmax_contraction(att, reads, 0));
  Kernel linear = att.kernels[0];
  linear.statements[5].value = linear.statements[3].value;  // l += X
  CHECK_FALSE(find_softmax_contraction(att, linear, 0));
  // exp2(C · (X - m)) with C < 0: m no longer bounds the weights, and a masked score's weight is
  // infinite, not 0.
  Kernel negative = att.kernels[0];
  const ScalarExpr& w = *negative.statements[5].value;  // exp2(mul(add(X, neg(m)), C))
  REQUIRE(w.op == Op::exp2);
  auto product = std::make_shared<ScalarExpr>(*w.args[0]);
  REQUIRE(product->op == Op::mul);
  for (ScalarExprPtr& a : product->args)
    if (a->kind == ScalarExpr::Kind::constant) {
      auto flipped = std::make_shared<ScalarExpr>(*a);
      flipped->value = -flipped->value;
      a = flipped;
    }
  auto flipped_w = std::make_shared<ScalarExpr>(w);
  flipped_w->args[0] = product;
  negative.statements[5].value = flipped_w;
  CHECK_FALSE(find_softmax_contraction(att, negative, 0));
}

TEST_CASE("cut: causal attention over a bounded domain is one online-softmax kernel on the GPU") {
  const CutOptions opt = gpu_cut_options();
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 5}, {"D", 4}};
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(dtype_name(t));
    KernelPlan att = plan_of("ops/nn.toml:causal_attention", sizes, t, {}, true);
    CutCount n = cut_kernels(att, opt);
    REQUIRE(n.kernels == 1);
    const Kernel& k = att.kernels[0];
    REQUIRE(is_softmax_contraction_kernel(att, k));
    std::optional<SoftmaxContraction> f = find_softmax_contraction(att, k, 0);
    REQUIRE(f);
    REQUIRE(f->domain.size() == 1);  // j <= r: r - j >= 0 over the max's iterators
    const std::string r = iterator_name(f->n - 2), j = iterator_name(f->n - 1);
    CHECK(affine_coefficient(f->domain[0], r) == std::optional<int64_t>(1));
    CHECK(affine_coefficient(f->domain[0], j) == std::optional<int64_t>(-1));
    CHECK(f->row_factors.empty());  // the division by the row sum is the epilogue's
    CHECK(f->end == static_cast<int>(k.statements.size()));
  }
  KernelPlan att = plan_of("ops/nn.toml:causal_attention", sizes, DType::f16, {}, true);
  cut_kernels(att, opt);
  const Kernel& k = att.kernels[0];
  // The four updates must share the bounds: one over the whole box is another reduction.
  Kernel unbounded_sum = k;
  unbounded_sum.statements[5].domain.clear();
  CHECK_FALSE(find_softmax_contraction(att, unbounded_sum, 0));
  Kernel other_bound = k;
  other_bound.statements[7].domain[0] = other_bound.statements[7].domain[0] + IntExpr(1);
  CHECK_FALSE(find_softmax_contraction(att, other_bound, 0));
  // A bound on the head (the scores' reduced iterator) is not a bound over (r, j).
  Kernel head_bound = k;
  head_bound.statements[1].domain.push_back(
      IntExpr::var(iterator_name(k.statements[1].extents.size() - 1)));
  CHECK_FALSE(find_softmax_contraction(att, head_bound, 0));
  // The epilogue may read the row sum at its row only.
  Kernel shifted = k;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*k.statements[8].value, loads);
  bool reads_sum = false;
  for (const ScalarExpr* l : loads)
    reads_sum |= l->buffer == k.statements[5].buffer;
  CHECK(reads_sum);
  Statement extra = shifted.statements[8];
  auto sum_elsewhere = std::make_shared<ScalarExpr>();
  sum_elsewhere->kind = ScalarExpr::Kind::load;
  sum_elsewhere->buffer = k.statements[5].buffer;
  sum_elsewhere->index = k.statements[5].index;
  sum_elsewhere->index[2] = sum_elsewhere->index[2] + IntExpr(1);
  sum_elsewhere->dtype = DType::f32;
  auto product = std::make_shared<ScalarExpr>();
  product->kind = ScalarExpr::Kind::op;
  product->op = Op::mul;
  product->dtype = DType::f32;
  product->args = {k.statements[8].value, sum_elsewhere};
  extra.value = product;
  shifted.statements.push_back(extra);
  CHECK_FALSE(find_softmax_contraction(att, shifted, 0));
}

TEST_CASE("cut: attention on [B, L, H, D] tensors and grouped-query heads are online softmaxes") {
  const CutOptions opt = gpu_cut_options();
  const char* const file = "tests/regressions/attention_variants.toml:";
  const SizeBindings sizes = {{"B", 2}, {"H", 4}, {"G", 2}, {"L", 3}, {"S", 5}, {"D", 6}};
  // y[b, i, h, d]: the output's statements walk (b, r, h, c); the tile's binds them in that
  // order, the scores' in theirs.
  KernelPlan blhd = plan_of(std::string(file) + "attn_blhd", sizes, DType::f16, {}, true);
  REQUIRE(cut_kernels(blhd, opt).kernels == 1);
  const Kernel& k = blhd.kernels[0];
  std::optional<SoftmaxContraction> f = find_softmax_contraction(blhd, k, 0);
  REQUIRE(f);
  REQUIRE(f->n == 4);
  CHECK(f->out_axes == std::vector<int>{0, 2, 1, 3, 4});  // b, r, h, c, j
  LoopNest nest = softmax_contraction_nest(blhd, k, SoftmaxTileShape{});
  const LoopNode& tile = *nest.root->body.at(0);
  const LoopNode &score = *tile.body.at(1), &out = *tile.body.at(7);
  REQUIRE(score.args.size() == 5);
  REQUIRE(out.args.size() == 5);
  CHECK(loop_expr_to_text(*out.args[1]) == "c1");                               // the row
  CHECK(loop_expr_to_text(*out.args[3]) == "c2");                               // the lane
  CHECK(loop_expr_to_text(*out.args[4]) == "c3");                               // the key
  CHECK(loop_expr_to_text(*out.args[2]) == loop_expr_to_text(*score.args[1]));  // h, the block's
  CHECK(loop_expr_to_text(*out.args[0]) == loop_expr_to_text(*score.args[0]));  // b
  // k[b, j, h, d] and v[b, j, h, c]: boxes of 64 keys by 64 of the head or lanes, 1 along h
  // and b (innermost first), read in place by the TMA.
  SoftmaxTileShape tma_shape;
  tma_shape.warpgroup = tma_shape.tma = true;
  LoopNest by_tma = softmax_contraction_nest(blhd, k, tma_shape);
  const LoopNode& blhd_tile = *by_tma.root->body.at(0);
  REQUIRE(blhd_tile.staged.size() == 2);
  CHECK(blhd_tile.staged[0].tma_box == std::vector<int64_t>{64, 1, 64, 1});
  CHECK(blhd_tile.staged[1].tma_box == std::vector<int64_t>{64, 1, 64, 1});
  CHECK(blhd_tile.staged[0].tma_k_dim == 1);

  // k[b, h / 2, j, d]: read in place (a quotient of a batch iterator, which isl sees exactly),
  // no layout copy, one kernel.
  KernelPlan gqa = plan_of(std::string(file) + "attn_gqa", sizes, DType::f16, {}, true);
  CutCount n = cut_kernels(gqa, opt);
  check_order(gqa);
  REQUIRE(n.kernels == 1);
  CHECK(is_softmax_contraction_kernel(gqa, gqa.kernels[0]));

  // An assignment among the eight that depends on none of them (a layout copy) moves before
  // them; one that reads what they write stays, and nothing forms.
  KernelPlan att = plan_of("ops/nn.toml:attention", sizes, DType::f16, {}, true);
  REQUIRE(find_softmax_contraction(att, att.kernels.at(0), 0));
  Buffer copy_buffer = att.buffers[0];  // q's shape, a temp
  copy_buffer.name = "copy";
  copy_buffer.kind = BufferKind::temp;
  copy_buffer.arg = -1;
  att.buffers.push_back(copy_buffer);
  Statement copy;
  copy.kind = Statement::Kind::assign;
  copy.extents = copy_buffer.shape;
  copy.buffer = static_cast<int>(att.buffers.size()) - 1;
  for (size_t d = 0; d < copy.extents.size(); ++d)
    copy.index.push_back(IntExpr::var(iterator_name(static_cast<int>(d))));
  auto q_load = std::make_shared<ScalarExpr>();
  q_load->kind = ScalarExpr::Kind::load;
  q_load->buffer = 0;
  q_load->dtype = att.buffers[0].dtype;
  q_load->index = copy.index;
  copy.value = q_load;
  Kernel among = att.kernels[0];
  among.statements.insert(among.statements.begin() + 6, copy);
  CHECK_FALSE(find_softmax_contraction(att, among, 0));
  CHECK(gather_softmax_contractions(att, among) == 1);
  CHECK(among.statements[0].buffer == copy.buffer);
  CHECK(find_softmax_contraction(att, among, 1));
  Kernel dependent = att.kernels[0];
  Statement reads_max = copy;  // reads the row maxima, written among the eight
  reads_max.value = dependent.statements[5].value;
  reads_max.extents = dependent.statements[5].extents;
  reads_max.index.resize(reads_max.extents.size(), IntExpr(0));
  dependent.statements.insert(dependent.statements.begin() + 6, reads_max);
  CHECK(gather_softmax_contractions(att, dependent) == 0);

  // A gate on the values (g[b, h, j]) is a factor along the keys only, a dropout mask on the
  // weights (keep[b, h, i, j]) one along the rows and keys: both scale the weights P·V reads,
  // not the row sum.
  for (const char* name : {"attn_vexpr", "attn_dropout"}) {
    CAPTURE(name);
    KernelPlan p = plan_of(std::string(file) + name, sizes, DType::f16, {}, true);
    REQUIRE(cut_kernels(p, opt).kernels == 1);
    std::optional<SoftmaxContraction> g = find_softmax_contraction(p, p.kernels[0], 0);
    REQUIRE(g);
    const bool gate = std::string(name) == "attn_vexpr";
    CHECK(g->key_factors.size() == (gate ? 1u : 0u));
    CHECK(g->weight_factors.size() == (gate ? 0u : 1u));
    const ScalarExpr* factor = gate ? g->key_factors.at(0) : g->weight_factors.at(0);
    std::vector<const ScalarExpr*> reads;
    collect_loads(*factor, reads);
    REQUIRE(reads.size() == 1);
    CHECK(p.buffers[reads[0]->buffer].name == (gate ? "g" : "keep"));
  }
}

TEST_CASE("cut: a positive invariant scale of the scores is found for the exponent's constant") {
  const CutOptions opt = gpu_cut_options();
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 64}, {"S", 64}, {"D", 16}, {"W", 8}};
  const std::string file = "tests/regressions/attention_variants.toml:";
  // The scale 1 / sqrt(D) (or a division by sqrt(D)), alone or under a mask's where: folded.
  // Added to a bias, under a soft cap or beside an ALiBi term: the scores are not k · X'.
  const std::vector<std::pair<std::string, bool>> cases = {
      {"ops/nn.toml:attention", true},  {"ops/nn.toml:causal_attention", true},
      {file + "attn_mask", true},       {file + "attn_window", true},
      {file + "attn_softmax_op", true}, {file + "attn_bias", false},
      {file + "attn_softcap", false},   {file + "attn_alibi", false}};
  for (const auto& [name, folds] : cases) {
    for (bool causal : {false, true}) {
      if (causal && name != "ops/nn.toml:attention") continue;
      CAPTURE(name);
      CAPTURE(causal);
      std::map<std::string, AttrValue> attrs;
      if (name == "ops/nn.toml:attention") attrs["causal"] = test::attr_bool(causal);
      KernelPlan p = plan_of(name, sizes, DType::f16, attrs, true);
      REQUIRE(cut_kernels(p, opt).kernels == 1);
      std::optional<SoftmaxContraction> f = find_softmax_contraction(p, p.kernels[0], 0);
      REQUIRE(f);
      CHECK((f->scaled_score != nullptr) == folds);
      if (!folds) continue;
      REQUIRE(f->score_scale.size() == 1);
      CHECK(f->score_scale[0]->kind == ScalarExpr::Kind::op);  // recip(sqrt(cast(D)))
      std::vector<const ScalarExpr*> factors = {f->scaled_score->args[0].get(),
                                                f->scaled_score->args[1].get()};
      CHECK(std::count(factors.begin(), factors.end(), f->score_scale[0]) == 1);
    }
  }
  // A negative scale reverses the maximum, a scale read from memory has no known sign: the
  // scores stay X.
  KernelPlan att = plan_of("ops/nn.toml:attention", sizes, DType::f16, {}, true);
  REQUIRE(cut_kernels(att, opt).kernels == 1);
  std::optional<SoftmaxContraction> f = find_softmax_contraction(att, att.kernels[0], 0);
  REQUIRE(f);
  REQUIRE(f->scaled_score);
  // The scale, recip(sqrt(cast(D))), replaced in the values of the max, the sum and the output.
  std::function<ScalarExprPtr(const ScalarExprPtr&, const ScalarExprPtr&)> swap =
      [&](const ScalarExprPtr& e, const ScalarExprPtr& k) -> ScalarExprPtr {
    if (e->kind == ScalarExpr::Kind::op && e->op == Op::recip && !varies(*e)) return k;
    auto copy = std::make_shared<ScalarExpr>(*e);
    for (ScalarExprPtr& a : copy->args)
      a = swap(a, k);
    return copy;
  };
  auto with_scale = [&](const ScalarExprPtr& k) {
    Kernel changed = att.kernels[0];
    for (int st : {3, 5, 7})
      changed.statements[f->statement(st)].value =
          swap(changed.statements[f->statement(st)].value, k);
    return find_softmax_contraction(att, changed, 0);
  };
  auto negative = std::make_shared<ScalarExpr>();
  negative->kind = ScalarExpr::Kind::constant;
  negative->dtype = DType::f16;
  negative->value = -0.125;
  auto positive = std::make_shared<ScalarExpr>(*negative);
  positive->value = 0.125;
  auto read = std::make_shared<ScalarExpr>();
  read->kind = ScalarExpr::Kind::load;
  read->dtype = DType::f16;
  read->buffer = f->a->buffer;
  read->index.assign(f->a->index.size(), IntExpr(0));  // q[0, 0, 0, 0]
  for (const auto& [k, folds] : std::vector<std::pair<ScalarExprPtr, bool>>{
           {positive, true}, {negative, false}, {read, false}}) {
    std::optional<SoftmaxContraction> g = with_scale(k);
    REQUIRE(g);
    CHECK((g->scaled_score != nullptr) == folds);
  }
}

TEST_CASE("cut: softmax weights recomputed per output lane are found, and only then") {
  const CutOptions opt = gpu_cut_options();
  const SizeBindings sizes = {{"B", 1}, {"H", 2}, {"L", 3}, {"S", 4}, {"D", 5}};
  // Values scaled per row and lane: no online softmax, and P·V, with the weights inline for
  // one, recomputes them for every lane.
  KernelPlan gated = plan_of("tests/regressions/attention_variants.toml:attn_row_lane_scale", sizes,
                             DType::f16, {}, true);
  cut_kernels(gated, opt);
  bool recomputed = false;
  for (const Kernel& k : gated.kernels)
    recomputed = recomputed || recomputes_softmax_weights(gated, k);
  CHECK(recomputed);
  // Planned without the online softmax, the weights are stored.
  KernelPlan stored = plan_of("tests/regressions/attention_variants.toml:attn_row_lane_scale",
                              sizes, DType::f16, {}, false);
  cut_kernels(stored, opt);
  for (const Kernel& k : stored.kernels)
    CHECK_FALSE(recomputes_softmax_weights(stored, k));
  // The fused attention and a plain softmax recompute nothing.
  for (const char* target : {"ops/nn.toml:attention", "ops/nn.toml:softmax"}) {
    CAPTURE(target);
    KernelPlan p = plan_of(target, {{"B", 1}, {"H", 2}, {"L", 3}, {"S", 4}, {"D", 5}, {"N", 7}},
                           DType::f16, {}, true);
    cut_kernels(p, opt);
    for (const Kernel& k : p.kernels)
      CHECK_FALSE(recomputes_softmax_weights(p, k));
  }
}
