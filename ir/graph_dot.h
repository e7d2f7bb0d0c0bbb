/** \file
 * The graph IR as a Graphviz digraph, for `kiln show --stage graph|simplified --format dot`:
 * one node per graph node (inputs, constants, views and reductions each drawn their own way,
 * views labelled by what they amount to, ir/view.h describe_view), an edge per operand, and the
 * named outputs.
 */
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln {

/** Graphviz dot form of `g`. */
std::string graph_to_dot(const Graph& g);

}  // namespace kiln
