// scheduler/split_column_sums: column reductions of a kernel of rows get a kernel of their own
// (CPU backends), on hand-built kernels and on the backward composites of row-wise norms.
#include <doctest/doctest.h>

#include <set>

#include "autodiff/gradient.h"
#include "scheduler/build_statements.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/plan_values.h"
#include "scheduler/split_column_sums.h"
#include "tests/support/harness.h"
#include "tests/support/kernel_builder.h"
#include "tests/support/kernel_plans.h"

using namespace kiln;
using kiln::test::check_order;
using kiln::test::it;
using kiln::test::KernelBuilder;
using kiln::test::load;

namespace {

const IntExpr M = IntExpr::var("M"), N = IntExpr::var("N");

/** The plan of the backward composite of `target` with respect to `wrt` (stats saved), with
 *  one batch dimension of 3 rows. */
KernelPlan backward_plan(const std::string& target, const std::vector<std::string>& wrt) {
  test::RunSpec spec;
  spec.target = target;
  spec.sizes = {{"N", 7}};
  spec.dtypes = {{"T", DType::f32}};
  spec.batch = {3};
  spec.interpret = false;
  Graph g = gradient(test::run(spec).graph, wrt, GradSave::stats).graph;
  return build_statements(g, plan_values(g, ValueOptions{}));
}

/** The names of the buffers the statements of `k` write. */
std::set<std::string> written(const KernelPlan& plan, const Kernel& k) {
  std::set<std::string> out;
  for (const Statement& s : k.statements)
    out.insert(plan.buffers[s.buffer].name);
  return out;
}

/** rows[i0, i1] = x[i0, i1]; col[i1] = sum over i0 of x[i0, i1] (its init first); then, where
 *  `overwrite`, x[i0, i1] = 0 after it. */
KernelBuilder rows_and_columns(bool overwrite) {
  KernelBuilder b;
  int x = b.buffer("x", {M, N}), rows = b.buffer("rows", {M, N}), col = b.buffer("col", {N});
  b.plan.buffers[x].kind = BufferKind::input;
  b.stmt(Statement::Kind::assign, {M, N}, rows, {it(0), it(1)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::reduce_init, {N}, col, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {M, N}, col, {it(1)}, load(x, {it(0), it(1)}));
  if (overwrite) {
    auto zero = std::make_shared<ScalarExpr>();
    zero->kind = ScalarExpr::Kind::constant;
    b.stmt(Statement::Kind::assign, {M, N}, x, {it(0), it(1)}, zero);
  }
  return b;
}

}  // namespace

TEST_CASE("split_column_sums: a sum over the rows beside row-wise work moves, its init with it") {
  KernelBuilder b = rows_and_columns(false);
  REQUIRE(split_column_sums(b.plan) == 1);
  REQUIRE(b.plan.kernels.size() == 2);
  CHECK(written(b.plan, b.plan.kernels[0]) == std::set<std::string>{"rows"});
  CHECK(written(b.plan, b.plan.kernels[1]) == std::set<std::string>{"col"});
  CHECK(b.plan.kernels[1].statements[0].kind == Statement::Kind::reduce_init);
  CHECK(b.plan.kernels[1].statements[1].name == "S1");
  check_order(b.plan);
}

TEST_CASE("split_column_sums: a sum of the rows' values into a scalar moves, its readers with it") {
  // r[i] = sum over j of x[i, j]; total = sum over i of r[i]; loss = total * 2 (a cross-entropy's
  // mean over its rows): the rows stay in parallel, the total and its scale go after them.
  KernelBuilder b;
  int x = b.buffer("x", {M, N}), r = b.buffer("r", {M}), total = b.buffer("total", {}),
      loss = b.buffer("loss", {});
  b.plan.buffers[x].kind = BufferKind::input;
  b.stmt(Statement::Kind::reduce_init, {M}, r, {it(0)});
  b.stmt(Statement::Kind::reduce_update, {M, N}, r, {it(0)}, load(x, {it(0), it(1)}));
  b.stmt(Statement::Kind::reduce_init, {}, total, {});
  b.stmt(Statement::Kind::reduce_update, {M}, total, {}, load(r, {it(0)}));
  b.stmt(Statement::Kind::assign, {}, loss, {},
         test::op(Op::add, {load(total, {}), load(total, {})}));
  REQUIRE(split_column_sums(b.plan) == 1);
  REQUIRE(b.plan.kernels.size() == 2);
  CHECK(written(b.plan, b.plan.kernels[0]) == std::set<std::string>{"r"});
  CHECK(written(b.plan, b.plan.kernels[1]) == std::set<std::string>{"total", "loss"});
  check_order(b.plan);
}

TEST_CASE("split_column_sums: what stays put") {
  SUBCASE("a later statement rewrites what the sum reads") {
    KernelBuilder b = rows_and_columns(true);
    CHECK(split_column_sums(b.plan) == 0);
    CHECK(b.plan.kernels.size() == 1);
  }
  SUBCASE("a later statement reads the sum") {
    KernelBuilder b = rows_and_columns(false);
    const int col = 2;  // rows_and_columns' third buffer
    int out = b.buffer("out", {M, N});
    b.stmt(Statement::Kind::assign, {M, N}, out, {it(0), it(1)}, load(col, {it(1)}));
    CHECK(split_column_sums(b.plan) == 0);
  }
  SUBCASE("a row sum (along the last iterator)") {
    KernelBuilder b;
    int x = b.buffer("x", {M, N}), r = b.buffer("r", {M}), y = b.buffer("y", {M, N});
    b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, load(x, {it(0), it(1)}));
    b.stmt(Statement::Kind::reduce_init, {M}, r, {it(0)});
    b.stmt(Statement::Kind::reduce_update, {M, N}, r, {it(0)}, load(x, {it(0), it(1)}));
    CHECK(split_column_sums(b.plan) == 0);
  }
  SUBCASE("nothing row-wise stays behind") {
    KernelBuilder b;
    int x = b.buffer("x", {M, N}), col = b.buffer("col", {N});
    b.stmt(Statement::Kind::reduce_init, {N}, col, {it(0)});
    b.stmt(Statement::Kind::reduce_update, {M, N}, col, {it(1)}, load(x, {it(0), it(1)}));
    CHECK(split_column_sums(b.plan) == 0);
    CHECK(b.plan.kernels.size() == 1);
  }
}

TEST_CASE("split_column_sums: row-wise backward passes keep their rows apart from the weights") {
  struct Case {
    const char* target;
    std::vector<std::string> wrt;
    std::set<std::string> columns;  ///< what the second kernel writes
  };
  // The norms' weights (the variants of row_norms.toml are a user's, named nowhere else);
  // softmax has no column sum.
  for (const Case& c : {Case{"ops/nn.toml:layernorm", {"x", "gamma", "beta"}, {"dgamma", "dbeta"}},
                        Case{"ops/nn.toml:rmsnorm", {"x", "gamma"}, {"dgamma"}},
                        Case{"tests/data/row_norms.toml:affine_rmsnorm",
                             {"x", "gamma", "beta"},
                             {"dgamma", "dbeta"}},
                        Case{"tests/data/row_norms.toml:centered_scale", {"x", "w"}, {"dw"}},
                        Case{"ops/nn.toml:softmax", {"x"}, {}}}) {
    CAPTURE(c.target);
    KernelPlan plan = backward_plan(c.target, c.wrt);
    REQUIRE(plan.kernels.size() == 1);
    int moved = split_column_sums(plan);
    CHECK(moved == static_cast<int>(c.columns.size()));
    if (c.columns.empty()) {
      CHECK(plan.kernels.size() == 1);
      continue;
    }
    REQUIRE(plan.kernels.size() == 2);
    CHECK(written(plan, plan.kernels[1]) == c.columns);
    for (const std::string& col : c.columns)
      CHECK(written(plan, plan.kernels[0]).count(col) == 0);
    check_order(plan);
  }
}
