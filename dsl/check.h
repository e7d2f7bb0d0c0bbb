/** \file
 * Checking a spec file as `kiln check` does: every composite is lowered once for each
 * combination of the dtypes its type variables allow (with and without batch dimensions) and
 * every graph is verified. A dtype-generic composite can be wrong for one dtype only (bitwise ops
 * on floats, a float literal with an integer tensor), so one instantiation is not enough.
 */
#pragma once

#include <string>

#include "dsl/lower.h"

namespace kiln {

/** Every instantiation `check_composite` tries: dtype combinations (at most `cap`) times batch
 *  ranks 0 and 2 when an input uses `...`. */
std::vector<LowerOptions> check_instances(const Composite& c, size_t cap = 64);

/** The SpecError of a size check that failed: at the check's site, with its call trace. */
SpecError size_check_error(const SizeCheck& check, const std::string& problem);

/** Lowers and verifies every instance of `c`, and checks every case of its test table against
 *  the shape facts and assumed equalities of each graph (a case that breaks one is a SpecError
 *  at it). Adds the checks that lowering could not prove to `deferred`, once each. Throws
 *  SpecError (or std::logic_error for a malformed graph, a compiler bug). */
void check_composite(const Library& lib, const Composite& c,
                     std::vector<SizeCheck>* deferred = nullptr);

/** Loads `path` into `lib` and checks every composite; returns the file. */
const SpecFile& check_file(Library& lib, const std::string& path,
                           std::vector<SizeCheck>* deferred = nullptr);

}  // namespace kiln
