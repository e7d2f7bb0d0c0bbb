/** \file
 * Extern calls in C: each `call` statement of the kernel IR becomes a call of a small wrapper,
 * `kiln_gemm_f32(m, n, k, a, b, y)`, defined once per routine and dtype after the prelude. The
 * wrapper calls the CBLAS routine (`cblas_sgemm`, row-major, no transposes), whose prototype it
 * declares itself, since generated sources include no system headers. CBLAS sizes are `int`
 * (OpenBLAS's default LP64 interface): when a size does not fit, or is 0, the wrapper runs a
 * plain loop instead, so the result is right, only slower.
 */
#pragma once

#include <string>
#include <vector>

#include "ir/kernel_ir.h"

namespace kiln {

/** The prototypes and wrappers that the call statements of `plan` need; empty without calls. */
std::string c_extern_helpers(const KernelPlan& plan);

/** The C statement for call statement `st`, with buffer k named `b<k>`. Throws
 *  std::runtime_error for a routine the C backend cannot render. */
std::string c_extern_call(const KernelPlan& plan, const Statement& st);

/** The library functions the rendered calls of `plan` use (e.g. "cblas_sgemm"), sorted and
 *  unique: what the process must provide when the module is loaded. */
std::vector<std::string> c_extern_symbols(const KernelPlan& plan);

}  // namespace kiln
