/** \file
 * Mapping loops onto the hardware, transforms of the loop IR that read the annotations isl's
 * schedule left (LoopNode::coincident, reduction) and the kernel's accesses.
 *
 * - map_parallel: the outermost loop of each nest runs across threads when it is coincident and
 *   in canonical form (`iter < bound` or `iter <= bound` with a bound free of `iter`); up to
 *   `max_collapse` loops perfectly nested in it that are coincident, canonical and rectangular
 *   (bounds free of the outer iterators) are mapped with it, for a backend to collapse. A nest
 *   whose outermost loop is not coincident stays serial: a parallel loop below a serial one
 *   would start threads at every outer iteration. The exception is a serial tile loop (a
 *   reduction in blocks, register_tile.h): each of its iterations is a block's work, so the
 *   loops inside are mapped as if it were not there.
 * - map_simd: an innermost loop outside any parallel loop's collapse runs across vector lanes
 *   when it is coincident, or when it carries a sum or product into a scalar accumulator
 *   (promote_accumulators) and every other dependence it carries is none at all (isl's
 *   dependences, LoopNode::only_reductions: a scan fused into the loop keeps it serial), and
 *   every access of its statements is unit-stride or invariant in
 *   it: the loop's iterator drives one statement iterator with coefficient 1, which the last
 *   index dimension of each access uses with coefficient 1 (and no other dimension uses).
 *   Given the target's full-width vector bytes, a loop whose statements all write floats runs
 *   at that many bytes a vector (LoopNode::simd_lanes: 16 lanes of f32 in 64 bytes); the C
 *   compiler would otherwise keep to its preferred width.
 */
#pragma once

#include <optional>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln {

/** Maps loops of `nest` to Mapping::parallel; returns how many nests got a parallel loop. Given
 *  the kernel (`plan` and `k`: a backend that maps loops to vector lanes too), an innermost loop
 *  whose statements run unit-stride along it stays out of the collapse, for map_simd: collapsed,
 *  `y[i, j] = x[i, j] + b[j]` ran at a ninth of a copy's speed (each iteration recovers i and j
 *  by a division, and the loop no longer vectorises). */
int map_parallel(LoopNest& nest, int max_collapse, const KernelPlan* plan = nullptr,
                 const Kernel* k = nullptr);

/** Maps loops of `nest` (the loop IR of kernel `k` of `plan`) to Mapping::simd, float loops at
 *  `vector_bytes` a vector where > 0; returns how many. */
int map_simd(const KernelPlan& plan, const Kernel& k, LoopNest& nest, int vector_bytes = 0);

/** Whether statement node `stmt` (of kernel `k`) accesses memory unit-stride or invariantly in
 *  loop iterator `iter`: `iter` drives at most one statement iterator, with coefficient 1, which
 *  only the last index dimension of each access (not counting trailing dimensions of extent 1)
 *  uses, with coefficient 1. */
bool unit_stride_statement(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                           const std::string& iter);

/** Whether a register tile may run contraction update `stmt` (of kernel `k`) with loop `iter`
 *  across its vector lanes reading some operands at every second element: the element written
 *  moves unit-stride along `iter` (as unit_stride_statement) and every load either does so or,
 *  unmasked, moves along the last dimension by 2 (a window of stride 2, a strided convolution's
 *  input), which the renderer loads as two vectors and their even lanes. */
bool stride2_statement(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                       const std::string& iter);

/** Whether a register tile may run contraction update `stmt` (of kernel `k`) with loop `iter`
 *  across its vector lanes when its panel of row-shared operands is packed (register_tile.h):
 *  the element written moves unit-stride along `iter`, and every load that moves along it
 *  either does so unit-stride or is unmasked and does not read the statement iterator `row`
 *  (an operand every row of the tile shares, `w[j, k]` of `x · wᵀ`, which the pack gathers
 *  once per k block). An empty `row` stands for the iterator of the written index's dimension
 *  before the lane's, the one a tile's rows take (interchange.h, before the tile exists). */
bool packable_statement(const KernelPlan& plan, const Kernel& k, const LoopNode& stmt,
                        const std::string& iter, std::string row = "");

/** Whether an access with `index` into a buffer of `shape` is invariant or unit-stride in
 *  iterator `var`: trailing dimensions of extent 1 (a reduction's keepdim) do not count. */
bool unit_stride(const std::vector<IntExpr>& index, const Shape& shape, const std::string& var);

/** Whether `loop` is in canonical form: its condition compares its iterator against a bound
 *  free of the iterator, with a positive step. */
bool canonical_loop(const LoopNode& loop);

}  // namespace kiln
