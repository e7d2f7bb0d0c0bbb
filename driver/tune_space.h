/** \file
 * The search space of `kiln tune` (docs/tuning.md): for a composite compiled for a runtime, the
 * `--config` knobs whose choice changes the speed of its kernels and the values worth trying
 * for each, the knob's current value first. The candidates sit here, next to nothing but their
 * knob's name, so that the knob table (driver/config.cpp) stays the one place that parses and
 * checks a value: every candidate goes through it like a `--config` item.
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "driver/pipeline.h"

namespace kiln {

/** One dimension of the space: a knob and its candidate values, the default first. */
struct TuneDimension {
  std::string knob;                 ///< a knob of driver/config.h, as --config spells it
  std::vector<std::string> values;  ///< distinct; values[0] is the value without tuning
};

/** The space for graph `g` compiled with `opt` (compile_options' result, so the runtime's
 *  defaults are in it) on a host (CPU) or device (GPU) runtime; `wgmma` when the device runs
 *  warpgroup instructions. Knobs that do not apply to the graph (no reduction: no register
 *  tile) are left out. */
std::vector<TuneDimension> tune_space(const Graph& g, const CompileOptions& opt, bool host,
                                      bool wgmma);

/** Every knob any space can hold: what the tuning database stores and what its key leaves
 *  out. */
const std::vector<std::string>& tunable_knobs();

/** The number of points of the space (the product of its dimensions' sizes). */
size_t space_size(const std::vector<TuneDimension>& space);

/** The space as text, one knob a line: "MICRO  auto 3x8x256x32 ...". */
std::string space_text(const std::vector<TuneDimension>& space);

/** One point of the space: knob -> value. */
using TuneCandidate = std::map<std::string, std::string>;

/** "MICRO=6x2x256x64 TILE=64" (knobs in name order). */
std::string candidate_text(const TuneCandidate& c);

}  // namespace kiln
