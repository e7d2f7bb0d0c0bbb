/** \file
 * A reduction over axes in separate runs becomes one reduction per run, a pass over the graph
 * before the values are planned (GPU backends; BuildOptions::split_reduce_runs).
 *
 * A batch norm's statistics sum `x[b, c, p]` over b and p, the channel c between them. On a
 * GPU such a reduce runs one block per channel (C blocks, 256 for ResNet's widest layer on 132
 * multiprocessors), each walking B runs of P elements: too few blocks to keep the memory busy,
 * and each block's sum one long chain. Summed one run at a time, innermost first, the same
 * reduction is a row sum over p for every (b, c) — B · C rows, one block each, reading
 * contiguous rows — then a column sum over b of B partial sums per channel. The runs are
 * maximal sets of consecutive reduced axes; the split depends on the layout alone, never on
 * the sizes or on what the composite is. Sums, products and maxima are associative, so the
 * values agree up to rounding (the sums' partial sums are held as wide as the reduce's own
 * accumulator).
 *
 * A whole tensor reduced to one value over two or more dimensions (a loss's mean over
 * [M, N]) ran on one block, each thread summing M · N / 1024 terms in order (an MSE over 64 M
 * values 7e-5 off); its innermost dimension is summed first, a row sum per row, then the rows'
 * sums. A sum to one value over one axis (a loss over a flattened tensor, `sum(x)` of a vector)
 * ran on one block too; unless the axis is a constant under two slices or the value is read back
 * over a tensor (a vector's mean: its block sums and then normalises the row), it is summed in
 * slices of kScalarSlice terms (the operand read as [S, kScalarSlice], the points past its end
 * masked to zero), a row sum per slice, then the slices' sums. Other reductions over one run (a
 * row's, a column's), maxima and products to one value over one axis, and bounded ones (a domain)
 * stay as they are.
 */
#pragma once

#include "ir/graph.h"

namespace kiln {

/** The terms of a slice of a sum to one value over one axis (see above): 4096, 16 a thread of a
 *  block of 256. */
inline constexpr int64_t kScalarSlice = 4096;

/** Splits every reduce of `g` over two or more runs of axes into one reduce per run, the
 *  innermost run first, and every long sum to one value over one axis into slices; returns how
 *  many were split. The graph computes the same values. */
int split_reduce_runs(Graph& g);

}  // namespace kiln
