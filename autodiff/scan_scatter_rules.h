/** \file
 * The gradient rules of the scans, gathers and scatters (internal to autodiff/; the table of
 * grad_rules.cpp holds them). Each adds to its operands' adjoints in `ctx` the vector-Jacobian
 * product of node `n` with its cotangent `ct`.
 */
#pragma once

#include "autodiff/grad_rules.h"

namespace kiln::autodiff {

/** add: a reverse running sum. mul: the product of the others by reverse running sums, exact
 *  where elements are zero. max: the cotangent of each position to the maxima of its prefix,
 *  ties split equally (a bounded reduction over pairs, quadratic along the axis). */
void rule_scan(GradContext& ctx, NodeId n, NodeId ct);

/** dsrc = scatter(add, 0, index, ct); none for the index. */
void rule_gather(GradContext& ctx, NodeId n, NodeId ct);

/** add: dbase = ct, dsrc = gather(ct, index). max: each target's cotangent split equally among
 *  the base element and the scattered values equal to its maximum. mul: refused. */
void rule_scatter(GradContext& ctx, NodeId n, NodeId ct);

}  // namespace kiln::autodiff
