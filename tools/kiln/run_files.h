/** \file
 * `kiln run --input NAME=FILE.npy` and `--save DIR`: inputs from NumPy files (their shapes bind
 * the batch dimensions and the size variables they spell), outputs to one file each (ir/npy.h).
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/kiln/session.h"

namespace kiln::cli {

/** The files of `--input NAME=FILE` items, by input name. A UsageError for a bad item or file. */
std::map<std::string, Tensor> read_inputs(const std::vector<std::string>& items);

/** The sizes of a run whose inputs `given` come from files: the batch dimensions from the first
 *  given input declared with `...` (where `batch_from_files`), each size variable a given
 *  input's dimension spells from that dimension, the rest as bind_sizes(l, test). A file whose
 *  rank or dimensions disagree with the input's type, or with `--test`, is a UsageError. */
SizeBindings bind_from_inputs(Loaded& l, const std::map<std::string, Tensor>& given,
                              const std::string& test, bool batch_from_files);

/** With `run --grad`: the files of `given` that name no input of the composite, moved out of
 *  `given`: the cotangents of the backward composite (checked by check_cotangents). */
std::map<std::string, Tensor> take_cotangents(std::map<std::string, Tensor>& given,
                                              const Loaded& l);

/** Each cotangent file must name an input of the backward graph `g` and have its shape under
 *  `sizes`; a UsageError names the file otherwise. */
void check_cotangents(const Graph& g, const std::map<std::string, Tensor>& cotangents,
                      const SizeBindings& sizes);

/** Replaces the inputs that `given` holds; a bf16 input takes an f32 or f16 file, rounded; any
 *  other dtype must match (a UsageError names both). */
void use_given_inputs(const Graph& g, const std::map<std::string, Tensor>& given,
                      std::vector<Tensor>& inputs);

/** Writes each output to DIR/NAME.npy (DIR created) and prints where. */
void save_outputs(const std::string& dir, const Graph& g, const std::vector<Tensor>& outputs);

}  // namespace kiln::cli
