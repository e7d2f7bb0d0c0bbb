/** \file
 * Where Kiln's data folders are, so that a moved `kiln` (an install, the GPU bundle of
 * tools/gpu/bundle.sh) finds them: the shipped rule files, the runtime descriptors and the
 * standard library of composites. Each is looked for under a list of roots, first match wins:
 *
 *  1. `$KILN_HOME`, laid out like the source tree (`simplifier/rules`, `runtimes`, `ops`) or like
 *     an install's `share/kiln` (`rules`, `runtimes`, `ops`); also `$KILN_HOME/share/kiln`;
 *  2. when this code runs from a shared `libkiln` (a program of the C++ API linked against an
 *     install), that library's `../share/kiln` (`PREFIX/lib/../share/kiln`);
 *  3. the running executable's folder (a binary in a source tree's root) and its
 *     `../share/kiln` (a binary in `PREFIX/bin`);
 *  4. the source tree Kiln was built from, only while the executable or the library lies inside
 *     that source tree or build folder (or cannot be found): a moved binary never reads the
 *     build machine's checkout (docs/decisions.md, "Relocatable data folders").
 *
 * A root holds a data folder when that folder exists and has at least one `.toml` file (a build
 * folder's `runtimes/` of plugin libraries does not count); for `baselines`, a `.py` file. A folder
 * found nowhere is one DataDirError that names every place tried.
 */
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

/** Kiln's data folders. */
enum class DataDir {
  rules,      ///< the shipped rule files: simplifier/rules, share/kiln/rules
  runtimes,   ///< the runtime descriptors: runtimes, share/kiln/runtimes
  ops,        ///< the standard library of composites: ops, share/kiln/ops
  baselines,  ///< the helpers of kiln bench's peer baselines: tools/baselines, share/kiln/baselines
};

/** A data folder found under none of the roots; what() is one line naming the places tried. */
struct DataDirError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** The roots searched, in order (see the file comment); roots that do not exist are kept, so
 *  that an error can name them. */
std::vector<std::string> data_roots();

/** The first folder for `which` under `roots` that holds a `.toml` file; throws DataDirError. */
std::string find_data_dir(DataDir which, const std::vector<std::string>& roots);

/** find_data_dir(which, data_roots()). */
std::string data_dir(DataDir which);

/** The folder of the running executable (/proc/self/exe), or "" when it cannot be read. */
std::string executable_dir();

/** The folder of the shared library this code was linked into (an installed `libkiln.so`), or ""
 *  when it is part of the executable itself. */
std::string library_dir();

/** Where the install puts the runtime plugins, relative to library_dir() (`kiln`: PREFIX/lib/kiln)
 *  and to executable_dir() (`../lib/kiln`). */
std::string plugins_from_library();
std::string plugins_from_executable();

/** True when the running executable (or the shared library holding this code) lies inside the
 *  source tree or build folder Kiln was built from, or cannot be found: then paths compiled into
 *  the build may be used. */
bool running_in_build_tree();

}  // namespace kiln
