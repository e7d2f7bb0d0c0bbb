/** \file
 * Kernel cutting: partitions the statements of a kernel into several kernels (fusion groups)
 * that run one after the other, so that isl schedules each group on its own. isl's cost grows
 * much faster than linearly with the statements and accesses of one problem (16 stacked layer
 * normalisations: 112 s as one kernel), so a composite's compile time stays linear only when no
 * group grows past a budget.
 *
 * The rule, cheap and in statement order (docs/decisions.md):
 * - A cut is *clean* after statement p when every buffer written so far is complete: no later
 *   statement writes it again (so never between a reduction's init and its update).
 * - Backend cuts: with CutOptions::cut_after_reductions, after every completed reduction (a GPU
 *   needs a grid-wide barrier before statements read a reduction across threads).
 * - Budget cuts: a group grows statement by statement; when the next statement would take it
 *   past CutOptions::max_statements, the group ends at its latest clean point (or, with none,
 *   right there). Groups within the budget — a softmax, a layer normalisation, a contraction
 *   with its epilogue, a chain of elementwise ops (one statement) — stay one kernel.
 * - Materialisation at a cut: elementwise values are inlined into the statements that use them
 *   (build_statements.h), so without more a later group would recompute every earlier group's
 *   chain and grow with it. A later statement's largest subexpression that loads at least twice,
 *   only buffers complete before a cut, at least one of them written by a statement, and is used
 *   twice or more (by statements or values; one used once would only add a store and a load,
 *   and a kernel where it cannot join the group), is stored once
 *   into a new temp by a statement appended to the group before the earliest such cut, and
 *   loaded from there. Subexpressions under a mask or a `where` stay inline (evaluating them
 *   everywhere could read out of bounds or divide by zero), and so do those that do not read
 *   every iterator of the statement (stored over its domain, they would be stored once per
 *   point of the iterators they do not read) or of which no one load reads every iterator
 *   (stored, they would take more memory than anything they read: an outer product), or that
 *   are one cheap operation on loads (recomputed for less than a store and a load). Where the
 *   storing statement could not have stayed in that group under the backend cuts (it reads a
 *   contraction's result at another element, as a head split of a qkv projection does, or reads
 *   across rows on a GPU), it gets a kernel of its own right after the group: appended there,
 *   it would keep the contraction from its tile and run on one GPU thread.
 *
 * Temps that cross kernels stay in memory; plan_buffers.h then shares slots between temps whose
 * kernels do not overlap.
 */
#pragma once

#include "ir/kernel_ir.h"

namespace kiln {

/** Where cut_kernels cuts. */
struct CutOptions {
  /** Cut after every completed reduction (GPU backends); CPU backends fuse across them. */
  bool cut_after_reductions = false;
  /** Cut where a GPU would need a grid-wide barrier (GPU backends): at the latest clean point
   *  before a statement that reads a buffer written earlier in the group other than row by
   *  row, i.e. other than at its own first iterator in the first dimension with the writer's
   *  first iterator there too over the same extent, and each other dimension the writer
   *  indexes by an iterator read at an iterator of the reader over the same extent.
   *  Row-by-row readers (softmax's normalisation of its row sums) stay in the kernel: one
   *  block per row sees its row with a block barrier. A reader at other elements of the row
   *  (a group norm's statistics [B, G] read by channel) is cut: fused, the writer's G groups
   *  would run in a loop inside the row's block.
   *  Sums across rows (a reduction whose element does not move with i0, and its init) and
   *  statements that go row by row are not fused either: together the kernel would have no
   *  loop to run across blocks (a layer norm's backward ran on one thread). */
  bool cut_before_grid_barriers = false;
  /** Give each contraction a kernel of its own (GPU backends): cut before the init of a sum
   *  that gpu_tile may block-tile (scheduler/gpu_tile.h), and after it where a later statement
   *  reads its result other than element by element over the same domain (an epilogue stays
   *  in the tile). Inside a larger kernel (attention's scores, softmax and weighted sum) the
   *  contraction would run one element per thread. */
  bool cut_around_contractions = false;
  /** With cut_around_contractions, count as contractions only sums that reuse an operand along
   *  an iterator of the element they update (the cut gives register_tile or gpu_tile a kernel
   *  of its own): a row sum, batched over two or more dimensions, stays fused with the
   *  statements around it. */
  bool contractions_reuse_an_operand = false;
  /** A softmax-weighted contraction (attention, scheduler/online_softmax.h) and its epilogue
   *  form a kernel of their own, uncut (GPU backends, unless GPU_TILE=0). */
  bool fuse_softmax_contractions = false;
  /** Before cutting, give bounded sums that the tiles would take a rectangular domain
   *  (scheduler/tile_bounded.h): gpu_tile's block tiles (GPU backends, unless GPU_TILE=0), or
   *  register_tile's (CPU backends, tile_bounded_for_registers, unless MICRO=0). */
  bool tile_bounded_contractions = false;
  bool tile_bounded_for_registers = false;
  /** Before that, bound stored values that every reader reads inside one bound to it
   *  (scheduler/demanded_domains.h; CPU backends). */
  bool restrict_demanded = false;
  /** Store a costly value that a reduction and an output statement share once, in the output
   *  (scheduler/store_shared.h); CPU backends only, where one thread runs the whole row. */
  bool store_shared = true;
  /** Give kernels windows of stacked inputs and outputs (scheduler/window_buffers.h): a launch
   *  passes a pointer into the buffer, which a runtime whose buffers are handles (OpenCL's
   *  cl_mem) cannot. */
  bool buffer_windows = true;
  /** Kernels with the same code run one (scheduler/share_kernels.h). */
  bool share_kernels = true;
  /** The most statements of the input a kernel may hold (materialising statements come on
   *  top); 0: no budget. Two layer normalisations fit (5 statements each, with the normalised
   *  value the value planner stores, scheduler/plan_values.h), three do not: as one kernel,
   *  two took isl about as long as one, four five times as long (docs/performance.md). */
  int max_statements = 10;
};

/** What cut_kernels did. */
struct CutCount {
  int kernels = 0;       ///< kernels after cutting
  int materialized = 0;  ///< temps added for values that cross a cut
};

/** Cuts every kernel of `plan` by `opt`, in place; kernels keep their order and name, each
 *  with the buffers its statements use. Statement names are renumbered within each kernel. */
CutCount cut_kernels(KernelPlan& plan, const CutOptions& opt);

}  // namespace kiln
