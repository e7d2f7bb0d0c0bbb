// The scheduler tests' simulator: see schedule_sim.h.
#include "tests/unit/schedule_sim.h"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>

namespace kiln::test {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

}  // namespace

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

namespace {

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
      if (n.tile_rows > 0 && n.tile_fresh && eval(*n.tile_fresh, env)) {
        // The folded init runs on the tile's elements (those that exist) before its reduction.
        CHECK(n.tile_init >= 0);
        int64_t row = eval(*n.tile_row_origin, env), lane = eval(*n.tile_lane_origin, env);
        int64_t rows = n.tile_row_count ? eval(*n.tile_row_count, env) : n.tile_rows;
        int64_t lanes = n.tile_lane_count ? eval(*n.tile_lane_count, env) : n.tile_lanes;
        Env inner = env;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t l = 0; l < lanes; ++l) {
            inner[n.tile_row] = row + r;
            inner[n.tile_lane] = lane + l;
            std::vector<int64_t> args;
            for (const auto& a : n.tile_init_args)
              args.push_back(eval(*a, inner));
            out.push_back({n.tile_init, args});
          }
      }
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
    case LoopNode::Kind::prefetch:
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
        // Rows past the row count compute on the last row's operands and store nothing.
        int64_t rows = tile->tile_row_count ? eval(*tile->tile_row_count, env) : tile->tile_rows;
        CHECK(rows > 0);
        CHECK(rows <= tile->tile_rows);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t l = 0; l < lanes; ++l) {
            env[tile->tile_row] = row + r;
            env[tile->tile_lane] = lane + l;
            if (n.k_lanes > 0) {  // a tile along k: k_lanes consecutive k at once
              const int64_t k0 = env.at(tile->k_iter);
              for (int64_t d = 0; d < n.k_lanes; ++d) {
                env[tile->k_iter] = k0 + d;
                run(n, env, out);
              }
              env[tile->k_iter] = k0;
            } else {
              run(n, env, out);
            }
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

}  // namespace

/** Schedules, simulates and checks legality; returns the result for structural checks. */
ScheduledKernel check_legal(const KernelBuilder& b, const ScheduleOptions& opt,
                            const std::vector<Env>& size_sets) {
  ScheduledKernel r = schedule_kernel(b.plan, b.kernel(), opt);
  for (const Env& sizes : size_sets) {
    std::vector<Instance> want = sequential(b.kernel(), sizes), got;
#if defined(KILN_SANITIZED)
    // The walk below is this file's code, not Kiln's, and runs some twenty times slower under
    // the sanitizers (a few GPU block tiles took minutes): there, only small size sets are
    // walked; the normal build walks them all. Kiln's scheduling above runs either way.
    if (want.size() > 20000) continue;
#endif
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
KernelBuilder matmul(DType t) {
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

/** The alloc nodes of a loop nest, in pre-order. */
void allocs(const LoopNode& n, std::vector<const LoopNode*>& out) {
  if (n.kind == LoopNode::Kind::alloc && (n.pack_depth == 0 || n.space == MemorySpace::shared))
    out.push_back(&n);
  for (const LoopNodePtr& c : n.body)
    allocs(*c, out);
}

}  // namespace kiln::test
