/** \file
 * Lowering: instantiates a composite into a graph of primitive ops. Composites it calls are
 * inlined; types and symbolic shapes are checked on the way, and every mismatch is a SpecError
 * at the offending text. Size variables of the top composite stay symbolic (they become the
 * graph's size variables); a leading `...` becomes `batch_rank` size variables batch0, batch1...
 */
#pragma once

#include <map>
#include <string>

#include "dsl/library.h"
#include "ir/graph.h"

namespace kiln {

/** Choices that a spec leaves to the caller. */
struct LowerOptions {
  std::map<std::string, DType> dtypes;     ///< type variable -> dtype; default: first allowed
  int batch_rank = 0;                      ///< how many dimensions a leading `...` stands for
  std::map<std::string, AttrValue> attrs;  ///< attribute overrides
  /** Size variables to specialise: they become constants and leave the graph's size
   *  variables (batch dimensions are named batch0, batch1, ...). */
  std::map<std::string, int64_t> fixed_sizes;
};

/** Lowers `c` (loaded through `lib`) to a graph. Throws SpecError. */
Graph lower_composite(const Library& lib, const Composite& c, const LowerOptions& opt = {});

/** The dtype each type variable of `c` takes under `opt`: the option, else the first allowed
 *  (f32 for an undeclared variable). */
std::map<std::string, DType> resolve_type_vars(const Composite& c, const LowerOptions& opt);

/** The size variables of `c`: the names in the dimensions of its inputs' and outputs' types
 *  that are not attributes, sorted. */
std::vector<std::string> size_variables(const Composite& c);

}  // namespace kiln
