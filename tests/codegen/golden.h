/** \file
 * The golden codegen tests' cases and helpers (docs/testing.md, label codegen): the source that
 * lower_program renders for a few kernels is pinned in tests/codegen/<name>.{c,cu,cl}, so a
 * refactor that should not change code proves it does not. A mismatch prints the first
 * differing line; when a change is intended, regenerate and review the diff:
 *
 *     KILN_UPDATE_GOLDEN=1 ctest --test-dir build -L codegen
 *
 * The cases by backend: codegen_cpu_test.cpp (c, openmp), codegen_cuda_test.cpp,
 * codegen_opencl_test.cpp.
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln::golden {

/** One pinned kernel: the composite, its dtypes and batch rank, and the golden file's name. */
struct GoldenCase {
  std::string name;    ///< tests/codegen/<name>.c
  std::string target;  ///< FILE:COMPOSITE
  std::map<std::string, DType> dtypes;
  int batch_rank = 0;
  std::string backend = "c";  ///< whose renderer and loop mappings
  bool amx = false;            ///< MATRIX=1: code for a CPU with AMX-BF16
  int mma_stages = 0;          ///< GPU_MMA's pipeline stages where > 0
  int dot_bytes = 0;           ///< VNNI=64 or 32: code for a CPU with VNNI (and no AMX)
  int bf16_dot_bytes = 0;      ///< BF16DOT=64 or 32: code for a CPU with AVX512-BF16 (no AMX)
  bool wgmma = false;          ///< code for a GPU with warpgroup instructions (sm_90a)
};

/** Every pinned case. */
const std::vector<GoldenCase>& golden_cases();
/** The golden case named `name`. */
const GoldenCase& golden_case(const std::string& name);
/** tests/codegen/<name> with the backend's extension. */
std::string golden_path(const GoldenCase& c);
/** The source of case `c`, lowered with symbolic sizes and the backend's default options; with
 *  `tile_variants`, kernels with a warpgroup tile are compiled at GPU_WGMMA's other shapes too
 *  (the goldens hold the one shape). */
std::string render_source(const GoldenCase& c, bool tile_variants = false);
/** The file's bytes into `out`; false when it cannot be read. */
bool read_file(const std::string& path, std::string& out);
/** Writes `text` to `path` (a failed REQUIRE otherwise). */
void write_file(const std::string& path, const std::string& text);
/** Whether KILN_UPDATE_GOLDEN=1 asks to rewrite the golden files. */
bool update_golden();
/** Renders case `c` and compares it with its golden file (or rewrites it). */
void check_golden(const GoldenCase& c);
/** Whether the system has `cc`. */
bool have_cc();

}  // namespace kiln::golden
