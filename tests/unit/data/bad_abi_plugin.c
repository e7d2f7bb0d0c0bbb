/* A test-only plugin that claims another ABI version (FAKE_ABI, default 999); Kiln must refuse
 * to load it. Kiln reads only `abi_version`, the first field of every ABI's table. */
#include <stddef.h>

#include "kiln/plugin_api.h"

#ifndef FAKE_ABI
#define FAKE_ABI 999
#endif

static const kiln_plugin kTable = {FAKE_ABI, "bad_abi", "0"};

const kiln_plugin* kiln_plugin_entry(void) {
  return &kTable;
}
