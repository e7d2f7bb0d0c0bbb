/** \file
 * Reverse-mode differentiation of a graph (docs/autodiff.md). `gradient` takes the lowered graph
 * of one composite — before the simplifier, so it sees only the primitives lowering emits — and
 * returns the backward composite as a new graph: its inputs are the forward inputs followed by
 * one cotangent per float output (`dy` for output `y`), its outputs the gradients of the chosen
 * inputs (`dx` for input `x`). Which forward values the backward graph takes as inputs and
 * which it recomputes is a policy (GradSave): the saved values come between the forward inputs
 * and the cotangents, and the forward graph gets them as extra outputs. The result is an
 * ordinary graph that the interpreter, the simplifier and the scheduler take like any other.
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

/** What the backward graph takes from the forward pass besides the forward inputs
 *  (docs/autodiff.md, "Saved values"). Chosen by the graph's structure and shapes, never by
 *  the composite's name. */
enum class GradSave {
  /** Nothing: every forward value a rule reads is recomputed from the forward inputs. */
  recompute,
  /** The results of reductions that are no larger than a forward input or output for every
   *  binding of the sizes (>= 1): the row statistics of a softmax (maximum, sum) or a norm (sum,
   *  sum of squares). Everything else is recomputed, so attention's L x S scores and weights are
   *  recomputed from q and k and the saved row statistics (FlashAttention's choice). */
  stats,
  /** Every float value a rule reads that the forward pass computes (not an input, a constant,
   *  an index, nor a view of one of those): what an eager framework keeps. */
  all,
};

/** "recompute", "stats", "all". */
const char* grad_save_name(GradSave s);
/** The policy named `name`; std::invalid_argument naming the known ones otherwise. */
GradSave parse_grad_save(const std::string& name);

/** A backward graph and what it takes from the forward pass. */
struct Backward {
  /** Inputs: the forward inputs, then the saved values (named `saved`), then one cotangent per
   *  float output; outputs: the gradients, one per name of `wrt`. Named `<forward>_grad`. */
  Graph graph;
  /** The forward graph with the saved values as extra outputs after its own, named as in
   *  `graph`'s inputs: the forward pass to run when the backward pass follows. Named
   *  `<forward>_save`; with nothing saved, the forward graph under that name. */
  Graph forward;
  /** The saved values' names, in order (`saved_N`, N the forward node's number). */
  std::vector<std::string> saved;
};

/** The backward graph of `forward` with respect to the inputs named in `wrt` (each a float
 *  input of `forward`; std::invalid_argument names a bad one), taking the forward values that
 *  `save` chooses as inputs. Throws GradError when the gradient cannot be taken. */
Backward gradient(const Graph& forward, const std::vector<std::string>& wrt, GradSave save);

/** gradient(forward, wrt, GradSave::recompute).graph: the backward graph that takes the
 *  forward inputs and the cotangents alone. */
Graph gradient(const Graph& forward, const std::vector<std::string>& wrt);

}  // namespace kiln
