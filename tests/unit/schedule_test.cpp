// Scheduler tests: hand-built kernels, scheduled with isl, checked by simulating the loop IR.
// The simulator walks the LoopNode tree with concrete sizes and checks that every buffer element
// sees the same writes, in the same order, with every read between the same two writes, as in
// the sequential order of the statements.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "scheduler/schedule_kernel.h"
#include "tests/support/kernel_builder.h"

using namespace kiln;
using namespace kiln::test;

namespace {

using Env = std::map<std::string, int64_t>;
using Instance = std::pair<int, std::vector<int64_t>>;

const IntExpr M = IntExpr::var("M"), N = IntExpr::var("N"), K = IntExpr::var("K");
const IntExpr B = IntExpr::var("B"), H = IntExpr::var("H"), R = IntExpr::var("R");

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

int64_t eval(const AstExpr& e, const Env& env) {
  if (e.kind == AstExpr::Kind::integer) return e.value;
  if (e.kind == AstExpr::Kind::iterator || e.kind == AstExpr::Kind::param) return env.at(e.name);
  std::vector<int64_t> a;
  for (const auto& x : e.args)
    a.push_back(eval(*x, env));
  const std::string& o = e.op;
  if (o == "add") return a[0] + a[1];
  if (o == "sub") return a[0] - a[1];
  if (o == "mul") return a[0] * a[1];
  if (o == "minus") return -a[0];
  if (o == "div" || o == "pdiv_q") return a[0] / a[1];
  if (o == "fdiv_q") return floor_div(a[0], a[1]);
  if (o == "pdiv_r" || o == "zdiv_r") return a[0] % a[1];
  if (o == "min") return *std::min_element(a.begin(), a.end());
  if (o == "max") return *std::max_element(a.begin(), a.end());
  if (o == "and") return a[0] && a[1];
  if (o == "or") return a[0] || a[1];
  if (o == "eq") return a[0] == a[1];
  if (o == "le") return a[0] <= a[1];
  if (o == "lt") return a[0] < a[1];
  if (o == "ge") return a[0] >= a[1];
  if (o == "gt") return a[0] > a[1];
  if (o == "select") return a[0] ? a[1] : a[2];
  throw std::runtime_error("unknown op " + o);
}

void run(const LoopNode& n, Env& env, std::vector<Instance>& out, const LoopNode* tile = nullptr);

/** Runs GPU block tile `n` (scheduler/gpu_tile.h) as its threads do, one element after another
 *  at each step: the statements before the reduction for every element of the tile in range,
 *  then the reduction of each, then the statements after it. */
void run_block_tile(const LoopNode& n, Env& env, std::vector<Instance>& out) {
  int64_t row = eval(*n.tile_row_origin, env), lane = eval(*n.tile_lane_origin, env);
  std::vector<std::pair<int64_t, int64_t>> elements;
  for (int64_t r = 0; r < n.tile_rows; ++r)
    for (int64_t l = 0; l < n.tile_lanes; ++l) {
      env[n.tile_row] = row + r;
      env[n.tile_lane] = lane + l;
      if (eval(*n.tile_row_cond, env) && eval(*n.tile_lane_cond, env))
        elements.push_back({row + r, lane + l});
    }
  CHECK(n.tile_rows % n.thread_rows == 0);
  CHECK((n.tile_rows / n.thread_rows) * (n.tile_lanes / n.thread_lanes) == 256);
  std::vector<LoopNodePtr> nodes;
  flatten_blocks(n.body, nodes);
  std::vector<std::vector<const LoopNode*>> phases(1);
  for (const LoopNodePtr& c : nodes) {
    bool reduction = c->kind == LoopNode::Kind::alloc;
    if (reduction) phases.push_back({});
    phases.back().push_back(c.get());
    if (reduction) phases.push_back({});
  }
  CHECK(phases.size() == 3);  // one reduction
  for (const auto& phase : phases)
    for (auto [r, l] : elements) {
      env[n.tile_row] = r;
      env[n.tile_lane] = l;
      for (const LoopNode* c : phase)
        run(*c, env, out);
    }
  env.erase(n.tile_row);
  env.erase(n.tile_lane);
}

/** Runs `n`; `tile` is the register tile around it, whose statement runs once per row and
 *  lane of the tile, or null. */
/** Whether run() walks coincident loops backwards (check_legal's second walk). */
bool reverse_coincident = false;

void run(const LoopNode& n, Env& env, std::vector<Instance>& out, const LoopNode* tile) {
  switch (n.kind) {
    case LoopNode::Kind::alloc:  // a register for an element: no instance of its own
      if (n.space == MemorySpace::shared) {
        run_block_tile(n, env, out);
        break;
      }
      if (n.tile_rows > 0) tile = &n;
      if (n.pack_depth > 0) {  // a packed panel: body[0] copies operands, no instances
        CHECK(n.body.size() >= 2);
        for (size_t k = 1; k < n.body.size(); ++k)
          run(*n.body[k], env, out, tile);
        break;
      }
      [[fallthrough]];
    case LoopNode::Kind::block:
    case LoopNode::Kind::single:
      for (const auto& c : n.body)
        run(*c, env, out, tile);
      break;
    case LoopNode::Kind::barrier:
      break;
    case LoopNode::Kind::guard:
      if (eval(*n.cond, env))
        for (const auto& c : n.body)
          run(*c, env, out, tile);
      break;
    case LoopNode::Kind::loop: {
      std::vector<int64_t> values;
      for (env[n.iter] = eval(*n.init, env); eval(*n.cond, env); env[n.iter] += n.step)
        values.push_back(env[n.iter]);
      // A coincident loop carries no dependence: its iterations may run in any order.
      if (reverse_coincident && n.coincident && !n.reduction)
        std::reverse(values.begin(), values.end());
      for (int64_t v : values) {
        env[n.iter] = v;
        for (const auto& c : n.body)
          run(*c, env, out, tile);
      }
      env.erase(n.iter);
      break;
    }
    case LoopNode::Kind::stmt:
      if (tile && tile->statement == n.statement) {
        int64_t row = eval(*tile->tile_row_origin, env), lane = eval(*tile->tile_lane_origin, env);
        std::map<std::string, int64_t> saved;
        for (const std::string* v : {&tile->tile_row, &tile->tile_lane})
          if (env.count(*v)) saved[*v] = env[*v];
        int64_t lanes =
            tile->tile_lane_count ? eval(*tile->tile_lane_count, env) : tile->tile_lanes;
        CHECK(lanes > 0);  // a partial tile has a lane, and no more than a full one
        CHECK(lanes <= tile->tile_lanes);
        for (int64_t r = 0; r < tile->tile_rows; ++r)
          for (int64_t l = 0; l < lanes; ++l) {
            env[tile->tile_row] = row + r;
            env[tile->tile_lane] = lane + l;
            run(n, env, out);
          }
        // A tile of one row takes its origin from the row loop itself: restore it.
        for (const std::string* v : {&tile->tile_row, &tile->tile_lane})
          env.erase(*v);
        for (const auto& [v, value] : saved)
          env[v] = value;
        break;
      }
      {
        std::vector<int64_t> args;
        for (const auto& a : n.args)
          args.push_back(eval(*a, env));
        out.push_back({n.statement, args});
        break;
      }
  }
}

std::vector<Instance> sequential(const Kernel& k, const Env& sizes) {
  std::vector<Instance> out;
  for (int s = 0; s < static_cast<int>(k.statements.size()); ++s) {
    std::vector<int64_t> ext = eval_shape(k.statements[s].extents, sizes), point(ext.size(), 0);
    std::function<void(size_t)> rec = [&](size_t d) {
      if (d == ext.size()) {
        out.push_back({s, point});
        return;
      }
      for (point[d] = 0; point[d] < ext[d]; ++point[d])
        rec(d + 1);
    };
    rec(0);
  }
  return out;
}

/** Per buffer element: the writing instances in order, and for each read the writes before it. */
using Trace = std::map<std::pair<int, std::vector<int64_t>>,
                       std::pair<std::vector<Instance>, std::vector<std::pair<Instance, size_t>>>>;

Trace trace(const Kernel& k, const std::vector<Instance>& order, const Env& sizes) {
  Trace t;
  auto element = [&](int buf, const std::vector<IntExpr>& index, const Env& env) {
    std::vector<int64_t> at;
    for (const auto& e : index)
      at.push_back(e.eval(env));
    return std::make_pair(buf, at);
  };
  for (const Instance& inst : order) {
    const Statement& s = k.statements[inst.first];
    Env env = sizes;
    for (size_t d = 0; d < inst.second.size(); ++d)
      env[iterator_name(int(d))] = inst.second[d];
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    std::vector<std::pair<int, std::vector<int64_t>>> reads;
    for (const ScalarExpr* l : loads)
      reads.push_back(element(l->buffer, l->index, env));
    if (s.kind == Statement::Kind::reduce_update) reads.push_back(element(s.buffer, s.index, env));
    for (const auto& r : reads)
      t[r].second.push_back({inst, t[r].first.size()});
    t[element(s.buffer, s.index, env)].first.push_back(inst);
  }
  for (auto& [elem, acc] : t)
    std::sort(acc.second.begin(), acc.second.end());
  return t;
}

/** Schedules, simulates and checks legality; returns the result for structural checks. */
ScheduledKernel check_legal(const KernelBuilder& b, const ScheduleOptions& opt,
                            const std::vector<Env>& size_sets) {
  ScheduledKernel r = schedule_kernel(b.plan, b.kernel(), opt);
  for (const Env& sizes : size_sets) {
    std::vector<Instance> want = sequential(b.kernel(), sizes), got;
    Env env = sizes;
    run(*r.nest.root, env, got);
    std::vector<Instance> a = want, c = got;
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    REQUIRE(a == c);  // every instance exactly once
    CHECK(trace(b.kernel(), got, sizes) == trace(b.kernel(), want, sizes));
    // The loops marked coincident run backwards: the same trace, or one was marked wrongly.
    std::vector<Instance> reversed;
    env = sizes;
    reverse_coincident = true;
    run(*r.nest.root, env, reversed);
    reverse_coincident = false;
    CHECK(trace(b.kernel(), reversed, sizes) == trace(b.kernel(), want, sizes));
  }
  return r;
}

std::vector<const LoopNode*> loops(const LoopNode& n) {
  std::vector<const LoopNode*> out;
  if (n.kind == LoopNode::Kind::loop) out.push_back(&n);
  for (const auto& c : n.body)
    for (const LoopNode* l : loops(*c))
      out.push_back(l);
  return out;
}

/** The top-level nodes, looking through blocks. */
std::vector<const LoopNode*> top_level(const LoopNode& n) {
  if (n.kind != LoopNode::Kind::block) return {&n};
  std::vector<const LoopNode*> out;
  for (const auto& c : n.body)
    for (const LoopNode* t : top_level(*c))
      out.push_back(t);
  return out;
}

void report(const char* what, const ScheduledKernel& r) {
  MESSAGE(std::string(what) << ": " << r.milliseconds << " ms\n" << loop_nest_to_text(r.nest));
}

ScheduleOptions untiled() {
  ScheduleOptions o;
  o.tile = false;
  o.micro.rows = 0;
  return o;
}

/** Default options with isl's tiling but no register tile (register_tile.h). */
ScheduleOptions isl_tiled() {
  ScheduleOptions o;
  o.micro.rows = 0;
  return o;
}

/** C[M, N] = sum over k of A[M, K] * B[K, N], in dtype `t` (buffers and values). */
KernelBuilder matmul(DType t = DType::f32) {
  KernelBuilder b;
  int A = b.buffer("A", {M, K}), Bm = b.buffer("B", {K, N}), C = b.buffer("C", {M, N});
  for (Buffer& buf : b.plan.buffers)
    buf.dtype = t;
  auto typed = [t](ScalarExprPtr e) {
    std::const_pointer_cast<ScalarExpr>(e)->dtype = t;
    return e;
  };
  b.stmt(Statement::Kind::reduce_init, {M, N}, C, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {M, N, K}, C, {it(0), it(1)},
         typed(op(Op::mul, {typed(load(A, {it(0), it(2)})), typed(load(Bm, {it(2), it(1)}))})));
  return b;
}

}  // namespace

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
  // Both loops are mapped to threads, for a backend to collapse.
  CHECK(ls[0]->mapping == Mapping::parallel);
  CHECK(ls[1]->mapping == Mapping::parallel);
  CHECK(ls[0]->body.at(0).get() == ls[1]);

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

namespace {

/** The alloc nodes of a loop nest, in pre-order. */
void allocs(const LoopNode& n, std::vector<const LoopNode*>& out) {
  if (n.kind == LoopNode::Kind::alloc && (n.pack_depth == 0 || n.space == MemorySpace::shared))
    out.push_back(&n);
  for (const LoopNodePtr& c : n.body)
    allocs(*c, out);
}

}  // namespace

TEST_CASE("schedule: a reduction accumulates in a register across its loop, not through memory") {
  KernelBuilder b = matmul();
  ScheduleOptions opt = untiled();
  opt.sink = false;  // else j sinks below k (the next test) and the element moves inside the nest
  ScheduledKernel r =
      check_legal(b, opt, {{{"M", 3}, {"N", 4}, {"K", 5}}, {{"M", 2}, {"N", 1}, {"K", 1}}});
  report("matmul, accumulator", r);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 1);
  const LoopNode& acc = *found[0];
  CHECK(acc.space == MemorySpace::local);
  CHECK(acc.statement == 1);
  // The element is C[i, j]: the k argument is left out, the others are bound outside the loop.
  REQUIRE(acc.args.size() == 3);
  CHECK(acc.args[0]);
  CHECK(acc.args[1]);
  CHECK_FALSE(acc.args[2]);
  std::vector<const LoopNode*> inner = loops(acc);
  REQUIRE(inner.size() == 1);
  CHECK(inner[0]->reduction);
  CHECK_FALSE(inner[0]->coincident);

  // f16 keeps its sum in memory: rounding once instead of at every step would change results.
  KernelBuilder h = matmul();
  for (Buffer& buf : h.plan.buffers)
    buf.dtype = DType::f16;
  ScheduledKernel hr = schedule_kernel(h.plan, h.kernel(), opt);
  found.clear();
  allocs(*hr.nest.root, found);
  CHECK(found.empty());
}

TEST_CASE("schedule: an init isl fuses into its reduction's loop moves before it, promoted") {
  // Attention's softmax over [heads, i, j]: the exponentials stored, then summed. isl puts the
  // sum's init in the first iteration of the loop of its update, under a guard; it moves before
  // the loop and the sum accumulates in a register.
  KernelBuilder b;
  int sc = b.buffer("sc", {H, N, N}), mx = b.buffer("mx", {H, N}), e = b.buffer("e", {H, N, N}),
      sm = b.buffer("sm", {H, N}), p = b.buffer("p", {H, N, N});
  b.stmt(Statement::Kind::reduce_init, {H, N}, mx, {it(0), it(1)}).reduce = ReduceKind::max;
  b.stmt(Statement::Kind::reduce_update, {H, N, N}, mx, {it(0), it(1)},
         load(sc, {it(0), it(1), it(2)}))
      .reduce = ReduceKind::max;
  b.stmt(Statement::Kind::assign, {H, N, N}, e, {it(0), it(1), it(2)},
         op(Op::exp2, {op(Op::add, {load(sc, {it(0), it(1), it(2)}),
                                    op(Op::neg, {load(mx, {it(0), it(1)})})})}));
  b.stmt(Statement::Kind::reduce_init, {H, N}, sm, {it(0), it(1)});
  b.stmt(Statement::Kind::reduce_update, {H, N, N}, sm, {it(0), it(1)},
         load(e, {it(0), it(1), it(2)}));
  b.stmt(Statement::Kind::assign, {H, N, N}, p, {it(0), it(1), it(2)},
         op(Op::mul, {load(e, {it(0), it(1), it(2)}), op(Op::recip, {load(sm, {it(0), it(1)})})}));
  std::vector<Env> sizes = {{{"H", 2}, {"N", 5}}, {{"H", 1}, {"N", 1}}};
  ScheduledKernel r = check_legal(b, untiled(), sizes);
  report("attention's softmax", r);
  // No loop holds a guarded init beside its update; both reductions accumulate in registers.
  const Kernel& k = b.kernel();
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<LoopNodePtr> body;
    flatten_blocks(l->body, body);
    for (const LoopNodePtr& g : body)
      if (g->kind == LoopNode::Kind::guard)
        for (const LoopNodePtr& init : g->body)
          for (const LoopNodePtr& u : body)
            if (init->kind == LoopNode::Kind::stmt && u->kind == LoopNode::Kind::stmt)
              CHECK_FALSE(
                  (k.statements[init->statement].kind == Statement::Kind::reduce_init &&
                   k.statements[u->statement].buffer == k.statements[init->statement].buffer));
  }
  std::vector<const LoopNode*> promoted;
  allocs(*r.nest.root, promoted);
  std::set<int> accumulated;
  for (const LoopNode* a : promoted)
    accumulated.insert(a->statement);
  CHECK(accumulated.count(1));
  CHECK(accumulated.count(4));
  // isl orders the row's phases in one band member (j, N + j, 2N + j), which carries the
  // dependences between them; the loop of each phase carries none but its reduction's, and
  // says so (build_ast checks each loop): the normalisation's loop is coincident (check_legal
  // ran it backwards), the sum's may run across lanes.
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<LoopNodePtr> body;
    flatten_blocks(l->body, body);
    for (const LoopNodePtr& c : body)
      if (c->kind == LoopNode::Kind::stmt && c->statement == 5)
        CHECK(l->coincident);
      else if (c->kind == LoopNode::Kind::stmt && c->statement == 4)
        CHECK(l->only_reductions);
  }
}

TEST_CASE("schedule: a contraction's parallel loop sinks below its reduction, across lanes") {
  KernelBuilder b = matmul();
  ScheduleOptions opt = untiled();
  opt.backend_simd = true;
  ScheduledKernel r = check_legal(b, opt,
                                  {{{"M", 3}, {"N", 4}, {"K", 5}},
                                   {{"M", 2}, {"N", 1}, {"K", 1}},
                                   {{"M", 1}, {"N", 7}, {"K", 0}}});
  report("matmul, sunk", r);
  CHECK(transforms_to_text(r.transforms).find("sink parallel loops below reductions") !=
        std::string::npos);
  // for i { for j S0; for k for j S1; for j S2 }: the update's j loop is innermost, unit-stride
  // along b's rows and the result's, and across vector lanes; no register holds C[i, j].
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  CHECK(found.empty());
  int sunk = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    std::vector<const LoopNode*> inner = loops(*l);
    if (inner.size() != 2 || l->coincident) continue;  // the k loop with j inside
    ++sunk;
    CHECK(inner[1]->coincident);
    CHECK(inner[1]->mapping == Mapping::simd);
    CHECK(loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*inner[1])}).find("S1(") !=
          std::string::npos);
  }
  CHECK(sunk == 1);
  // A column walk (the reduction reads b[j, k]: stride K along j) does not sink.
  KernelBuilder t;
  int a = t.buffer("a", {M, K}), bt = t.buffer("bt", {N, K}), c = t.buffer("c", {M, N});
  t.stmt(Statement::Kind::reduce_init, {M, N}, c, {it(0), it(1)});
  t.stmt(Statement::Kind::reduce_update, {M, N, K}, c, {it(0), it(1)},
         op(Op::mul, {load(a, {it(0), it(2)}), load(bt, {it(1), it(2)})}));
  ScheduledKernel rt = check_legal(t, opt, {{{"M", 3}, {"N", 4}, {"K", 5}}});
  found.clear();
  allocs(*rt.nest.root, found);
  CHECK(found.size() == 1);  // the dot product over k stays in a register
}

TEST_CASE("schedule: simd needs unit-stride accesses; a column walk stays serial") {
  KernelBuilder b;
  int x = b.buffer("x", {M, N}), y = b.buffer("y", {M, N}), t = b.buffer("t", {N, M});
  b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::assign, {M, N}, t, {it(1), it(0)}, load(x, {it(0), it(1)}));
  ScheduleOptions opt = untiled();
  opt.backend_threads = opt.backend_simd = true;
  opt.max_collapse = 1;
  ScheduledKernel r = check_legal(b, opt, {{{"M", 3}, {"N", 5}}});
  report("unit stride", r);
  // The inner loop that writes t[j, i] walks t by M: serial; the one that copies row by row is
  // simd. (Were they fused, the shared inner loop would be serial.)
  int simd = 0, strided = 0;
  for (const LoopNode* l : loops(*r.nest.root)) {
    if (!loops(*l).empty() && loops(*l).size() > 1) continue;  // innermost loops only
    std::string text = loop_nest_to_text(LoopNest{std::make_shared<LoopNode>(*l)});
    bool writes_t = text.find("S1(") != std::string::npos;
    strided += writes_t;
    simd += l->mapping == Mapping::simd;
    if (writes_t) CHECK(l->mapping == Mapping::serial);
  }
  CHECK(strided >= 1);
  CHECK(simd + strided >= 1);
}

TEST_CASE("schedule: MICRO=auto takes 32-byte vectors for one-loop reductions, 64 for several") {
  KernelBuilder mm = matmul();
  RegisterTileShape one = automatic_tile_shape(mm.plan);
  CHECK((one.rows == 3 && one.vectors == 8 && one.vector_bytes == 32));
  // A reduction over two loops (k and a second one): a convolution's kind.
  KernelBuilder two;
  IntExpr L = IntExpr::var("L");
  int x = two.buffer("x", {M, K, L}), w = two.buffer("w", {K, L, N}), y = two.buffer("y", {M, N});
  two.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  two.stmt(Statement::Kind::reduce_update, {M, N, K, L}, y, {it(0), it(1)},
           op(Op::mul, {load(x, {it(0), it(2), it(3)}), load(w, {it(2), it(3), it(1)})}));
  RegisterTileShape several = automatic_tile_shape(two.plan);
  CHECK((several.rows == 6 && several.vectors == 2 && several.vector_bytes == 64));
}

TEST_CASE("schedule: a contraction keeps a register tile of rows by vector lanes, in k blocks") {
  KernelBuilder b = matmul();
  ScheduleOptions opt;
  opt.micro = {6, 2, 64, 64};
  opt.backend_threads = true;
  // Full row and lane tiles with remainders of both, and k in blocks of 64 with a partial one;
  // sizes below one tile; an empty reduction.
  std::vector<Env> sizes = {{{"M", 13}, {"N", 70}, {"K", 130}},
                            {{"M", 6}, {"N", 32}, {"K", 64}},
                            {{"M", 5}, {"N", 31}, {"K", 3}},
                            {{"M", 7}, {"N", 33}, {"K", 0}}};
  ScheduledKernel r = check_legal(b, opt, sizes);
  report("matmul, register-tiled", r);
  CHECK(transforms_to_text(r.transforms).find("register tile 6 rows x 2 vectors of 64 bytes") !=
        std::string::npos);
  CHECK(transforms_to_text(r.transforms).find("tile 32") == std::string::npos);  // not isl's
  // Tiles of two vectors, then of one, then a partial one for the lanes left; each of 6 rows,
  // then of one row for the rows left.
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 6);
  const LoopNode& tile = *found[0];
  CHECK(tile.tile_rows == 6);
  CHECK(tile.tile_lanes == 32);  // two 64-byte vectors of f32
  CHECK_FALSE(tile.tile_lane_count);
  for (size_t k = 0; k < 6; ++k) {
    CHECK(found[k]->tile_rows == (k % 2 ? 1 : 6));
    CHECK(found[k]->tile_lanes == (k < 2 ? 32 : 16));
    CHECK(static_cast<bool>(found[k]->tile_lane_count) == (k >= 4));  // N - jt lanes
  }
  // Inside: the k loop of one block, the update's j loop gone into the lanes.
  std::vector<const LoopNode*> inner = loops(tile);
  REQUIRE(inner.size() == 1);
  CHECK_FALSE(inner[0]->coincident);
  // The k-block loop is a serial tile loop; the lane tiles inside it run across threads.
  bool block = false, lanes_parallel = false;
  for (const LoopNode* l : loops(*r.nest.root)) {
    block |= l->tile && !l->coincident && l->step == 64 && l->mapping == Mapping::serial;
    lanes_parallel |= l->step == 32 && l->mapping == Mapping::parallel;
  }
  CHECK(block);
  CHECK(lanes_parallel);

  // f64: 16 lanes per two vectors.
  KernelBuilder d = matmul(DType::f64);
  ScheduledKernel rd = check_legal(d, opt, {{{"M", 7}, {"N", 17}, {"K", 65}}});
  found.clear();
  allocs(*rd.nest.root, found);
  REQUIRE(found.size() == 6);
  CHECK(found[0]->tile_lanes == 16);
  CHECK(found[2]->tile_lanes == 8);
  CHECK(found[4]->tile_lanes == 8);

  // f16 and a value the lanes cannot compute (exp2 of a lane-varying load) keep the plain nest.
  KernelBuilder h = matmul(DType::f16);
  KernelBuilder e;
  int a = e.buffer("a", {M, K}), bb = e.buffer("b", {K, N}), c = e.buffer("c", {M, N});
  e.stmt(Statement::Kind::reduce_init, {M, N}, c, {it(0), it(1)});
  e.stmt(Statement::Kind::reduce_update, {M, N, K}, c, {it(0), it(1)},
         op(Op::mul, {load(a, {it(0), it(2)}), op(Op::exp2, {load(bb, {it(2), it(1)})})}));
  for (const KernelBuilder* k : {&h, &e}) {
    ScheduledKernel rk = check_legal(*k, opt, {{{"M", 7}, {"N", 33}, {"K", 3}}});
    found.clear();
    allocs(*rk.nest.root, found);
    for (const LoopNode* f : found)
      CHECK(f->tile_rows == 0);
  }
}

TEST_CASE("schedule: a GPU contraction runs in block tiles, each thread's elements in registers") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;                   // a kernel the block tile applies to is not tiled by isl
  opt.gpu_tile = {64, 64, 4, 4, 8};  // 16 × 16 threads
  // Full and partial tiles of rows and lanes; 11 row tiles (a group of 8, then one of 3); one
  // tile; an empty reduction; an empty matrix.
  std::vector<Env> sizes = {{{"M", 130}, {"N", 70}, {"K", 9}},
                            {{"M", 645}, {"N", 130}, {"K", 2}},
                            {{"M", 3}, {"N", 5}, {"K", 2}},
                            {{"M", 2}, {"N", 65}, {"K", 0}},
                            {{"M", 0}, {"N", 4}, {"K", 3}}};
  ScheduledKernel r = check_legal(matmul(), opt, sizes);
  report("matmul, GPU block tile", r);
  CHECK(transforms_to_text(r.transforms).find("gpu block tile 64x64, 4x4 per thread") !=
        std::string::npos);
  CHECK(transforms_to_text(r.transforms).find("tile 32") == std::string::npos);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 2);
  const LoopNode& tile = *found[0];
  CHECK(tile.space == MemorySpace::shared);
  CHECK(tile.statement == 1);
  CHECK(tile.pack_depth == 8);
  CHECK(found[1]->space == MemorySpace::local);  // the accumulator inside
  // One loop over the tiles, across blocks; the k loop inside.
  std::vector<const LoopNode*> all = loops(*r.nest.root);
  REQUIRE(all.size() == 2);
  CHECK(all[0]->mapping == Mapping::block_x);
  CHECK(all[1]->reduction);

  // A batch dimension is walked with the tiles: B × ⌈M/64⌉ × ⌈N/64⌉ blocks.
  KernelBuilder bmm;
  int a = bmm.buffer("a", {B, M, K}), bb = bmm.buffer("b", {B, K, N}),
      c = bmm.buffer("c", {B, M, N});
  bmm.stmt(Statement::Kind::reduce_init, {B, M, N}, c, {it(0), it(1), it(2)});
  bmm.stmt(Statement::Kind::reduce_update, {B, M, N, K}, c, {it(0), it(1), it(2)},
           op(Op::mul, {load(a, {it(0), it(1), it(3)}), load(bb, {it(0), it(3), it(2)})}));
  ScheduledKernel rb = check_legal(bmm, opt, {{{"B", 3}, {"M", 70}, {"N", 66}, {"K", 5}}});
  report("bmm, GPU block tile", rb);
  found.clear();
  allocs(*rb.nest.root, found);
  REQUIRE(found.size() == 2);
  CHECK(found[0]->space == MemorySpace::shared);

  // A load that moves along both i and j (an elementwise factor inside the sum) has no row or
  // lane to stage by: the plain mapping stays.
  KernelBuilder e;
  int x = e.buffer("x", {M, K}), y = e.buffer("y", {K, N}), m = e.buffer("m", {M, N}),
      z = e.buffer("z", {M, N});
  e.stmt(Statement::Kind::reduce_init, {M, N}, z, {it(0), it(1)});
  e.stmt(Statement::Kind::reduce_update, {M, N, K}, z, {it(0), it(1)},
         op(Op::mul, {op(Op::mul, {load(x, {it(0), it(2)}), load(y, {it(2), it(1)})}),
                      load(m, {it(0), it(1)})}));
  ScheduledKernel re = check_legal(e, opt, {{{"M", 3}, {"N", 5}, {"K", 2}}});
  // A comparison of positions that moves along the rows and k only (a causal mask) belongs to
  // the rows' operand: still a block tile.
  KernelBuilder causal;
  int cx = causal.buffer("x", {M, K}), cy = causal.buffer("y", {K, N}),
      cz = causal.buffer("z", {M, N});
  auto position = [](int k) {
    auto v = std::make_shared<ScalarExpr>();
    v->kind = ScalarExpr::Kind::iterator;
    v->dtype = DType::i64;
    v->index = {it(k)};
    return v;
  };
  auto zero = std::make_shared<ScalarExpr>();
  causal.stmt(Statement::Kind::reduce_init, {M, N}, cz, {it(0), it(1)});
  causal.stmt(Statement::Kind::reduce_update, {M, N, K}, cz, {it(0), it(1)},
              op(Op::mul, {op(Op::where, {op(Op::cmplt, {position(2), position(0)}),
                                          load(cx, {it(0), it(2)}), zero}),
                           load(cy, {it(2), it(1)})}));
  ScheduledKernel rc = check_legal(causal, opt, {{{"M", 70}, {"N", 5}, {"K", 66}}});
  found.clear();
  allocs(*rc.nest.root, found);
  REQUIRE_FALSE(found.empty());
  CHECK(found[0]->space == MemorySpace::shared);
  found.clear();
  allocs(*re.nest.root, found);
  for (const LoopNode* f : found)
    CHECK(f->space != MemorySpace::shared);
}

TEST_CASE("schedule: a scan carries its running value in a register; a leading axis sinks") {
  // y[.., k] = y[.., k - 1] (masked: 0 before the row) + x[.., k], over rows of N.
  auto scan = [](KernelBuilder& b, const Shape& shape, int axis) {
    int x = b.buffer("x", shape), y = b.buffer("y", shape);
    std::vector<IntExpr> at, before;
    for (size_t d = 0; d < shape.size(); ++d)
      at.push_back(it(static_cast<int>(d)));
    before = at;
    before[axis] = at[axis] - 1;
    ScalarExprPtr prev = load(y, before);
    std::const_pointer_cast<ScalarExpr>(prev)->mask.push_back({before[axis], shape[axis]});
    b.stmt(Statement::Kind::assign, shape, y, at, op(Op::add, {prev, load(x, at)}));
  };
  ScheduleOptions opt = untiled();
  opt.backend_threads = opt.backend_simd = true;
  const std::vector<Env> sizes = {{{"M", 3}, {"N", 5}}, {{"M", 1}, {"N", 1}}};
  // Rows: the row loop is parallel, the register carries the walk along each row, which may split
  // across threads (rows of one length: when they are few, backends/openmp_renderer.h).
  KernelBuilder rows;
  scan(rows, {M, N}, 1);
  ScheduledKernel r = check_legal(rows, opt, sizes);
  report("scan along rows", r);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->carried);
  CHECK(found[0]->mapping == Mapping::parallel);
  REQUIRE(loops(*found[0]).size() == 1);
  CHECK(loops(*found[0])[0]->mapping == Mapping::serial);
  CHECK(transforms_to_text(r.transforms).find("carry scans (split across threads)") !=
        std::string::npos);
  // One row, and no split without parallel loops.
  KernelBuilder one;
  scan(one, {N}, 0);
  found.clear();
  ScheduledKernel split = check_legal(one, opt, sizes);  // kept alive: found points into it
  allocs(*split.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->mapping == Mapping::parallel);
  opt.parallel = false;
  found.clear();
  ScheduledKernel serial = check_legal(one, opt, sizes);
  allocs(*serial.nest.root, found);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->mapping == Mapping::serial);
  // Along the leading axis the column loop sinks below the walk and runs across lanes.
  opt.parallel = true;
  KernelBuilder lead;
  scan(lead, {M, N}, 0);
  ScheduledKernel l = check_legal(lead, opt, sizes);
  report("scan along columns", l);
  found.clear();
  allocs(*l.nest.root, found);
  CHECK(found.empty());
  std::vector<const LoopNode*> walk = loops(*l.nest.root);
  REQUIRE(walk.size() == 2);
  CHECK_FALSE(walk[0]->coincident);
  CHECK(walk[1]->coincident);
  CHECK(walk[1]->mapping != Mapping::serial);  // across threads, or lanes without them
}
