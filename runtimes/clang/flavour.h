#pragma once
// The two plugins built from runtimes/clang/: "clang" and "openmp" share every object file but
// the entry point (entry_clang.cpp, entry_openmp.cpp), which names the flavour.
#include "kiln/plugin_api.h"

namespace kiln::clang_runtime {

/** What tells the openmp runtime from the clang one. */
struct Flavour {
  const char* name;         ///< the runtime's name, "clang" or "openmp"
  const char* libomp_path;  ///< libomp.so, loaded at first compile or launch; null: no OpenMP
};

/** The plugin table of `flavour` (which must outlive the plugin). Every compile then adds
 *  -fopenmp where the flavour has libomp, the JIT resolves the OpenMP runtime's symbols
 *  (__kmpc_fork_call, omp_get_thread_num, ...) there, and each launch first sets the thread
 *  count that `configure` took. */
const kiln_plugin* plugin_table(const Flavour& flavour);

}  // namespace kiln::clang_runtime
