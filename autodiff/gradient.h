/** \file
 * Reverse-mode differentiation of a graph (docs/autodiff.md). `gradient` takes the lowered graph
 * of one composite — before the simplifier, so it sees only the primitives lowering emits — and
 * returns the backward composite as a new graph: its inputs are the forward inputs followed by
 * one cotangent per float output (`dy` for output `y`), its outputs the gradients of the chosen
 * inputs (`dx` for input `x`). The forward values a rule needs are recomputed inside the
 * backward graph (no saved values yet); the result is an ordinary graph that the interpreter,
 * the simplifier and the scheduler take like any other.
 */
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

/** A gradient that cannot be taken: an op on the path from an input to an output has no
 *  derivative (a cast from an integer, a bitcast) or no rule yet (a scan with `mul`). `node` is
 *  the node of the forward graph where the gradient stops; what() names the op, the node and
 *  why, and the caller adds the spec location. */
struct GradError : std::runtime_error {
  GradError(NodeId node, const std::string& message) : std::runtime_error(message), node(node) {}
  NodeId node;
};

/** The name of the cotangent of output `output` or of the gradient of input `input` (`d` + the
 *  name), made unique against the names `taken` by appending `_`. */
std::string grad_name(const std::string& name, const std::vector<std::string>& taken);

/** The backward graph of `forward` with respect to the inputs named in `wrt` (each a float
 *  input of `forward`; std::invalid_argument names a bad one). Throws GradError when the
 *  gradient cannot be taken. The graph is named `forward.name + "_grad"`. */
Graph gradient(const Graph& forward, const std::vector<std::string>& wrt);

}  // namespace kiln
