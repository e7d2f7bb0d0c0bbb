/** \file
 * The graph verifier: rejects malformed graphs with a message naming the node. Run after the
 * front end and after every pass under test; a failure is a compiler bug, not a user error.
 */
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

/** All problems found, each "%id (op): what is wrong"; empty when the graph is well formed. */
std::vector<std::string> verify(const Graph& g);

/** Throws std::logic_error with the first problem, if any. */
void verify_or_throw(const Graph& g);

}  // namespace kiln
