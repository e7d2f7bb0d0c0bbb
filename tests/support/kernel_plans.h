/** \file
 * Kernel plans of spec composites for the scheduler's tests, the cut options the backends set
 * (backends/backend.cpp), and a check that a plan's kernels read only what earlier ones wrote.
 */
#pragma once

#include <map>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "scheduler/build_statements.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/split_reduce_runs.h"
#include "scheduler/split_reduces.h"
#include "tests/support/harness.h"

namespace kiln::test {

/** The kernel plan of FILE:COMPOSITE at small sizes, before any cut. */
inline KernelPlan plan_of(const std::string& target, SizeBindings sizes = {{"N", 5}},
                          DType t = DType::f32, std::map<std::string, AttrValue> attrs = {},
                          bool gpu = false) {
  RunSpec spec;
  spec.target = target;
  spec.sizes = std::move(sizes);
  spec.dtypes = {{"T", t}};
  spec.attrs = std::move(attrs);
  spec.interpret = false;
  ValueOptions values;
  values.online_softmax = gpu;  // as the pipeline sets it for the CUDA backend
  Graph g = run(spec).graph;
  split_reduces(g);  // as the pipeline does before planning the values
  BuildOptions build;
  if (gpu) split_reduce_runs(g);  // GPU backends (BuildOptions::split_reduce_runs)
  build.narrow_contraction_operands = gpu;
  return build_statements(g, plan_values(g, values), build);
}

/** The cut options of the CUDA backend (backends/backend.cpp). */
inline CutOptions gpu_cut_options() {
  CutOptions opt;
  opt.cut_before_grid_barriers = true;
  opt.cut_around_contractions = true;
  opt.contractions_reuse_an_operand = true;
  opt.fuse_softmax_contractions = true;
  opt.store_shared = false;
  return opt;
}

/** The cut options of the CPU backends (backends/backend.cpp, cpu_cuts). */
inline CutOptions cpu_cut_options() {
  CutOptions opt;
  opt.cut_around_contractions = true;
  opt.contractions_reuse_an_operand = true;
  return opt;
}

/** Every load of every kernel reads an input or a buffer written by an earlier statement (in
 *  this kernel or an earlier one): the kernels run in order. */
inline void check_order(const KernelPlan& plan) {
  std::set<int> written;
  for (const Kernel& k : plan.kernels) {
    std::set<int> used(k.buffers.begin(), k.buffers.end());
    for (const Statement& s : k.statements) {
      std::vector<const ScalarExpr*> loads;
      if (s.value) collect_loads(*s.value, loads);
      for (const ScalarExpr* l : loads) {
        CAPTURE(plan.buffers[l->buffer].name);
        CHECK(used.count(l->buffer) == 1);
        CHECK((plan.buffers[l->buffer].kind == BufferKind::input || written.count(l->buffer)));
      }
      CHECK(used.count(s.buffer) == 1);
      written.insert(s.buffer);
    }
  }
}

}  // namespace kiln::test
