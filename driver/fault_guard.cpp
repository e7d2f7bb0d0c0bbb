#include "driver/fault_guard.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace kiln {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kExitRunFailed = 4;  // README: "running failed"

std::atomic<const KernelContext*> g_running{nullptr};
/** Set by the first thread that reports a fault: the threads of a parallel loop that fault at
 *  once (two out-of-range indices under CHECK=1) would interleave their messages. */
std::atomic_flag g_reporting = ATOMIC_FLAG_INIT;
struct sigaction g_previous[sizeof kSignals / sizeof kSignals[0]];

// Everything below runs inside a signal handler: only write(2), no allocation, no locks.
void put(const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void put(const char* s) {
  put(s, std::strlen(s));
}

void put(int64_t v) {
  char buf[24];
  char* p = buf + sizeof buf;
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  do {
    *--p = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0) *--p = '-';
  put(p, static_cast<size_t>(buf + sizeof buf - p));
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV, an invalid memory access";
    case SIGBUS:
      return "SIGBUS, an invalid memory access";
    case SIGFPE:
      return "SIGFPE, an arithmetic fault such as an integer division by zero";
    case SIGILL:
      return "SIGILL, a trap";
  }
  return "a fatal signal";
}

/** Prints `ctx`'s failed bounds check, if its record holds one; whether it did. */
bool put_failed_check(const KernelContext& ctx) {
  const volatile int64_t* rec = ctx.check_record;
  if (!rec || rec[3] < 1 || rec[3] > 3) return false;
  put("kiln: error: ");
  put(ctx.what.c_str());
  put(rec[3] == 1 ? ": index " : rec[3] == 2 ? ": gathered index " : ": scattered index ");
  put(rec[1]);
  put(" is outside buffer ");
  int64_t b = rec[0];
  if (b >= 0 && static_cast<size_t>(b) < ctx.buffer_names.size()) {
    put("'");
    put(ctx.buffer_names[static_cast<size_t>(b)].c_str());
    put("'");
  } else {
    put(b);
  }
  put(rec[3] == 1 ? " of " : " along a dimension of ");
  put(rec[2]);
  put(" elements (--config CHECK=1)\n");
  return true;
}

void on_fault(int sig, siginfo_t* info, void*) {
  const KernelContext* ctx = g_running.load();
  if (!ctx) {
    // Not ours: give the signal back to whoever handled it before. Returning re-runs a faulting
    // instruction under the restored handler; a signal sent by kill or raise is sent again.
    for (size_t k = 0; k < sizeof kSignals / sizeof kSignals[0]; ++k)
      if (kSignals[k] == sig) sigaction(sig, &g_previous[k], nullptr);
    if (info->si_code <= 0) raise(sig);
    return;
  }
  // One report: a later thread waits here until the first one's _exit ends the process.
  if (g_reporting.test_and_set())
    for (;;)
      pause();
  if (!put_failed_check(*ctx)) {
    put("kiln: error: ");
    put(signal_name(sig));
    put(", in ");
    put(ctx->what.c_str());
    put("; run with --config CHECK=1 to check every buffer access\n");
  }
  _exit(kExitRunFailed);
}

/** Puts on_fault in front of each signal's handler unless it is there already: another library
 *  (a test framework, a sanitizer, a host application) may have replaced it since. */
void install_handlers() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static bool alt_stack = false;
  if (!alt_stack) {
    // An alternate stack, so that a kernel that overflows its stack is still reported.
    static char alt[1 << 16];
    stack_t ss{}, old{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    if (sigaltstack(nullptr, &old) == 0 && (old.ss_flags & SS_DISABLE)) sigaltstack(&ss, nullptr);
    alt_stack = true;
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (size_t k = 0; k < sizeof kSignals / sizeof kSignals[0]; ++k) {
    struct sigaction current {};
    if (sigaction(kSignals[k], nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fault) continue;
    sigaction(kSignals[k], &sa, &g_previous[k]);
  }
}

}  // namespace

KernelFaultScope::KernelFaultScope(const KernelContext& ctx) {
  install_handlers();
  g_running.store(&ctx);
}

KernelFaultScope::~KernelFaultScope() {
  g_running.store(nullptr);
}

void exit_on_failed_check(const KernelContext& ctx) {
  const volatile int64_t* rec = ctx.check_record;
  if (!rec || rec[3] == 0) return;         // no checks, or none failed: the usual case
  if (g_reporting.test_and_set()) return;  // a fault's report is on its way
  if (put_failed_check(ctx)) _exit(kExitRunFailed);
  g_reporting.clear();
}

}  // namespace kiln
