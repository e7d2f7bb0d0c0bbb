/* A test-only plugin that claims another ABI version; Kiln must refuse to load it. */
#include <stddef.h>

#include "runtimes/plugin_api.h"

static const kiln_plugin kTable = {999, "bad_abi", "0"};

const kiln_plugin* kiln_plugin_entry(void) {
  return &kTable;
}
