// scheduler/cut_kernels, schedule_cache and plan_buffers across kernels: where a plan is cut,
// what crosses a cut, which kernels share a schedule and which temps share a slot.
#include <doctest/doctest.h>

#include "scheduler/build_statements.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/plan_buffers.h"
#include "scheduler/schedule_cache.h"
#include "scheduler/store_shared.h"
#include "tests/support/harness.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
using kiln::test::check_order;
using kiln::test::cpu_cut_options;
using kiln::test::gpu_cut_options;
using kiln::test::plan_of;

namespace {

const char* const kStacked = "tests/regressions/stacked_layernorm.toml:stacked_layernorm_8";

}  // namespace

TEST_CASE("cut: 8 stacked layer normalisations become kernels within the budget, in order") {
  KernelPlan plan = plan_of(kStacked);
  REQUIRE(plan.kernels.size() == 1);
  size_t before = plan.kernels[0].statements.size();
  CutOptions opt;
  CutCount n = cut_kernels(plan, opt);
  CHECK(n.kernels == static_cast<int>(plan.kernels.size()));
  CHECK(n.kernels > 1);
  // The value planner stores each block's normalised value (read three times), so the cuts,
  // which fall after every second block, find nothing more to store.
  CHECK(n.materialized == 0);
  size_t total = 0;
  for (const Kernel& k : plan.kernels) {
    CHECK(k.statements.size() <= static_cast<size_t>(opt.max_statements) + 1);
    total += k.statements.size();
    for (size_t s = 0; s < k.statements.size(); ++s)
      CHECK(k.statements[s].name == "S" + std::to_string(s));
  }
  CHECK(total == before + n.materialized);
  check_order(plan);
  // Without the stores, a later kernel would reload the input and recompute every block.
  int x = 0;
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (plan.buffers[b].name == "x") x = static_cast<int>(b);
  for (size_t k = 1; k < plan.kernels.size(); ++k) {
    const auto& used = plan.kernels[k].buffers;
    CHECK(std::find(used.begin(), used.end(), x) == used.end());
  }
}

TEST_CASE("cut: fusion that pays stays one kernel") {
  for (const char* target : {"ops/nn.toml:softmax", "ops/nn.toml:layernorm", "ops/nn.toml:rmsnorm",
                             "ops/nn.toml:log_softmax"}) {
    CAPTURE(target);
    KernelPlan plan = plan_of(target);
    CutCount n = cut_kernels(plan, CutOptions{});
    CHECK(n.kernels == 1);
    CHECK(n.materialized == 0);
  }
}

TEST_CASE("cut: a GPU-style cut after every completed reduction") {
  KernelPlan plan = plan_of("ops/nn.toml:layernorm");
  CutOptions opt;
  opt.cut_after_reductions = true;
  CutCount n = cut_kernels(plan, opt);
  // mean | variance | output: never between a reduction's init and its update
  REQUIRE(n.kernels == 3);
  for (const Kernel& k : plan.kernels) {
    const Statement& last = k.statements.back();
    CHECK(last.kind != Statement::Kind::reduce_init);
  }
  CHECK(plan.kernels[0].statements[0].kind == Statement::Kind::reduce_init);
  CHECK(plan.kernels[0].statements[1].kind == Statement::Kind::reduce_update);
  check_order(plan);
}

TEST_CASE("cut: on the GPU sums across rows and statements row by row take separate kernels") {
  // Rows centred by their mean, then column sums over the rows (a layer norm's backward, the
  // sums written `sum(t, axis=0)`: their domain leads with the rows they sum over): fused, the
  // kernel's only parallel loop would be the rows the column sums run over, and it ran on one
  // thread.
  KernelPlan plan = plan_of("tests/regressions/column_reductions.toml:row_centered_column_sums",
                            {{"M", 5}, {"N", 7}}, DType::f32, {}, true);
  cut_kernels(plan, gpu_cut_options());
  check_order(plan);
  auto writes_rows = [&](const Statement& s) {
    return plan.buffers[s.buffer].name != "db" && plan.buffers[s.buffer].name != "dg";
  };
  int column_kernels = 0;
  for (const Kernel& k : plan.kernels) {
    bool rows = false, columns = false;
    for (const Statement& s : k.statements)
      (writes_rows(s) ? rows : columns) = true;
    CHECK_FALSE((rows && columns));
    column_kernels += columns;
  }
  CHECK(column_kernels == 1);  // db and dg together
}

TEST_CASE("cut: on the GPU statistics read at other elements of their row get a kernel") {
  // A group norm: its mean and variance are [B, G], read by the normalisation by channel at
  // c / (C / G). Fused, the kernel would run one block an image and the G groups in a loop
  // inside it; cut, the statistics run a block a group. The variance stays with the mean it
  // reads at its own element, and the normalisation's value is computed where it is written,
  // not stored at the cut and copied.
  KernelPlan plan = plan_of("tests/regressions/user_kernels.toml:group_norm",
                            {{"B", 2}, {"C", 8}, {"P", 5}}, DType::f32, {}, true);
  CutCount n = cut_kernels(plan, gpu_cut_options());
  check_order(plan);
  CHECK(n.materialized == 0);
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].statements.size() == 4);  // the mean's and the variance's sums
  for (const Statement& s : plan.kernels[0].statements)
    CHECK(plan.buffers[s.buffer].kind == BufferKind::temp);
  REQUIRE(plan.kernels[1].statements.size() == 1);
  CHECK(plan.buffers[plan.kernels[1].statements[0].buffer].name == "y");
  // Softmax's normalisation reads its row's sums at its own element: it stays fused.
  KernelPlan softmax = plan_of("tests/regressions/user_kernels.toml:softmax_dim1",
                               {{"B", 2}, {"C", 8}, {"P", 5}}, DType::f32, {}, true);
  cut_kernels(softmax, gpu_cut_options());
  CHECK(softmax.kernels.size() == 1);
}

TEST_CASE("cut: on the GPU a contraction gets a kernel of its own, its epilogue stays with it") {
  const CutOptions opt = gpu_cut_options();
  // Attention in f32 (no fused online softmax): scores | the row's softmax | weighted sum.
  KernelPlan att =
      plan_of("ops/nn.toml:attention", {{"B", 1}, {"H", 2}, {"L", 3}, {"S", 4}, {"D", 5}},
              DType::f32, {}, true);
  CutCount a = cut_kernels(att, opt);
  check_order(att);
  CHECK(a.materialized == 0);
  REQUIRE(att.kernels.size() == 3);
  CHECK(att.kernels[0].statements[1].kind == Statement::Kind::reduce_update);
  CHECK(att.kernels[0].statements[1].extents.size() == 5);  // b, h, i, j and d
  // The row max, the row sum and the probabilities they give are one kernel, a block per row:
  // the row sum (a reduction that reuses no operand) is no contraction.
  const Kernel& softmax = att.kernels[1];
  int reductions = 0;
  for (const Statement& st : softmax.statements)
    reductions += st.kind == Statement::Kind::reduce_update;
  CHECK(reductions == 2);
  CHECK(softmax.statements.back().kind == Statement::Kind::assign);
  CHECK(softmax.statements.back().extents.size() == 4);  // the probabilities, [b, h, i, j]
  // The weighted sum reads them stored: inline, they would be recomputed for each of D lanes.
  const Kernel& last = att.kernels.back();
  // The sum accumulates in the output itself: the view that drops its kept axis is inverted.
  REQUIRE(last.statements.size() == 2);
  CHECK(last.statements[1].kind == Statement::Kind::reduce_update);
  CHECK(att.buffers[last.statements[1].buffer].kind == BufferKind::output);
  std::vector<const ScalarExpr*> loads;
  collect_loads(*last.statements[1].value, loads);
  REQUIRE(loads.size() == 2);
  CHECK(loads[0]->buffer == softmax.statements.back().buffer);
  // A contraction with its bias and activation stays one kernel.
  KernelPlan dense = plan_of("ops/nn.toml:dense_gelu", {{"M", 2}, {"K", 3}, {"N", 4}});
  CutCount n = cut_kernels(dense, opt);
  CHECK(n.kernels == 1);
  CHECK(n.materialized == 0);
}

TEST_CASE("cut: on the CPU each contraction of a GPT-2 block is a kernel with its epilogue") {
  // The block's sums are kept as [S, N, 1]: their bias adds run over [S, N, 1], which is still
  // the element domain; they stay with the contraction, and what follows starts a kernel.
  const CutOptions opt = cpu_cut_options();
  KernelPlan plan = plan_of("tests/regressions/transformer_block.toml:gpt2_block",
                            {{"S", 5}, {"C", 8}}, DType::f32, {{"heads", test::attr_int(2)}});
  CutCount n = cut_kernels(plan, opt);
  check_order(plan);
  CHECK(n.materialized == 0);  // no value crosses a cut through a temp of its own
  int contractions = 0;
  for (const Kernel& k : plan.kernels) {
    int sums = 0;
    for (const Statement& s : k.statements)  // a sum of products (a row sum is not one)
      sums += s.kind == Statement::Kind::reduce_update && s.reduce == ReduceKind::sum &&
              s.extents.size() >= 3 && s.value && s.value->kind == ScalarExpr::Kind::op &&
              s.value->op == Op::mul;
    if (sums == 0) continue;
    ++contractions;
    CHECK(sums == 1);  // one contraction per kernel
    // init, update, then only its epilogues
    REQUIRE(k.statements.size() >= 2);
    CHECK(k.statements[0].kind == Statement::Kind::reduce_init);
    for (size_t s = 2; s < k.statements.size(); ++s)
      CHECK(k.statements[s].kind == Statement::Kind::assign);
  }
  CHECK(contractions == 6);  // qkv, q·kᵀ, P·V, the projection, fc1, fc2
}

TEST_CASE("build: a reduce read only through a reordering view is computed in its layout") {
  // Heads merged back after attention, reshape(permute(P·V)) into [S, C]: P·V accumulates
  // straight into the output, through its alias with C split by the heads ([S, H, C / H] at
  // [s, h, d], not o[s, (C / H)·h + d]); no copy reorders it afterwards.
  KernelPlan plan = plan_of("tests/regressions/transformer_block.toml:block_attention",
                            {{"S", 5}, {"C", 8}}, DType::f32, {{"heads", test::attr_int(2)}});
  int out = -1;
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (plan.buffers[b].kind == BufferKind::output && plan.buffers[b].window_of >= 0)
      out = static_cast<int>(b);
  REQUIRE(out >= 0);
  CHECK(shape_str(plan.buffers[out].shape) == "[S, 2, (C / 2)]");
  std::vector<Statement::Kind> writes;
  for (const Statement& st : plan.kernels[0].statements) {
    if (plan.buffers[st.buffer].kind == BufferKind::output) CHECK(st.buffer == out);
    if (st.buffer != out) continue;
    writes.push_back(st.kind);
    for (const IntExpr& i : st.index)
      CHECK(i.is_affine());
  }
  CHECK(writes ==
        std::vector<Statement::Kind>{Statement::Kind::reduce_init, Statement::Kind::reduce_update});

  // The same attention on [1, H, S, D] inputs: the sum's kept axis of 1 is dropped by a view,
  // which the sum writes through too.
  plan = plan_of("tests/regressions/transformer_block.toml:block_attention_contiguous",
                 {{"H", 2}, {"S", 5}, {"D", 4}});
  int assigns_to_out = 0, updates_to_out = 0;
  for (const Statement& st : plan.kernels[0].statements) {
    if (plan.buffers[st.buffer].kind != BufferKind::output) continue;
    assigns_to_out += st.kind == Statement::Kind::assign;
    updates_to_out += st.kind == Statement::Kind::reduce_update;
  }
  CHECK(assigns_to_out == 0);
  CHECK(updates_to_out == 1);

  // softmax's sums are read by a division, not a view: they keep buffers of their own.
  plan = plan_of("ops/nn.toml:softmax");
  for (const Statement& st : plan.kernels[0].statements)
    if (st.kind == Statement::Kind::reduce_update)
      CHECK(plan.buffers[st.buffer].kind == BufferKind::temp);
}

TEST_CASE("build: a CPU backend reads q, k and v through the head-splitting views") {
  // The heads split from qkv by views index it as (C / H)·h + d: a GPU backend copies them
  // into [H, S, D] layouts for its tiles; a CPU backend reads the input as it is (its register
  // tile packs the strided operand per k block, and an input's reads need no exact access).
  test::RunSpec spec;
  spec.target = "tests/regressions/transformer_block.toml:block_attention";
  spec.sizes = {{"S", 5}, {"C", 8}};
  spec.attrs = {{"heads", test::attr_int(2)}};
  spec.interpret = false;
  Graph g = test::run(spec).graph;
  auto copies = [&](const BuildOptions& opt) {
    KernelPlan plan = build_statements(g, plan_values(g, {}), opt);
    int n = 0;
    for (const Buffer& b : plan.buffers)
      n += b.kind == BufferKind::temp && b.name[0] == 'l';
    return n;
  };
  CHECK(copies(BuildOptions{}) == 3);
  BuildOptions cpu;
  cpu.copy_input_views = false;
  CHECK(copies(cpu) == 0);
}

TEST_CASE("cut: a budget of one statement still never splits a reduction's init from its update") {
  KernelPlan plan = plan_of("ops/nn.toml:softmax");
  CutOptions opt;
  opt.max_statements = 1;
  cut_kernels(plan, opt);
  CHECK(plan.kernels.size() > 1);
  // A cut inside a reduction is clean nowhere: the budget forces it right there, and the
  // kernels stay in order.
  check_order(plan);
}

TEST_CASE("schedule cache: repeated blocks share one schedule, checked against a fresh one") {
  KernelPlan plan = plan_of(kStacked);
  cut_kernels(plan, CutOptions{});
  plan_buffers(plan);
  REQUIRE(plan.kernels.size() >= 3);
  const Kernel &first = plan.kernels[0], &second = plan.kernels[1], &last = plan.kernels.back();
  CHECK(first.buffers != second.buffers);
  // Every kernel holds two blocks and stores (or outputs) the second one's result.
  CHECK(kernel_shape_key(plan, first) == kernel_shape_key(plan, second));
  CHECK(kernel_shape_key(plan, first) == kernel_shape_key(plan, last));
  KernelPlan other = plan_of("ops/nn.toml:layernorm");
  CHECK(kernel_shape_key(plan, first) != kernel_shape_key(other, other.kernels[0]));
  ScheduleOptions opt;
  ScheduleCache cache(opt);
  std::vector<std::string> nests;
  for (const Kernel& k : plan.kernels)
    nests.push_back(loop_nest_to_text(cache.schedule(plan, k).nest));
  CHECK(cache.hits() == static_cast<int>(plan.kernels.size()) - 1);
  CHECK(cache.misses() == 1);
  CHECK(nests.back() == loop_nest_to_text(schedule_kernel(plan, last, opt).nest));
  cache.schedule(other, other.kernels[0]);
  CHECK(cache.misses() == 2);
}

TEST_CASE("schedule cache: kernels scheduled on threads are the serial schedules, in order") {
  // The stacked layer norms repeat one kernel shape; the GPT-2 block's kernels are all distinct.
  for (bool stacked : {true, false}) {
    CAPTURE(stacked);
    KernelPlan plan =
        stacked ? plan_of(kStacked)
                : plan_of("tests/regressions/transformer_block.toml:gpt2_block",
                          {{"S", 5}, {"C", 8}}, DType::f32, {{"heads", test::attr_int(2)}});
    cut_kernels(plan, stacked ? CutOptions{} : cpu_cut_options());
    plan_buffers(plan);
    REQUIRE(plan.kernels.size() >= 3);
    ScheduleOptions opt;
    ScheduleCache serial(opt), threaded(opt);
    std::vector<std::string> expected;
    for (const Kernel& k : plan.kernels)
      expected.push_back(loop_nest_to_text(serial.schedule(plan, k).nest));
    std::vector<ScheduledKernel> got = threaded.schedule_all(plan, 3);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(loop_nest_to_text(got[i].nest) == expected[i]);
    }
    CHECK(threaded.hits() == serial.hits());
    CHECK(threaded.misses() == serial.misses());
    // A second call finds every kernel in the cache.
    threaded.schedule_all(plan, 2);
    CHECK(threaded.hits() == serial.hits() + static_cast<int>(plan.kernels.size()));
  }
}

TEST_CASE("schedule cache: the key renumbers buffers but tells shared loads from distinct ones") {
  KernelPlan plan;
  for (const char* name : {"a", "b", "c", "d"}) {
    Buffer b;
    b.name = name;
    b.shape = {IntExpr::var("N")};
    b.kind = BufferKind::input;
    plan.buffers.push_back(b);
  }
  auto load = [](int buffer) {
    auto e = std::make_shared<ScalarExpr>();
    e->kind = ScalarExpr::Kind::load;
    e->buffer = buffer;
    e->index = {IntExpr::var("i0")};
    return e;
  };
  auto kernel = [&](int out, int x, int y) {
    auto add = std::make_shared<ScalarExpr>();
    add->kind = ScalarExpr::Kind::op;
    add->args = {load(x), load(y)};
    Kernel k;
    Statement s;
    s.extents = {IntExpr::var("N")};
    s.buffer = out;
    s.index = {IntExpr::var("i0")};
    s.value = add;
    k.statements.push_back(s);
    return k;
  };
  CHECK(kernel_shape_key(plan, kernel(0, 1, 2)) == kernel_shape_key(plan, kernel(3, 2, 0)));
  CHECK(kernel_shape_key(plan, kernel(0, 1, 2)) != kernel_shape_key(plan, kernel(0, 1, 1)));
  CHECK(kernel_shape_key(plan, kernel(0, 1, 2)) != kernel_shape_key(plan, kernel(0, 1, 0)));
  plan.buffers[3].shape = {IntExpr::var("M")};
  CHECK(kernel_shape_key(plan, kernel(0, 1, 2)) != kernel_shape_key(plan, kernel(3, 1, 2)));
}

TEST_CASE("plan_buffers: temps with disjoint kernel lifetimes share a slot, overlapping do not") {
  KernelPlan plan;
  for (const char* name : {"x", "t0", "t1", "t2"}) {
    Buffer b;
    b.name = name;
    b.kind = b.name == "x" ? BufferKind::input : BufferKind::temp;
    plan.buffers.push_back(b);
  }
  // t0 lives in kernels 0-1, t1 in 1-2, t2 in 2 only
  for (std::vector<int> used : {std::vector<int>{0, 1}, {0, 1, 2}, {0, 2, 3}}) {
    Kernel k;
    k.buffers = used;
    plan.kernels.push_back(k);
  }
  plan_buffers(plan);
  CHECK(plan.num_slots == 2);
  CHECK(plan.buffers[1].slot != plan.buffers[2].slot);  // overlap in kernel 1
  CHECK(plan.buffers[2].slot != plan.buffers[3].slot);  // overlap in kernel 2
  CHECK(plan.buffers[1].slot == plan.buffers[3].slot);  // t0 ends before t2 starts
  CHECK(plan.buffers[0].slot == -1);
}

TEST_CASE("plan_buffers: the stacked blocks' temps reuse slots once cut") {
  KernelPlan plan = plan_of(kStacked);
  int temps = 0;
  for (const Buffer& b : plan.buffers)
    temps += b.kind == BufferKind::temp;
  cut_kernels(plan, CutOptions{});
  for (const Buffer& b : plan.buffers)
    temps += b.kind == BufferKind::temp && b.name.rfind("cut", 0) == 0;
  plan_buffers(plan);
  CHECK(plan.num_slots < temps);
}

namespace {

/** How many exp2 ops the statements of `plan` compute. */
int exp2_count(const ScalarExpr& e) {
  int n = e.kind == ScalarExpr::Kind::op && e.op == Op::exp2;
  for (const ScalarExprPtr& a : e.args)
    n += exp2_count(*a);
  return n;
}

int exp2_count(const KernelPlan& plan) {
  int n = 0;
  for (const Kernel& k : plan.kernels)
    for (const Statement& s : k.statements)
      if (s.value) n += exp2_count(*s.value);
  return n;
}

}  // namespace

TEST_CASE("store_shared: softmax computes its exponential once, stored in the output") {
  KernelPlan plan = plan_of("ops/nn.toml:softmax");
  CHECK(exp2_count(plan) == 2);  // the sum's and the output's
  CHECK(store_shared_values(plan) == 1);
  CHECK(exp2_count(plan) == 1);
  check_order(plan);
  // The store comes right before the sum, which reads the output back.
  const Kernel& k = plan.kernels.at(0);
  REQUIRE(k.statements.size() == 6);
  const Statement &store = k.statements[3], &sum = k.statements[4], &out = k.statements[5];
  CHECK(store.kind == Statement::Kind::assign);
  CHECK(plan.buffers[store.buffer].kind == BufferKind::output);
  CHECK(sum.kind == Statement::Kind::reduce_update);
  CHECK(sum.value->kind == ScalarExpr::Kind::load);
  CHECK(sum.value->buffer == store.buffer);
  CHECK(out.buffer == store.buffer);
  CHECK(k.statements[5].name == "S5");
  // Once stored, nothing more to share; a composite without a shared costly value is left alone.
  CHECK(store_shared_values(plan) == 0);
  KernelPlan ln = plan_of("ops/nn.toml:layernorm");
  CHECK(store_shared_values(ln) == 0);
  KernelPlan mm = plan_of("ops/nn.toml:matmul", {{"M", 3}, {"K", 4}, {"N", 5}});
  CHECK(store_shared_values(mm) == 0);
}

TEST_CASE("cut: a value read from a contraction's result by head is computed after the tile") {
  // A projection's biased, activated result read through reshape and permute, at another
  // element than the one each update writes: the statement computing that value must not join
  // the contraction's kernel, where it would keep the contraction from its block tile and run
  // on one GPU thread per row (the CPU cuts agree). Used once, the value is not stored at the
  // cut: the output's statement computes it in the next kernel.
  for (bool gpu : {true, false}) {
    CAPTURE(gpu);
    KernelPlan plan =
        plan_of("tests/data/cut.toml:proj_heads", {{"S", 4}, {"C", 8}}, DType::f32, {}, gpu);
    const CutOptions opt = gpu ? gpu_cut_options() : cpu_cut_options();
    CutCount n = cut_kernels(plan, opt);
    CHECK(n.materialized == 0);
    check_order(plan);
    REQUIRE(plan.kernels.size() == 2);
    // The contraction's kernel: its init and update only.
    const Kernel& tile = plan.kernels[0];
    REQUIRE(tile.statements.size() == 2);
    CHECK(tile.statements[1].kind == Statement::Kind::reduce_update);
    const int sum = tile.statements[1].buffer;
    // The next kernel computes the activation into the output, reading the sum by head.
    const Kernel& next = plan.kernels[1];
    REQUIRE(next.statements.size() == 1);
    CHECK(plan.buffers[next.statements[0].buffer].kind == BufferKind::output);
    std::vector<const ScalarExpr*> reads;
    collect_loads(*next.statements[0].value, reads);
    CHECK(std::any_of(reads.begin(), reads.end(),
                      [&](const ScalarExpr* l) { return l->buffer == sum; }));
  }
}

TEST_CASE(
    "build: a contraction's operand read through a head split is copied once, a window is not") {
  auto copies = [](const KernelPlan& plan) {
    int n = 0;
    for (const Kernel& k : plan.kernels)
      for (const Statement& s : k.statements)
        n += plan.buffers[s.buffer].name[0] == 'l' && s.kind == Statement::Kind::assign;
    return n;
  };
  // q, k and v split from qkv by (C / heads) * h + d: each copied once, contiguous.
  KernelPlan att = plan_of("tests/regressions/transformer_block.toml:block_attention",
                           {{"S", 4}, {"C", 8}}, DType::f32, {{"heads", test::attr_int(2)}});
  CHECK(copies(att) == 3);
  // A grouped convolution's input: the channel map divides by a size (not affine), but its
  // spatial positions are windows (h + r - 1), and a copy would hold the input R * S times.
  KernelPlan conv = plan_of(
      "ops/nn.toml:conv2d", {{"B", 1}, {"C", 4}, {"H", 5}, {"W", 5}, {"F", 4}, {"R", 3}, {"S", 3}},
      DType::f32, {{"groups", test::attr_int(2)}, {"pad", test::attr_int(1)}});
  CHECK(copies(conv) == 0);
  CutCount n = cut_kernels(conv, cpu_cut_options());
  CHECK(n.kernels == 1);
  CHECK(n.materialized == 0);
}
