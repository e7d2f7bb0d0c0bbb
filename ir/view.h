/** \file
 * Views: reshape, permute, expand, slice, pad and stride as index maps instead of copies.
 * A view of rank r reads a source tensor; for each source dimension it gives the source index as
 * an expression over the view's index variables `%0 .. %r-1` and the size variables. An element
 * of the view is valid when every mask constraint `0 <= expr < bound` holds; invalid elements
 * read as zero (this is how pad is expressed). Views compose: a view of a view is one view.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/int_expr.h"
#include "ir/size_facts.h"

namespace kiln {

/** Valid when `0 <= expr < bound`, `expr` over the view's index variables. */
struct MaskBound {
  IntExpr expr;
  IntExpr bound;
};

/** An index map from a view's index space into its source. */
struct View {
  Shape shape;                  ///< the view's own shape
  std::vector<IntExpr> index;   ///< one source index per source dimension
  std::vector<MaskBound> mask;  ///< all must hold for an element to be valid

  /** The identity view of a tensor of shape `s`. */
  static View identity(const Shape& s);

  /** True when this view reads its source unchanged (same shape, index `%k` in dimension k). */
  bool is_identity(const Shape& source) const;

  /** `outer` applied to the result of `inner`: one view reading inner's source. */
  static View compose(const View& outer, const View& inner);

  std::string str() const;
};

/** A short human description of `v` read from a tensor of shape `source`, for pictures of the
 *  graph: the primitives it amounts to, then the shapes, e.g. "transpose [M, N] -> [N, M]",
 *  "broadcast dim 0 [1, N] -> [M, N]", "slice dim 1 from 2 step 2, pad dim 0 by (1, 1) [...] ->
 *  [...]", "reshape [M, N] -> [M*N]". A view that is none of these (a reshape after a transpose,
 *  a diagonal) is spelled as its index map over i0, i1, ...: "[M*N] -> [N, M] reads [i1*M +
 *  i0]". */
std::string describe_view(const Shape& source, const View& v);

/** The inverse of a view that reorders its source without dropping, repeating or padding an
 *  element (reshapes and permutes, composed): for each dimension of the view, its index as an
 *  affine expression over the source's coordinates `%0 .. %s-1`. Each source index must be one
 *  digit of one view index (`%k`, `%k / a`, `%k % b`, `(%k / a) % b`) and the digits of `%k`
 *  must rebuild it (`%k = d0 + b0 * (d1 + b1 * ...)`), which makes the view one-to-one; the
 *  element counts must be equal under `facts`, which makes it onto. Nullopt otherwise (a mask,
 *  a slice, a broadcast, a flip, a stride, a window). */
std::optional<std::vector<IntExpr>> invert(const View& v, const Shape& source,
                                           const SizeFacts& facts);

/** Whether every position of `x` is affine in the view positions `%k` with integer
 *  coefficients (sizes may multiply only constants and each other). */
bool affine_in_positions(const std::vector<IntExpr>& x);

/** A tensor of shape `source` addressed at `x` (over positions `%k` of extents `extents`) read
 *  as an alias with dimensions split, where multiplying a position by a size is what keeps
 *  `x` from being affine (heads in a feature axis: [B, L, E] at `[b, i, (E / H)·h + d]` is
 *  [B, L, H, E / H] at `[b, i, h, d]`): the same elements in the same row-major order. */
struct SplitAddress {
  Shape shape;                  ///< the alias's
  std::vector<IntExpr> index;   ///< over the same positions, affine
  std::vector<size_t> dims_of;  ///< per source dimension, how many of the alias's it became
};

/** The split of `x` (see SplitAddress): each position that is not affine must be a sum of
 *  positions whose size coefficients are a mixed radix of their extents (the innermost
 *  coefficient 1, each next the product of the extents inside it), and under `facts` each
 *  split dimension's extents must multiply to its source extent, or the alias hold as many
 *  elements as `source` (the reshape's own equality of element counts, which the sizes are
 *  checked against). Nullopt where `x` is affine or does not split so. */
std::optional<SplitAddress> split_address(const std::vector<IntExpr>& x, const Shape& extents,
                                          const Shape& source, const SizeFacts& facts);

/** The view primitives. Each takes the source shape and returns a view of it. Callers check
 *  arguments first (the spec front end reports bad ones with a location); these assume them. */
namespace views {

/** Reinterpret row-major data with a new shape of equal element count. */
View reshape(const Shape& src, const Shape& dst);
/** Dimension k of the result is dimension perm[k] of the source. */
View permute(const Shape& src, const std::vector<int>& perm);
/** Broadcast size-1 dimensions to `dst` (same rank). */
View expand(const Shape& src, const Shape& dst);
/** Elements start, start+step, ... of `axis`, `count` of them (step may be negative). */
View slice(const Shape& src, int axis, const IntExpr& start, const IntExpr& count, int64_t step);
/** Adds `before` and `after` zero elements around `axis`. */
View pad(const Shape& src, int axis, const IntExpr& before, const IntExpr& after);

}  // namespace views

}  // namespace kiln
