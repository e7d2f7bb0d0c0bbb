// Scheduler tests of reductions as users write them, beside the rows and contractions of the
// other schedule tests: sums over a middle axis (the CPU's lane loop below them, the GPU's grid
// of columns), a pooling that no tile helps, long sums in partial blocks, a group's sum across a
// block (tests/unit/schedule_sim.h simulates the loop IR).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/promote_accumulators.h"
#include "tests/support/kernel_plans.h"
#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: a sum over a middle axis with its stored terms sinks its lane loop") {
  // e[c, p] = exp(x[c, p]); s[p] = sum(e[c, p], c) (softmax over a middle axis): isl fuses the
  // store and the update under `for p for c`, every access P apart. The coincident p loop sinks
  // below c with both statements, so they run along rows across vector lanes and the sums stay
  // in memory, one per lane.
  KernelBuilder b;
  IntExpr C = IntExpr::var("C"), P = IntExpr::var("P");
  int x = b.buffer("x", {C, P}), e = b.buffer("e", {C, P}), sum = b.buffer("s", {P});
  b.stmt(Statement::Kind::reduce_init, {P}, sum, {it(0)});
  b.stmt(Statement::Kind::assign, {P, C}, e, {it(1), it(0)},
         op(Op::exp2, {load(x, {it(1), it(0)})}));
  b.stmt(Statement::Kind::reduce_update, {P, C}, sum, {it(0)}, load(e, {it(1), it(0)}));
  ScheduleOptions opt = untiled();
  opt.backend_simd = true;
  ScheduledKernel r = check_legal(b, opt, {{{"C", 3}, {"P", 5}}, {{"C", 1}, {"P", 4}}});
  report("stored terms summed over a middle axis", r);
  int sunk = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<const LoopNode*> inner = loops(*l);
    if (inner.size() != 2 || l->coincident) continue;  // the c loop with p inside
    ++sunk;
    CHECK(inner[1]->mapping == Mapping::simd);
    std::string text = loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*inner[1])});
    CHECK(text.find("S1(") != std::string::npos);
    CHECK(text.find("S2(") != std::string::npos);
  }
  CHECK(sunk == 1);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  CHECK(found.empty());
  // A statement beside the update that reads with stride P along p keeps the loop above.
  KernelBuilder t;
  int xt = t.buffer("x", {P, C}), et = t.buffer("e", {C, P}), st = t.buffer("s", {P});
  t.stmt(Statement::Kind::reduce_init, {P}, st, {it(0)});
  t.stmt(Statement::Kind::assign, {P, C}, et, {it(1), it(0)},
         op(Op::exp2, {load(xt, {it(0), it(1)})}));
  t.stmt(Statement::Kind::reduce_update, {P, C}, st, {it(0)}, load(et, {it(1), it(0)}));
  ScheduledKernel rt = check_legal(t, opt, {{{"C", 3}, {"P", 5}}});
  report("stored terms read across", rt);
  for (const LoopNode* l : loops(*rt.nest.root)) {
    std::vector<const LoopNode*> inner = loops(*l);
    for (size_t k = 1; k < inner.size() && !l->coincident; ++k)
      CHECK_FALSE(inner[k]->coincident);  // no p loop below the c loop (or its blocks)
  }
}

TEST_CASE("schedule: a pooling over a middle axis is neither tiled nor register-tiled") {
  // y[b, c] = sum(x[b, p, c], p) reads each element of x once: no tile keeps an operand, and
  // the walk streams once c runs innermost below p. A product with a weight w[p] reused along b
  // and c still takes the register tile.
  KernelBuilder b;
  IntExpr B = IntExpr::var("B"), P = IntExpr::var("P"), C = IntExpr::var("C");
  int x = b.buffer("x", {B, P, C}), y = b.buffer("y", {B, C});
  b.stmt(Statement::Kind::reduce_init, {B, C}, y, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {B, C, P}, y, {it(0), it(1)},
         load(x, {it(0), it(2), it(1)}));
  ScheduleOptions opt;  // isl's tiles and the register tile both allowed
  opt.micro = {6, 2, 64, 64};
  opt.backend_simd = opt.backend_threads = true;
  ScheduledKernel r = check_legal(b, opt, {{{"B", 3}, {"P", 5}, {"C", 7}}});
  report("pooling over a middle axis", r);
  std::string transforms = transforms_to_text(r.transforms);
  CHECK(transforms.find("tile") == std::string::npos);
  CHECK(transforms.find("sink parallel loops below reductions") != std::string::npos);
  int walks = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<const LoopNode*> inner = loops(*l);
    if (inner.size() != 2 || l->coincident) continue;  // the p loop with c inside
    ++walks;
    CHECK(inner[1]->mapping == Mapping::simd);
    CHECK(loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*inner[1])}).find("S1(") !=
          std::string::npos);
  }
  CHECK(walks == 1);
  KernelBuilder w;
  int xw = w.buffer("x", {B, P, C}), ww = w.buffer("w", {P}), yw = w.buffer("y", {B, C});
  w.stmt(Statement::Kind::reduce_init, {B, C}, yw, {it(0), it(1)});
  w.stmt(Statement::Kind::reduce_update, {B, C, P}, yw, {it(0), it(1)},
         op(Op::mul, {load(xw, {it(0), it(2), it(1)}), load(ww, {it(2)})}));
  ScheduledKernel rw = check_legal(w, opt, {{{"B", 3}, {"P", 5}, {"C", 7}}});
  CHECK(transforms_to_text(rw.transforms).find("register tile") != std::string::npos);
}

TEST_CASE("schedule: a long float sum accumulates in partial sums of blocks") {
  // y[i] = sum(x[i, j], j) on the CPU: the j loop runs in blocks of kSumBlock, each block's
  // register starting from 0 and added to y[i] after it (LoopNode::partial); a sum over a
  // constant 100 terms keeps one register, and so does an integer sum (exact in any order).
  auto row_sum = [](IntExpr n, DType t) {
    KernelBuilder b;
    int x = b.buffer("x", {M, n}), y = b.buffer("y", {M});
    b.plan.buffers[x].dtype = b.plan.buffers[y].dtype = t;
    b.stmt(Statement::Kind::reduce_init, {M}, y, {it(0)});
    b.stmt(Statement::Kind::reduce_update, {M, n}, y, {it(0)}, load(x, {it(0), it(1)}));
    return b;
  };
  ScheduleOptions opt = untiled();
  opt.backend_simd = true;
  ScheduledKernel r =
      check_legal(row_sum(N, DType::f32), opt, {{{"M", 3}, {"N", 5}}, {{"M", 1}, {"N", 9000}}});
  report("a long sum in blocks", r);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->partial);
  REQUIRE(found[0]->body.size() == 1);
  const LoopNode& inner = *found[0]->body[0];
  CHECK(inner.mapping == Mapping::simd);
  std::string text = loop_nest_to_text(r.nest);
  CHECK(text.find("+= " + std::to_string(kSumBlock) + ")") != std::string::npos);
  CHECK(text.find("min((" + inner.iter + "b + " + std::to_string(kSumBlock) + "), N)") !=
        std::string::npos);
  for (auto [n, t] : {std::pair<IntExpr, DType>{IntExpr(100), DType::f32},
                      std::pair<IntExpr, DType>{N, DType::i32}}) {
    ScheduledKernel one = check_legal(row_sum(n, t), opt, {{{"M", 3}, {"N", 5}}});
    found.clear();
    allocs(*one.nest.root, found);
    REQUIRE(found.size() == 1);
    CHECK_FALSE(found[0]->partial);
  }
}

/** The value of `e`, an expression of the sizes `env` (the operators the scheduler's run-time
 *  choices use). */
int64_t eval_ast(const AstExpr& e, const std::map<std::string, int64_t>& env) {
  switch (e.kind) {
    case AstExpr::Kind::integer:
      return e.value;
    case AstExpr::Kind::param:
    case AstExpr::Kind::iterator:
      return env.at(e.name);
    case AstExpr::Kind::op:
      break;
  }
  std::vector<int64_t> v;
  for (const AstExprPtr& a : e.args)
    v.push_back(eval_ast(*a, env));
  if (e.op == "select") return v[0] ? v[1] : v[2];
  if (e.op == "max") return *std::max_element(v.begin(), v.end());
  if (e.op == "min") return *std::min_element(v.begin(), v.end());
  if (e.op == "add") return v[0] + v[1];
  if (e.op == "sub") return v[0] - v[1];
  if (e.op == "mul") return v[0] * v[1];
  if (e.op == "and") return v[0] && v[1];
  if (e.op == "le") return v[0] <= v[1];
  if (e.op == "lt") return v[0] < v[1];
  if (e.op == "ge") return v[0] >= v[1];
  if (e.op == "gt") return v[0] > v[1];
  FAIL("an operator the test does not evaluate: " << e.op);
  return 0;
}

TEST_CASE("schedule: on the GPU sums over a middle axis take the grid, groups take the block") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.gpu_tile.rows = 0;
  IntExpr C = IntExpr::var("C"), P = IntExpr::var("P"), G = IntExpr(4);
  const std::vector<Env> sizes = {{{"B", 3}, {"C", 5}, {"P", 7}}, {{"B", 1}, {"C", 2}, {"P", 1}}};

  // s[b, p] = sum(x[b, c, p], c): threads on p read side by side, each walking its column; the
  // batch and the column loops are one loop (blocks over b alone would be as few as the batch),
  // whose points take interleaved groups of lanes: consecutive threads on consecutive points,
  // each point's column split among its lanes (LoopNode::lanes_apart), so that few long columns
  // fill the GPU too.
  KernelBuilder cols;
  int x = cols.buffer("x", {B, C, P}), sum = cols.buffer("s", {B, P});
  cols.stmt(Statement::Kind::reduce_init, {B, P}, sum, {it(0), it(1)});
  cols.stmt(Statement::Kind::reduce_update, {B, P, C}, sum, {it(0), it(1)},
            load(x, {it(0), it(2), it(1)}));
  ScheduledKernel rc = check_legal(cols, opt, sizes);
  report("sums over a middle axis, GPU", rc);
  std::vector<const LoopNode*> top = top_level(*rc.nest.root);
  REQUIRE(top.size() == 1);
  CHECK(top[0]->mapping == Mapping::block_x);
  CHECK(top[0]->lanes_apart);
  CHECK(top[0]->iter.rfind("g_", 0) == 0);
  for (const LoopNode* l : loops(*top[0]))
    if (l != top[0]) CHECK(l->mapping == Mapping::thread_x);  // the column, across the lanes
  // The lanes, chosen at run time: a power of two up to 16 as the columns are long and few.
  REQUIRE(top[0]->group_threads);
  auto lanes = [&](int64_t b, int64_t c, int64_t p) {
    return eval_ast(*top[0]->group_threads, {{"B", b}, {"C", c}, {"P", p}});
  };
  CHECK(lanes(64, 3136, 256) == 16);   // 16 384 long columns
  CHECK(lanes(32, 256, 3136) == 4);    // 100 352 columns of 256
  CHECK(lanes(32, 12, 3136) == 1);     // a column of 12: a thread
  CHECK(lanes(1024, 512, 1024) == 1);  // a million columns fill the GPU alone

  // Group sums, t[b, g] = sum(x[b, g * P + i], i) over G groups, then every element scaled by its
  // group's sum: a thread per group would walk a row of its own (x[b, g * P + i] moves by whole
  // rows with g). A block per (b, g) instead, its threads across the row.
  KernelBuilder groups;
  int xg = groups.buffer("x", {B, G * P}), tg = groups.buffer("t", {B, G}),
      yg = groups.buffer("y", {B, G * P});
  groups.stmt(Statement::Kind::reduce_init, {B, G}, tg, {it(0), it(1)});
  groups.stmt(Statement::Kind::reduce_update, {B, G, P}, tg, {it(0), it(1)},
              load(xg, {it(0), it(1) * P + it(2)}));
  groups.stmt(Statement::Kind::assign, {B, G, P}, yg, {it(0), it(1) * P + it(2)},
              op(Op::mul, {load(xg, {it(0), it(1) * P + it(2)}), load(tg, {it(0), it(1)})}));
  ScheduledKernel rg = check_legal(groups, opt, sizes);
  report("group sums, GPU", rg);
  top = top_level(*rg.nest.root);
  REQUIRE(top.size() == 1);
  CHECK(top[0]->mapping == Mapping::block_x);
  int block_reductions = 0, row_threads = 0;
  std::vector<const LoopNode*> found;
  allocs(*rg.nest.root, found);
  for (const LoopNode* a : found)
    if (a->body[0]->kind == LoopNode::Kind::loop && a->body[0]->mapping == Mapping::thread_x)
      ++block_reductions;
  for (const LoopNode* l : loops(*top[0]))
    if (l != top[0] && l->mapping == Mapping::thread_x &&
        loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*l)}).find("S2(") !=
            std::string::npos) {
      ++row_threads;
      CHECK(l->body[0]->kind == LoopNode::Kind::stmt);  // the innermost loop, along the rows
    }
  CHECK(block_reductions == 1);
  CHECK(row_threads == 1);
}

TEST_CASE("schedule: on the GPU a row's loop of two sums is distributed, each sum a block's") {
  // A layer norm's backward in one row pass: c = x - m stored, then ss += c · c and
  // sd += c · dy in the same loop. Fused, the loop carries two sums: no coincident loop, no one
  // register, and the GPU block ran the row on one thread. Distributed, the store runs across
  // the threads and each sum is a block reduction of its own; the CPU keeps one pass.
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.gpu_tile.rows = 0;
  const std::vector<Env> sizes = {{{"M", 3}, {"N", 37}}, {{"M", 2}, {"N", 1}}};
  KernelBuilder row;
  int x = row.buffer("x", {M, N}), dy = row.buffer("dy", {M, N}), m = row.buffer("m", {M, 1}),
      c = row.buffer("c", {M, N}), ss = row.buffer("ss", {M, 1}), sd = row.buffer("sd", {M, 1});
  row.stmt(Statement::Kind::assign, {M, N}, c, {it(0), it(1)},
           op(Op::add, {load(x, {it(0), it(1)}), load(m, {it(0), IntExpr(0)})}));
  row.stmt(Statement::Kind::reduce_init, {M}, ss, {it(0), IntExpr(0)});
  row.stmt(Statement::Kind::reduce_update, {M, N}, ss, {it(0), IntExpr(0)},
           op(Op::mul, {load(c, {it(0), it(1)}), load(c, {it(0), it(1)})}));
  row.stmt(Statement::Kind::reduce_init, {M}, sd, {it(0), IntExpr(0)});
  row.stmt(Statement::Kind::reduce_update, {M, N}, sd, {it(0), IntExpr(0)},
           op(Op::mul, {load(c, {it(0), it(1)}), load(dy, {it(0), it(1)})}));
  ScheduledKernel rg = check_legal(row, opt, sizes);
  report("a row's two sums, GPU", rg);
  std::vector<const LoopNode*> top = top_level(*rg.nest.root);
  REQUIRE(top.size() == 1);
  CHECK(top[0]->mapping == Mapping::block_x);
  std::vector<const LoopNode*> found;
  allocs(*rg.nest.root, found);
  int block_reductions = 0;
  for (const LoopNode* a : found)
    if (a->body[0]->kind == LoopNode::Kind::loop && a->body[0]->mapping == Mapping::thread_x)
      ++block_reductions;
  CHECK(block_reductions == 2);
  for (const LoopNode* l : loops(*top[0]))
    if (l != top[0]) CHECK(l->mapping == Mapping::thread_x);  // no row on one thread
  CHECK(transforms_to_text(rg.transforms).find("distribute reductions") != std::string::npos);

  // The CPU: one pass over the row.
  ScheduledKernel rc = check_legal(row, untiled(), sizes);
  CHECK(transforms_to_text(rc.transforms).find("distribute reductions") == std::string::npos);
}

TEST_CASE("schedule: on the GPU a column sum whose terms depend on the point keeps a thread each") {
  // y[i, c] = sum(x[j, c], j <= i), a running sum down each column: the terms of point (i, c)
  // end at i, so lanes of interleaved groups would each run a different count of steps and the
  // block's barriers would not be reached alike. The points stay a thread each, across the grid.
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.gpu_tile.rows = 0;
  KernelBuilder run;
  int x = run.buffer("x", {M, N}), y = run.buffer("y", {M, N});
  run.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  Statement& update = run.stmt(Statement::Kind::reduce_update, {M, N, M}, y, {it(0), it(1)},
                               load(x, {it(2), it(1)}));
  update.domain = {it(0) - it(2)};  // j <= i (the simulator walks rectangular domains only)
  ScheduledKernel r = schedule_kernel(run.plan, run.kernel(), opt);
  report("a running column sum, GPU", r);
  for (const LoopNode* l : loops(*r.nest.root))
    CHECK_FALSE(l->lanes_apart);
  std::vector<const LoopNode*> top = top_level(*r.nest.root);
  REQUIRE(top.size() == 1);
  CHECK(top[0]->mapping == Mapping::thread_x);
}

TEST_CASE("schedule: a row's pass of exponentials prefetches the next row (prefetch_rows)") {
  // softmax over each row of scores [B, H, L, S]: the max, exp(m - max) stored and summed, the
  // division. The middle pass runs in strips of four lines, each prefetching row i + 1's lines
  // of what it reads and writes; the first and last passes and layernorm's cheap passes do not.
  KernelPlan plan = kiln::test::plan_of("tests/regressions/user_kernels.toml:masked_softmax",
                                        {{"B", 2}, {"H", 2}, {"L", 8}, {"S", 64}});
  ScheduleOptions opt;
  int prefetches = 0, strips = 0;
  for (const Kernel& k : plan.kernels) {
    ScheduledKernel r = schedule_kernel(plan, k, opt);
    std::string text = loop_nest_to_text(r.nest);
    CAPTURE(text);
    for (const LoopNode* p : nodes_of(*r.nest.root, LoopNode::Kind::prefetch)) {
      ++prefetches;
      // the next row, at the strip's lines
      bool next = false;
      for (const AstExprPtr& a : p->args)
        next |= a && loop_expr_to_text(*a).find("+ 1") != std::string::npos;
      CHECK(next);
    }
    for (const LoopNode* l : loops_of(*r.nest.root))
      strips += l->step == 64 && !l->body.empty() && l->body[0]->kind == LoopNode::Kind::guard;
    opt.prefetch_rows = false;
    CHECK(nodes_of(*schedule_kernel(plan, k, opt).nest.root, LoopNode::Kind::prefetch).empty());
    opt.prefetch_rows = true;
  }
  CHECK(strips == 1);
  CHECK(prefetches == 4);  // one statement, four lines
  KernelPlan ln = kiln::test::plan_of("ops/nn.toml:layernorm", {{"N", 64}});
  for (const Kernel& k : ln.kernels)
    CHECK(nodes_of(*schedule_kernel(ln, k, opt).nest.root, LoopNode::Kind::prefetch).empty());
}
