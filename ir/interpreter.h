/** \file
 * The reference interpreter: the oracle every runtime is checked against. Evaluates any graph
 * for any binding of its size variables. Floating-point work is done in double (an explicit
 * cast to a narrower float rounds, as the program asked); integer work is exact with
 * wrap-around to the node's dtype. Written for clarity, not speed.
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

/** Size-variable bindings: name -> value. */
using SizeBindings = std::map<std::string, int64_t>;

/** Nodes of at least this many elements that one reduction, view or elementwise node reads
 *  are not stored: their elements are computed where it reads them (2^22 elements, 32 MiB in
 *  the interpreter's 8 bytes each). A matmul's product `a[m, k] * b[k, n]` is M · N · K
 *  elements: stored, with its two broadcasts, 24 GiB at 1024³. */
inline constexpr int64_t kLazyElements = int64_t{1} << 22;

/** Evaluates `g` on `inputs` (in g.inputs order); returns the outputs in g.outputs order.
 *  Throws std::runtime_error with a clear message on an unbound size, a wrong input shape or
 *  dtype, an integer division by zero, or a view that reads outside its source; SizeError
 *  (ir/sizes.h) for a node whose shape is negative, overflows or exceeds the limits, and
 *  TensorAllocError naming the node when its memory cannot be allocated. `checked`
 *  (--config CHECK=1): a gathered or scattered position outside its axis is an error, not a 0 or
 *  a dropped value. `lazy_from`: the element count from which nodes are computed where read
 *  (kLazyElements; the results are the same bits at any value). */
std::vector<Tensor> interpret(const Graph& g, const SizeBindings& sizes,
                              const std::vector<Tensor>& inputs, bool checked = false,
                              int64_t lazy_from = kLazyElements);

}  // namespace kiln
