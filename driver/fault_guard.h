/** \file
 * A crash inside generated code is reported, not silent. While a kernel runs, a fatal signal
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL) prints which kernel of which composite was running — and,
 * under --config CHECK=1, which buffer was accessed at which element — then exits with code 4.
 * Outside a kernel the handlers that were there before (the default, or a sanitizer's) apply.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/** What the handler reports about the running kernel. Built before the launch: the handler
 *  itself only reads it. */
struct KernelContext {
  /** e.g. "kernel 'kiln_softmax_0' (1 of 2) of composite 'softmax' on runtime clang" */
  std::string what;
  /** The module's `kiln_check_record` under --config CHECK=1 (backends/c_prelude.cpp): buffer,
   *  element (or gathered or scattered position), count and a flag (1, or 2 for a gather, 3 for
   *  a scatter) of the first failed check (on the CPU the kernel goes on, reading or writing
   *  element 0 instead: exit_on_failed_check reports it when the kernel returns; on a GPU the
   *  kernel traps); else nullptr. */
  const volatile int64_t* check_record = nullptr;
  /** Buffer names by buffer number, for the check record. */
  std::vector<std::string> buffer_names;
};

/** Marks `ctx` as the running kernel for its lifetime; installs the handlers on first use.
 *  Scopes do not nest. */
class KernelFaultScope {
 public:
  explicit KernelFaultScope(const KernelContext& ctx);
  ~KernelFaultScope();
  KernelFaultScope(const KernelFaultScope&) = delete;
  KernelFaultScope& operator=(const KernelFaultScope&) = delete;
};

/** After kernel `ctx` returned: where its module's check record holds a failure, prints it as
 *  a fault inside the kernel would be printed and exits with code 4. */
void exit_on_failed_check(const KernelContext& ctx);

}  // namespace kiln
