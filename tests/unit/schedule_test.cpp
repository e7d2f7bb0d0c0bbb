// Scheduler tests: hand-built kernels, scheduled with isl, checked by simulating the loop IR
// (tests/unit/schedule_sim.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("schedule: the process calls the GMP build of isl") {
  CHECK(check_isl_build() == "");
}

TEST_CASE("schedule: 2-D elementwise gives a parallel outer loop and a vector inner loop") {
  KernelBuilder b;
  int in = b.buffer("x", {M, N}), out = b.buffer("y", {M, N});
  b.stmt(Statement::Kind::assign, {M, N}, out, {it(0), it(1)},
         op(Op::add, {load(in, {it(0), it(1)}), load(in, {it(0), it(1)})}));
  ScheduleOptions opt = untiled();
  opt.backend_threads = opt.backend_simd = true;
  ScheduledKernel r = check_legal(b, opt, {{{"M", 3}, {"N", 5}}});
  report("elementwise", r);
  std::vector<const LoopNode*> ls = loops(*r.nest.root);
  REQUIRE(ls.size() == 2);
  CHECK(ls[0]->coincident);
  CHECK(ls[1]->coincident);
  CHECK(ls[0]->band == ls[1]->band);
  CHECK(ls[0]->member == 0);
  CHECK(ls[1]->member == 1);
  // The rows go to threads; the columns, unit-stride, stay out of the collapse for vector lanes
  // (collapsed, each iteration would recover both iterators by a division).
  CHECK(ls[0]->mapping == Mapping::parallel);
  CHECK(ls[1]->mapping == Mapping::simd);
  CHECK(ls[0]->body.at(0).get() == ls[1]);

  // A backend with threads and no vector lanes maps both, for it to collapse.
  ScheduleOptions threads = untiled();
  threads.backend_threads = true;
  ScheduledKernel both = check_legal(b, threads, {{{"M", 3}, {"N", 5}}});
  ls = loops(*both.nest.root);
  CHECK(ls.at(0)->mapping == Mapping::parallel);
  CHECK(ls.at(1)->mapping == Mapping::parallel);

  // Without collapsing, the inner loop goes to vector lanes.
  opt.max_collapse = 1;
  ScheduledKernel single = check_legal(b, opt, {{{"M", 3}, {"N", 5}}});
  report("elementwise, collapse 1", single);
  ls = loops(*single.nest.root);
  CHECK(ls.at(0)->mapping == Mapping::parallel);
  CHECK(ls.at(1)->mapping == Mapping::simd);

  // A backend without threads or vector lanes keeps every loop serial.
  ScheduledKernel serial = check_legal(b, untiled(), {{{"M", 3}, {"N", 5}}});
  for (const LoopNode* l : loops(*serial.nest.root))
    CHECK(l->mapping == Mapping::serial);
}

TEST_CASE(
    "schedule: float vector loops take the target's full width, integer ones the compiler's") {
  // y[m, n] = x[m, n] + x[m, n], the rows across threads (collapse 1), the columns in vectors.
  auto elementwise = [](DType t) {
    KernelBuilder b;
    int in = b.buffer("x", {M, N}), out = b.buffer("y", {M, N});
    b.plan.buffers[in].dtype = b.plan.buffers[out].dtype = t;
    b.stmt(Statement::Kind::assign, {M, N}, out, {it(0), it(1)},
           op(Op::add, {load(in, {it(0), it(1)}), load(in, {it(0), it(1)})}));
    return b;
  };
  auto lanes = [&](DType t, int simd_bytes) {
    ScheduleOptions opt = untiled();
    opt.backend_threads = opt.backend_simd = true;
    opt.max_collapse = 1;
    opt.simd_bytes = simd_bytes;
    ScheduledKernel r = check_legal(elementwise(t), opt, {{{"M", 3}, {"N", 5}}});
    const LoopNode* inner = loops(*r.nest.root).at(1);
    REQUIRE(inner->mapping == Mapping::simd);
    return inner->simd_lanes;
  };
  CHECK(lanes(DType::f32, 64) == 16);
  CHECK(lanes(DType::f64, 64) == 8);
  CHECK(lanes(DType::f16, 64) == 16);  // computed in f32
  CHECK(lanes(DType::i32, 64) == 0);   // narrow integers pack tighter than a float width says
  CHECK(lanes(DType::f32, 32) == 0);   // the compiler's preferred width already
}

TEST_CASE("schedule: reduction init runs before its update, then the result is read") {
  KernelBuilder b;
  int x = b.buffer("x", {M, K}), acc = b.buffer("acc", {M}), y = b.buffer("y", {M});
  b.stmt(Statement::Kind::reduce_init, {M}, acc, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {M, K}, acc, {it(0)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::assign, {M}, y, {it(0)}, op(Op::mul, {load(acc, {it(0)})}));
  std::vector<Env> sizes = {{{"M", 4}, {"K", 3}}, {{"M", 1}, {"K", 1}}, {{"M", 2}, {"K", 7}}};
  report("reduction", check_legal(b, ScheduleOptions{}, sizes));
  report("reduction untiled", check_legal(b, untiled(), sizes));
}

TEST_CASE("schedule: a softmax-like chain is legal and fused under one outer loop") {
  KernelBuilder b;
  int x = b.buffer("x", {B, N}), mx = b.buffer("mx", {B}), sm = b.buffer("sm", {B}),
      y = b.buffer("y", {B, N});
  auto shifted = [&] {
    return op(Op::exp2, {op(Op::add, {load(x, {it(0), it(1)}), load(mx, {it(0)})})});
  };
  b.stmt(Statement::Kind::reduce_init, {B}, mx, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {B, N}, mx, {it(0)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::reduce_init, {B}, sm, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {B, N}, sm, {it(0)}, shifted());
  b.stmt(Statement::Kind::assign, {B, N}, y, {it(0), it(1)},
         op(Op::mul, {shifted(), op(Op::recip, {load(sm, {it(0)})})}));
  std::vector<Env> sizes = {{{"B", 3}, {"N", 4}}, {{"B", 1}, {"N", 1}}};
  for (bool tile : {true, false}) {
    ScheduleOptions opt;
    opt.tile = tile;
    ScheduledKernel r = check_legal(b, opt, sizes);
    report(tile ? "softmax" : "softmax untiled", r);
    std::vector<const LoopNode*> top = top_level(*r.nest.root);
    REQUIRE(top.size() == 1);
    REQUIRE(top[0]->kind == LoopNode::Kind::loop);
    CHECK(top[0]->coincident);
    std::string text = loop_nest_to_text(r.nest);
    for (int s = 0; s < 5; ++s)
      CHECK(text.find("S" + std::to_string(s) + "(") != std::string::npos);
  }
}

TEST_CASE("schedule: a tile loop of one tile lends its coincidence to no other loop") {
  // A stencil's sum stored, then a log-softmax of it, over 31 rows known at compile time
  // (--specialize): the tile loop of the coincident rows has one iteration and isl generates no
  // loop for it; the loop below walks the phases of the row (the stencil's, then the softmax's),
  // which depend on each other. It came out parallel: the fuzzer's openmp mismatch of issue 28.
  const IntExpr rows(31), cols(33), taps(3);
  KernelBuilder b;
  int x = b.buffer("x", {IntExpr(33), cols}), s = b.buffer("s", {rows, cols}),
      v = b.buffer("v", {rows, cols}), mx = b.buffer("mx", {rows}), sm = b.buffer("sm", {rows}),
      y = b.buffer("y", {rows, cols});
  auto centred = [&] {
    return op(Op::add, {load(v, {it(0), it(1)}), op(Op::neg, {load(mx, {it(0)})})});
  };
  b.stmt(Statement::Kind::reduce_init, {rows, cols}, s, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {rows, cols, taps}, s, {it(0), it(1)},
         load(x, {it(0) + it(2), it(1)}));
  b.stmt(Statement::Kind::assign, {rows, cols}, v, {it(0), it(1)}, load(s, {it(0), it(1)}));
  b.stmt(Statement::Kind::reduce_init, {rows}, mx, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {rows, cols}, mx, {it(0)}, load(v, {it(0), it(1)}))
      .reduce = ReduceKind::max;
  b.stmt(Statement::Kind::reduce_init, {rows}, sm, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {rows, cols}, sm, {it(0)}, op(Op::exp2, {centred()}));
  b.stmt(Statement::Kind::assign, {rows, cols}, y, {it(0), it(1)},
         op(Op::add, {centred(), op(Op::neg, {op(Op::log2, {load(sm, {it(0)})})})}));
  ScheduledKernel r = check_legal(b, isl_tiled(), {Env{}});
  report("stencil and log-softmax, 31 rows", r);
}

TEST_CASE("schedule: matmul is tiled when tiling is on, and legal either way") {
  KernelBuilder b = matmul();
  std::vector<Env> sizes = {{{"M", 9}, {"N", 7}, {"K", 6}}, {{"M", 1}, {"N", 2}, {"K", 1}}};
  ScheduleOptions opt = isl_tiled();
  opt.tile_sizes = {4, 4, 4};
  ScheduledKernel tiled = check_legal(b, opt, sizes);
  report("matmul tiled 4x4x4", tiled);
  std::vector<const LoopNode*> ls = loops(*tiled.nest.root);
  // Tile loops count tiles (tile_scale_tile_loops = 0): three tile loops over three point loops.
  CHECK(depth(*tiled.nest.root) == 6);
  CHECK(loop_nest_to_text(tiled.nest).find("min(3, ") != std::string::npos);
  CHECK(ls.at(0)->coincident);
  CHECK(ls.at(0)->tile);
  CHECK_FALSE(ls.at(3)->tile);
  CHECK(ls.at(0)->band == ls.at(3)->band);  // a tile band and its point band share a number

  ScheduledKernel big = check_legal(b, isl_tiled(), {{{"M", 40}, {"N", 33}, {"K", 35}}});
  report("matmul tiled 32x32x32", big);

  ScheduledKernel plain = check_legal(b, untiled(), sizes);
  report("matmul untiled", plain);
  for (const LoopNode* l : loops(*plain.nest.root))
    CHECK(l->step == 1);
  CHECK(depth(*plain.nest.root) <= 3);
}

TEST_CASE("schedule: symbolic extents with floor division and size products") {
  KernelBuilder b;
  IntExpr rows = N + 2, cols = floordiv(H - R, IntExpr(2)) + 1;
  int x = b.buffer("x", {rows, H}), t = b.buffer("t", {rows, cols}),
      y = b.buffer("y", {rows, cols});
  int flat = b.buffer("flat", {M * N}), z = b.buffer("z", {M * N});
  b.stmt(Statement::Kind::assign, {rows, cols}, t, {it(0), it(1)},
         load(x, {it(0), 2 * it(1) + R - 1}));
  b.stmt(Statement::Kind::assign, {rows, cols}, y, {it(0), it(1)}, load(t, {it(0), it(1)}));
  b.stmt(Statement::Kind::assign, {M * N}, z, {it(0)}, load(flat, {it(0)}));
  b.stmt(Statement::Kind::assign, {M, N}, flat, {it(0) * N + it(1)}, load(z, {it(0) * N + it(1)}));
  std::vector<Env> sizes = {{{"N", 3}, {"H", 9}, {"R", 3}, {"M", 2}},
                            {{"N", 1}, {"H", 3}, {"R", 3}, {"M", 1}},
                            {{"N", 2}, {"H", 2}, {"R", 3}, {"M", 3}}};
  report("symbolic", check_legal(b, ScheduleOptions{}, sizes));
  report("symbolic untiled", check_legal(b, untiled(), sizes));
}

TEST_CASE("schedule: past the isl operation limit a kernel runs in program order, legally") {
  KernelBuilder b;
  int x = b.buffer("x", {B, N}), mx = b.buffer("mx", {B}), y = b.buffer("y", {B, N});
  b.stmt(Statement::Kind::reduce_init, {B}, mx, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {B, N}, mx, {it(0)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::assign, {B, N}, y, {it(0), it(1)},
         op(Op::add, {load(x, {it(0), it(1)}), load(mx, {it(0)})}));
  std::vector<Env> sizes = {{{"B", 3}, {"N", 4}}, {{"B", 1}, {"N", 1}}};
  CHECK_FALSE(check_legal(b, ScheduleOptions{}, sizes).nest.program_order);

  ScheduleOptions opt;
  opt.max_operations = 1;
  CHECK_THROWS_WITH_AS(schedule_kernel(b.plan, b.kernel(), opt),
                       doctest::Contains("exceeded the isl operation limit of 1"),
                       std::runtime_error);
  // The smallest limit (in powers of two) that schedules at all gets the program order: isl's
  // scheduler takes far more operations than the plain AST of the sequence.
  for (opt.max_operations = 2; opt.max_operations < (1ul << 30); opt.max_operations *= 2) {
    try {
      schedule_kernel(b.plan, b.kernel(), opt);
      break;
    } catch (const std::runtime_error&) {
    }
  }
  ScheduledKernel r = check_legal(b, opt, sizes);
  report("program order", r);
  CHECK(r.nest.program_order);
  CHECK(top_level(*r.nest.root).size() == 3);  // three loop nests, nothing fused
  for (const LoopNode* l : loops(*r.nest.root)) {
    CHECK_FALSE(l->coincident);
    CHECK(l->mapping == Mapping::serial);
  }
}
