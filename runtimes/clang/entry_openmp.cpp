// The "openmp" runtime's entry point: the clang runtime with -fopenmp and libomp.
#include "runtimes/clang/flavour.h"

#ifndef KILN_LIBOMP_PATH
#error "KILN_LIBOMP_PATH must name libomp.so for the openmp runtime"
#endif

extern "C" __attribute__((visibility("default"))) const kiln_plugin* kiln_plugin_entry() {
  static const kiln::clang_runtime::Flavour flavour{"openmp", KILN_LIBOMP_PATH};
  return kiln::clang_runtime::plugin_table(flavour);
}
