/** \file
 * The runtime conformance sweep: every composite of a set of spec files, for each dtype its type
 * variable allows and each batch shape of its test table, compiled by one runtime and checked
 * against the interpreter at every size of that table. The correctness suite runs it for the
 * CPU runtimes, tests/gpu for cuda.
 */
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scheduler/cut_kernels.h"

namespace kiln::test {

/** The spec files of `dir`, sorted. */
std::vector<std::string> spec_files(const std::string& dir);

/** The part of a sweep this process takes: programs (composite, dtype, batch shape) are numbered
 *  in sweep order and a process takes those whose number is `index` modulo `count`.
 *  $KILN_SWEEP_SHARD = "I/N" sets it (tests/gpu/run.sh runs N processes side by side); else all. */
struct Shard {
  int index = 0;
  int count = 1;
};

/** The shard $KILN_SWEEP_SHARD names; throws on a malformed value. */
Shard sweep_shard();

/** Whether the sweep takes the program of `target` (FILE:COMPOSITE): all unless
 *  $KILN_SWEEP_ONLY is set, then those whose target contains it (one program reproduced alone,
 *  in the process state and with the inputs the sweep gives it). Programs keep their numbers. */
bool sweep_takes(const std::string& target);

/** What one sweep did. */
struct SweepCount {
  int compiled = 0;  ///< programs compiled (one per composite, dtype and batch shape)
  int runs = 0;      ///< runs checked against the interpreter
};

/** Every composite of `files` (default: ops/) under `runtime_name` with `config` (--config
 *  pairs), at every size of its test table; doctest checks each output. A device runtime's
 *  programs compile with the options the CLI's commands use (driver/instantiate.h
 *  compile_options: the backend's kernel cuts, the target's instructions), a CPU runtime's with
 *  the descriptor's defaults and no backend cuts; `cut`, where given, then changes the cuts. With
 *  `compile_only`, each program is compiled through the runtime (its source rendered, the
 *  plugin's compiler run, a fresh cache) and nothing runs. Where $KILN_SWEEP_SAVE names a folder,
 *  the inputs of each run that disagrees go there as .npy files with its sizes, for
 *  `kiln run --input` (docs/testing.md). */
SweepCount check_runtime(const std::string& runtime_name,
                         const std::vector<std::string>& files = spec_files("ops"),
                         const std::map<std::string, std::string>& config = {},
                         const std::function<void(CutOptions&)>& cut = {},
                         bool compile_only = false);

/** Whether a sweep of code for another CPU runs here: not under AddressSanitizer (the
 *  difference is in the generated code, which it does not instrument) and only where this CPU
 *  runs the code (`runs`; else a message names what it lacks, `what`). */
inline bool sweep_runs_here(bool runs, const char* what) {
#if defined(KILN_SANITIZED)
  (void)runs;
  (void)what;
  MESSAGE("skipped under AddressSanitizer");
  return false;
#else
  if (!runs) MESSAGE("skipped: this CPU has no " << what);
  return runs;
#endif
}

}  // namespace kiln::test
