/** \file
 * From a caller's choices to something compiled, shared by the public API (driver/api.cpp) and
 * the `kiln` command line (tools/kiln/), so that neither holds a second copy: the composite a
 * name picks, the lowering options from CompileSettings (dtypes, attributes, batch rank, fixed
 * sizes), lowering and verifying, the runtime a name opens, the compile options from the
 * runtime's descriptor and the config items (driver/config.h), and the check of bound sizes.
 * Caller mistakes throw std::invalid_argument; the command line reports them with exit code 2.
 */
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autodiff/gradient.h"
#include "driver/config.h"
#include "dsl/lower.h"
#include "kiln/kiln.h"
#include "runtimes/runtime.h"

namespace kiln {

/** Composite `name` as it resolves from `file` (its own composites, then the files it uses).
 *  Throws std::invalid_argument listing the file's composites. */
const Composite& find_composite(const Library& lib, const SpecFile& file, const std::string& name);

/** The lowering options for `s`'s dtypes, attributes (as text), batch rank and fixed sizes.
 *  Throws std::invalid_argument for a dtype or attribute `c` does not take, a bad value, a batch
 *  rank past the limit of 64 or a negative fixed size. */
LowerOptions lower_options(const Composite& c, const CompileSettings& s);

/** Lowers and verifies `c`. A size expression that overflows with opt.fixed_sizes is a
 *  std::invalid_argument naming the tensor (held in memory too when `interpreted`) and the sizes
 *  where it can. Throws SpecError for an error in the spec. */
Graph lower_verified(const Library& lib, const Composite& c, const LowerOptions& opt,
                     bool interpreted);

/** The backward composite of `forward`, composite `c`'s lowered graph, with respect to the float
 *  inputs `wrt` (autodiff/gradient.h; CompileSettings::grad_wrt, `kiln run --grad`). A bad name
 *  is a std::invalid_argument; a gradient that cannot be taken a SpecError at `c`'s body naming
 *  the outputs, the inputs and the node where it stops. */
Graph differentiate(const Graph& forward, const std::vector<std::string>& wrt, const Composite& c);

/** The same under a save policy (GradSave): the backward graph, the forward graph with the saved
 *  values as extra outputs, and their names. */
Backward differentiate(const Graph& forward, const std::vector<std::string>& wrt,
                       const Composite& c, GradSave save);

/** A size variable of the graph with no binding; what() names it and the composite. */
struct UnboundSize : std::invalid_argument {
  UnboundSize(const std::string& var, const std::string& composite);
  std::string var;
};

/** Checks that `sizes` binds every size variable of `g` to a non-negative value, satisfies the
 *  graph's shape facts and assumed equalities (Graph::checks) and that every tensor fits the
 *  limits of ir/sizes.h (every node held in memory when `interpreted`). Throws UnboundSize,
 *  SizeCheckError (a std::invalid_argument located at the fact), or std::invalid_argument naming
 *  the tensor and the sizes. */
void check_bound_sizes(const Graph& g, const std::map<std::string, int64_t>& sizes,
                       bool interpreted);

/** Opens a runtime by name or descriptor path. A missing or bad one is a std::invalid_argument
 *  that lists the known runtimes (and `interp` where `interp_too`); `argument` names what took
 *  the name ("--runtime"). */
std::unique_ptr<Runtime> open_runtime(const std::string& name, bool interp_too,
                                      const std::string& argument);

/** $KILN_DEBUG as a debug level 0..5 (0 when unset); std::invalid_argument for another value. */
int debug_level_from_env();

/** The options to compile a composite of `file` for `rt`: the descriptor's [config] defaults
 *  overridden by `config` (config_options), and the file's [meta] rules; $KILN_DEBUG's level,
 *  printed to stderr. Throws ConfigError. */
CompileOptions compile_options(const SpecFile& file,
                               const std::map<std::string, std::string>& config, const Runtime& rt);

}  // namespace kiln
