/** \file
 * A graph printed back as a composite of the spec language (docs/spec-language.md), so that
 * `kiln grad` can hand the backward graph to the user as a spec Kiln loads again. Each node
 * becomes one statement over builtins (`full`, `iota`, `reshape`, `take_along`, `scatter`, ...)
 * and index notation: a view with affine indices and no mask reads its source by subscripts, a
 * row-major reshape is `reshape`, and any other view reads the flattened source at a computed
 * offset (a gather; positions its mask removes read 0). The composite is monomorphic: dtypes are
 * the graph's, sizes its size variables.
 */
#pragma once

#include <stdexcept>
#include <string>

#include "ir/graph.h"

namespace kiln {

/** A graph the printer cannot express (an extern call, a bounded reduction it cannot name). */
struct SpecPrintError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** What goes into the composite's table besides what the graph says. */
struct SpecPrintOptions {
  std::string doc;   ///< the `doc` line
  std::string test;  ///< the `test` table's inline text (`{ sizes = { N = 7 } }`), or none
};

/** `g` as one composite named `g.name`, a TOML table with doc, in, out, where (the graph's size
 *  checks as shape facts), body and test. Throws SpecPrintError for a node it cannot print. */
std::string graph_to_spec(const Graph& g, const SpecPrintOptions& opt = {});

}  // namespace kiln
