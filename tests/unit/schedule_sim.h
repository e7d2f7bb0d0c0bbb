#pragma once
// The scheduler tests' simulator (tests/unit/schedule_*_test.cpp): hand-built kernels, scheduled
// with isl, checked by walking the LoopNode tree with concrete sizes. Every buffer element must
// see the same writes, in the same order, with every read between the same two writes, as in the
// sequential order of the statements; the loops marked coincident, run backwards, must agree too.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/schedule_kernel.h"
#include "tests/support/kernel_builder.h"

namespace kiln::test {

/** Concrete sizes (and loop variables while simulating). */
using Env = std::map<std::string, int64_t>;
/** One statement instance: the statement and its iterator values. */
using Instance = std::pair<int, std::vector<int64_t>>;

const IntExpr M = IntExpr::var("M"), N = IntExpr::var("N"), K = IntExpr::var("K");
const IntExpr B = IntExpr::var("B"), H = IntExpr::var("H"), R = IntExpr::var("R");

/** The value of `e` (iterators and sizes from `env`). */
int64_t eval(const AstExpr& e, const Env& env);
/** Schedules, simulates and checks legality; returns the result for structural checks. */
ScheduledKernel check_legal(const KernelBuilder& b, const ScheduleOptions& opt,
                            const std::vector<Env>& size_sets);
/** Every loop node under `n`, in pre-order. */
std::vector<const LoopNode*> loops(const LoopNode& n);
/** The top-level nodes, looking through blocks. */
std::vector<const LoopNode*> top_level(const LoopNode& n);
/** The alloc nodes of a loop nest (register tiles' and shared memory's), in pre-order. */
void allocs(const LoopNode& n, std::vector<const LoopNode*>& out);
/** Prints a schedule's time and loop nest as a test message. */
void report(const char* what, const ScheduledKernel& r);
/** Options without tiling and without a register tile. */
ScheduleOptions untiled();
/** Default options with isl's tiling but no register tile (register_tile.h). */
ScheduleOptions isl_tiled();
/** C[M, N] = sum over k of A[M, K] * B[K, N], in dtype `t` (buffers and values). */
KernelBuilder matmul(DType t = DType::f32);

}  // namespace kiln::test
