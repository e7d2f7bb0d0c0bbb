/** \file
 * `kiln run --input NAME=FILE.npy`, `--weights FILE.safetensors` and `--save DIR`: inputs from
 * NumPy files and from a weights file (their shapes bind the batch dimensions and the size
 * variables they spell), outputs to one file each (ir/npy.h, ir/safetensors.h).
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/kiln/session.h"

namespace kiln::cli {

/** An input's value from a file, and where it came from for messages ("--input x"). */
struct GivenInput {
  Tensor tensor;
  std::string origin;
};
using GivenInputs = std::map<std::string, GivenInput>;

/** The files of `--input NAME=FILE` items, by input name. A UsageError for a bad item or file. */
GivenInputs read_inputs(const std::vector<std::string>& items);

/** Adds the inputs of `l`'s composite that the safetensors file at `path` holds: the tensor of
 *  the input's name, or else the one whose name reads as it with each '.' an '_'
 *  ("h.0.attn.c_attn.weight" for `h_0_attn_c_attn_weight`), or else the tensors of numbered
 *  blocks stacked along a new leading axis ("h.0.ln_1.weight" … "h.11.ln_1.weight" for
 *  `h_ln_1_weight`, the blocks 0 .. n - 1 each once, of one dtype and shape; in
 *  tools/kiln/run_weights.cpp). A UsageError for a bad file, an input given twice, two tensors
 *  that both read as one input, a stack with a block missing or of another shape, or a file that
 *  holds none of the composite's inputs. */
void read_weights(const std::string& path, const Loaded& l, GivenInputs& given);

/** The sizes of a run whose inputs `given` come from files: the batch dimensions from the first
 *  given input declared with `...` (where `batch_from_files`), each size variable a given
 *  input's dimension spells from that dimension, the rest as bind_sizes(l, test). A file whose
 *  rank or dimensions disagree with the input's type, or with `--test`, is a UsageError. */
SizeBindings bind_from_inputs(Loaded& l, const GivenInputs& given, const std::string& test,
                              bool batch_from_files);

/** With `run --grad`: the files of `given` that name no input of the composite, moved out of
 *  `given`: the cotangents of the backward composite (checked by check_cotangents). */
GivenInputs take_cotangents(GivenInputs& given, const Loaded& l);

/** Each cotangent file must name an input of the backward graph `g` and have its shape under
 *  `sizes`; a UsageError names the file otherwise. */
void check_cotangents(const Graph& g, const GivenInputs& cotangents, const SizeBindings& sizes);

/** Replaces the inputs that `given` holds; a bf16 input takes an f32 or f16 file, rounded; any
 *  other dtype must match (a UsageError names both). */
void use_given_inputs(const Graph& g, const GivenInputs& given, std::vector<Tensor>& inputs);

/** Writes each output to DIR/NAME.npy (DIR created) and prints where. */
void save_outputs(const std::string& dir, const Graph& g, const std::vector<Tensor>& outputs);

}  // namespace kiln::cli
