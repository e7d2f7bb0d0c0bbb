/** \file
 * Hand-built kernels for the scheduler's unit tests: a one-kernel plan under construction, the
 * loads and ops of statement values, the iterators i0, i1, ... that statements index by, and the
 * depth of a scheduled loop nest.
 */
#pragma once

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln::test {

/** The iterator of dimension k of a statement's domain. */
inline IntExpr it(int k) {
  return IntExpr::var(iterator_name(k));
}

/** buffer[index...] */
inline ScalarExprPtr load(int buffer, std::vector<IntExpr> index) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::load;
  e->buffer = buffer;
  e->index = std::move(index);
  return e;
}

/** o(args...) */
inline ScalarExprPtr op(Op o, std::vector<ScalarExprPtr> args) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::op;
  e->op = o;
  e->args = std::move(args);
  return e;
}

/** A one-kernel plan under construction, filled in as build_statements fills it: f32 buffers, the
 *  size variables of buffer shapes and extents in plan.size_vars, the kernel's buffers listed,
 *  statements named S0, S1, ... */
struct KernelBuilder {
  KernelPlan plan;

  KernelBuilder() { plan.kernels.emplace_back(); }
  Kernel& kernel() { return plan.kernels[0]; }
  const Kernel& kernel() const { return plan.kernels[0]; }
  /** Statement k of the kernel. */
  const Statement& at(int k) const { return kernel().statements.at(k); }

  /** A new buffer named b<k>; returns its index. */
  int buffer(Shape shape) {
    return buffer("b" + std::to_string(plan.buffers.size()), std::move(shape));
  }
  /** A new buffer; returns its index. */
  int buffer(const std::string& name, Shape shape) {
    add_sizes(shape);
    Buffer b;
    b.name = name;
    b.shape = std::move(shape);
    plan.buffers.push_back(std::move(b));
    kernel().buffers.push_back(static_cast<int>(plan.buffers.size()) - 1);
    return kernel().buffers.back();
  }
  /** Appends a statement writing buffer[index...] over the domain `extents`. */
  Statement& stmt(Statement::Kind kind, Shape extents, int buf, std::vector<IntExpr> index,
                  ScalarExprPtr value = nullptr) {
    add_sizes(extents);
    Statement s;
    s.name = "S" + std::to_string(kernel().statements.size());
    s.kind = kind;
    s.extents = std::move(extents);
    s.buffer = buf;
    s.index = std::move(index);
    s.value = std::move(value);
    kernel().statements.push_back(std::move(s));
    return kernel().statements.back();
  }

 private:
  void add_sizes(const std::vector<IntExpr>& exprs) {
    std::set<std::string> vars;
    for (const IntExpr& e : exprs)
      e.collect_vars(vars);
    for (const std::string& v : vars)
      if (std::find(plan.size_vars.begin(), plan.size_vars.end(), v) == plan.size_vars.end())
        plan.size_vars.push_back(v);
  }
};

/** The deepest nesting of loops in n. */
inline int depth(const LoopNode& n) {
  int d = 0;
  for (const auto& c : n.body)
    d = std::max(d, depth(*c));
  return d + (n.kind == LoopNode::Kind::loop);
}

}  // namespace kiln::test
