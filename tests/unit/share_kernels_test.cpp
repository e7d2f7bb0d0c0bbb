// scheduler/window_buffers and scheduler/share_kernels: the copies of a repeated block read
// their stacked weights through windows and run one code; kernels that differ in anything their
// code computes do not; a launch hands each its own buffers (driver/executable.h).
#include <doctest/doctest.h>

#include <algorithm>

#include "scheduler/cut_kernels.h"
#include "scheduler/plan_buffers.h"
#include "scheduler/share_kernels.h"
#include "scheduler/window_buffers.h"
#include "tests/support/cli.h"
#include "tests/support/kernel_builder.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
using kiln::test::gpu_cut_options;
using kiln::test::it;
using kiln::test::KernelBuilder;
using kiln::test::load;
using kiln::test::op;
using kiln::test::plan_of;

namespace {

AttrValue four() {
  AttrValue a;
  a.integer = 4;
  return a;
}

/** residual_relu four times over a stacked w (tests/regressions/repeat.toml), cut as CUDA
 *  cuts it: a kernel per step's product. */
KernelPlan four_steps() {
  KernelPlan plan = plan_of("tests/regressions/repeat.toml:repeat_stacked",
                            {{"S", 5}, {"C", 8}, {"L", 4}}, DType::f32, {{"layers", four()}});
  cut_kernels(plan, gpu_cut_options());
  return plan;
}

int buffer_named(const KernelPlan& plan, const std::string& name) {
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (plan.buffers[b].name == name) return static_cast<int>(b);
  return -1;
}

/** Makes x the caller's input 0 and y, z its outputs 1 and 2. */
void callers(KernelPlan& plan, int x, int y, int z) {
  int arg = 0;
  for (int b : {x, y, z}) {
    plan.buffers[b].kind = b == x ? BufferKind::input : BufferKind::output;
    plan.buffers[b].arg = arg++;
  }
}

bool uses(const Kernel& k, int b) {
  return std::find(k.buffers.begin(), k.buffers.end(), b) != k.buffers.end();
}

}  // namespace

TEST_CASE("windows: each step of a repeat reads its slice of w through a window of its own") {
  KernelPlan plan = four_steps();
  REQUIRE(plan.kernels.size() >= 4);
  const int w = buffer_named(plan, "w");
  const int b = buffer_named(plan, "b");
  REQUIRE(w >= 0);
  CHECK(window_buffers(plan) == 4);
  for (int l = 0; l < 4; ++l) {
    CAPTURE(l);
    const int wl = buffer_named(plan, "w_" + std::to_string(l));
    REQUIRE(wl >= 0);
    const Buffer& win = plan.buffers[wl];
    CHECK(win.window_of == w);
    CHECK(win.arg == plan.buffers[w].arg);
    CHECK(win.kind == BufferKind::input);
    CHECK(win.shape.size() == 2);
    CHECK(win.window_offset == IntExpr(l) * IntExpr::var("C") * IntExpr::var("C"));
    CHECK_FALSE(is_argument(win));
  }
  for (const Kernel& k : plan.kernels) {
    CHECK_FALSE(uses(k, w));  // no kernel reads w itself
    CHECK(std::is_sorted(k.buffers.begin(), k.buffers.end()));
    for (const Statement& s : k.statements) {
      std::vector<const ScalarExpr*> loads;
      if (s.value) collect_loads(*s.value, loads);
      for (const ScalarExpr* ld : loads)
        if (plan.buffers[ld->buffer].window_of == w) CHECK(ld->index.size() == 2);
    }
  }
  // b is shared by the steps, read at no fixed index: no window.
  CHECK(buffer_named(plan, "b_0") < 0);
  CHECK(b >= 0);
}

TEST_CASE("windows: none where a kernel's accesses disagree on the leading index") {
  // Uncut, the four steps are one kernel reading w[0], w[1], w[2] and w[3].
  KernelPlan plan = plan_of("tests/regressions/repeat.toml:repeat_stacked",
                            {{"S", 5}, {"C", 8}, {"L", 4}}, DType::f32, {{"layers", four()}});
  REQUIRE(plan.kernels.size() == 1);
  CHECK(window_buffers(plan) == 0);
  // A call statement takes whole buffers: none either.
  KernelBuilder kb;
  int x = kb.buffer("x", {4, IntExpr::var("N")});
  int y = kb.buffer("y", {IntExpr::var("N")});
  kb.stmt(Statement::Kind::assign, {IntExpr::var("N")}, y, {it(0)}, load(x, {1, it(0)}));
  int z = kb.buffer("z", {4, IntExpr::var("N")});
  Statement& call = kb.stmt(Statement::Kind::call, {}, z, {}, nullptr);
  call.routine = "copy";
  call.args = {x};
  callers(kb.plan, x, y, z);
  CHECK(window_buffers(kb.plan) == 0);
}

TEST_CASE("share: the middle steps of a repeat run one code; the first and last their own") {
  KernelPlan plan = four_steps();
  window_buffers(plan);
  plan_buffers(plan);
  const int shared = share_kernels(plan);
  CAPTURE(plan_to_text(plan));
  // Step 0 reads the input x and step 3 writes the output y: kinds differ, codes differ. Steps
  // 1 and 2 read and write temporaries: step 2's kernels run step 1's code.
  CHECK(shared >= 1);
  const int x = buffer_named(plan, "x");
  const int y = buffer_named(plan, "y");
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const Kernel& kernel = plan.kernels[k];
    CAPTURE(k);
    if (kernel.code_of < 0) continue;
    REQUIRE(kernel.code_of < static_cast<int>(k));
    const Kernel& code = plan.kernels[kernel.code_of];
    CHECK(code.code_of < 0);
    CHECK(kernel_code_key(plan, kernel) == kernel_code_key(plan, code));
    REQUIRE(kernel.buffers.size() == code.buffers.size());
    for (size_t i = 0; i < kernel.buffers.size(); ++i) {
      const Buffer& mine = plan.buffers[kernel.buffers[i]];
      const Buffer& theirs = plan.buffers[code.buffers[i]];
      CHECK(mine.dtype == theirs.dtype);
      CHECK(mine.kind == theirs.kind);
      CHECK((mine.window_of >= 0) == (theirs.window_of >= 0));
    }
    CHECK_FALSE(uses(kernel, x));
    CHECK_FALSE(uses(kernel, y));
  }
  CHECK(code_kernel(plan, 0) == 0);
}

TEST_CASE("share: kernels that differ in a constant, a type or a mask keep their own code") {
  auto two = [](double c1, double c2, DType t2, bool mask) {
    KernelBuilder kb;
    const IntExpr n = IntExpr::var("N");
    int x = kb.buffer("x", {n});
    int y = kb.buffer("y", {n});
    int z = kb.buffer("z", {n});
    auto scaled = [&](double c) {
      auto k = std::make_shared<ScalarExpr>();
      k->value = c;
      return op(Op::mul, {load(x, {it(0)}), k});
    };
    kb.stmt(Statement::Kind::assign, {n}, y, {it(0)}, scaled(c1));
    kb.plan.kernels.push_back({});
    Kernel& second = kb.plan.kernels.back();
    ScalarExprPtr v = scaled(c2);
    if (mask) {
      auto m = std::make_shared<ScalarExpr>(*v);
      m->mask.push_back({it(0), n - 1});
      v = m;
    }
    Statement s = kb.at(0);
    s.buffer = z;
    s.value = v;
    second.statements.push_back(s);
    second.buffers = {x, z};
    kb.kernel().buffers = {x, y};
    callers(kb.plan, x, y, z);
    kb.plan.buffers[z].dtype = t2;
    return share_kernels(kb.plan);
  };
  CHECK(two(2, 2, DType::f32, false) == 1);  // the same but for the buffer written
  CHECK(two(2, 2.0000001, DType::f32, false) == 0);
  CHECK(two(2, 2, DType::f64, false) == 0);
  CHECK(two(2, 2, DType::f32, true) == 0);
}

TEST_CASE("windows: a stacked input with fewer rows than a window reads is an error naming it") {
  if (!std::getenv("KILN_BIN")) return;
  clitest::Result r = clitest::run_kiln(
      "run tests/regressions/repeat.toml:stack_row --runtime cc --no-check --test L=2,N=7");
  CAPTURE(r.out);
  CHECK(r.code != 0);
  CHECK(r.out.find("the window 'w_2' of input buffer 'w' (elements 14 to 21) lies outside its 14 "
                   "elements") != std::string::npos);
}
