/** \file
 * Graph → kernel IR. Every reduce and every graph output is materialised into a buffer by
 * statements (a reduce by an init statement over its kept axes and an update statement over all
 * of its operand's axes), and so is every value the value planner stores (scheduler/plan_values.h:
 * an assign statement over its shape, into a temp, or into its output when the value is one);
 * everything else — elementwise ops, constants, index ops and views — is inlined into the
 * expressions of the statements that use it, with views turned into index arithmetic and masks. An
 * extern call becomes one `call` statement on whole buffers: operands that are not already
 * contiguous buffers (views, elementwise results) are first materialised into temps, and the result
 * is a buffer (the output's own when the call is an output). A reduce that one view alone reads,
 * where the view reorders it one-to-one (ir/view.h invert: heads merged back, a transpose, a
 * squeezed kept axis), is computed straight into the view's buffer at the view's inverse index,
 * so no copy reorders it afterwards. Statements come out in a legal
 * sequential order (the graph's). The result is one kernel; cut_kernels.h then splits it where a
 * backend needs a cut or where one isl problem would grow too large, and within each kernel the
 * polyhedral scheduler decides which loop nests fuse.
 */
#pragma once

#include "ir/graph.h"
#include "ir/kernel_ir.h"
#include "scheduler/plan_values.h"

namespace kiln {

/** What differs between backends in lowering. */
struct BuildOptions {
  /** Whether a reduction reads an input through a view whose index is not affine with
   *  constant coefficients (heads split from a feature axis, `(C / H)·h + d`) from a layout
   *  copy (layout_load) rather than from the input. CPU backends read the input: its reads
   *  create no dependence isl must see exactly, and their register tile packs a strided
   *  operand per k block anyway; GPU backends copy, so that their tiles load coalesced. */
  bool copy_input_views = true;
  /** CPU backends: padding read through a window is split out of it (scheduler/split_padding.h)
   *  and the value planner costs its bounds tests (ValueOptions::masked_view_cost), so that a
   *  padded operand a contraction reads many times is stored once and its register tile loads
   *  whole vectors. GPU backends keep the tests inline (a predicated load). */
  bool store_padding = false;
  /** A reduce in f16 or bf16 (accumulated in f32) that a contraction multiplies inline, a
   *  projection whose result attention reads, is also stored in its own dtype by an epilogue,
   *  which the contraction loads: GPU backends, whose tensor cores take f16 and bf16 operands
   *  (and whose fused attention kernel does only then). CPU backends widen operands to f32 in
   *  their packs anyway, and read the accumulator. */
  bool narrow_contraction_operands = true;
  /** Before the values are planned, a reduce over separate runs of axes becomes one reduce per
   *  run (scheduler/split_reduce_runs.h): GPU backends, where a batch norm's statistics would
   *  otherwise run a block per channel. CPU backends run them in one pass over the rows. */
  bool split_reduce_runs = true;
};

/** Lowers a verified graph to a kernel plan, storing the values `values` stores. */
KernelPlan build_statements(const Graph& g, const ValuePlan& values, const BuildOptions& opt = {});

/** The same with every value the planner's default options store. */
KernelPlan build_statements(const Graph& g);

}  // namespace kiln
