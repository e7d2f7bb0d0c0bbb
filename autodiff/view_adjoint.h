/** \file
 * The adjoint of a view (internal to autodiff/): the cotangent of a view's source from the
 * cotangent of the view. A view reads source element f(p) at view position p where its mask
 * holds, so the source's cotangent at q sums the view's cotangent over every valid p with
 * f(p) = q. Broadcast dimensions are summed; what remains is inverted as a view where that is
 * exact (reshape and permute through ir/view.h `invert`; slice, pad and flip with unit steps as a
 * masked view), and otherwise added up with a scatter over the flattened source.
 */
#pragma once

#include "ir/graph.h"

namespace kiln::autodiff {

/** The cotangent of the source of view node `n` (in `g`) given `ct`, the cotangent of `n`. */
NodeId view_adjoint(Graph& g, NodeId n, NodeId ct);

/** The integer expression `e` (over index variables %0.. of `shape` and size variables) as an
 *  i64 node of `shape`, with floor division and modulus as IntExpr defines them. (Arguments by
 *  value: they may live in `g`, whose nodes move as nodes are added.) */
NodeId int_expr_node(Graph& g, const IntExpr& e, Shape shape);

/** A bool node of `shape`: true where every expression of `domain` is >= 0. */
NodeId domain_mask(Graph& g, std::vector<IntExpr> domain, Shape shape);

}  // namespace kiln::autodiff
