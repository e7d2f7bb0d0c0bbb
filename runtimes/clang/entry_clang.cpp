// The "clang" runtime's entry point: C compiled in process, one thread per kernel launch.
#include "runtimes/clang/flavour.h"

extern "C" __attribute__((visibility("default"))) const kiln_plugin* kiln_plugin_entry() {
  static const kiln::clang_runtime::Flavour flavour{"clang", nullptr};
  return kiln::clang_runtime::plugin_table(flavour);
}
