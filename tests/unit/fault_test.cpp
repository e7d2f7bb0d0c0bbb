// A crash inside generated code is reported with the kernel and composite, exit code 4
// (driver/fault_guard.h), and --config CHECK=1 catches an out-of-bounds access before it lands.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "driver/executable.h"
#include "tests/support/harness.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

struct ChildResult {
  int exit_code = -1;  ///< -1: ended by a signal
  std::string err;     ///< what it wrote to stderr
};

/** Runs `body` in a child process with stderr captured; the child exits 0 if `body` returns. */
ChildResult in_child(const std::function<void()>& body) {
  fs::path err_file = fs::temp_directory_path() / ("kiln-fault-" + std::to_string(getpid()));
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(err_file.c_str(), "w", stderr)) _exit(100);
    // The child inherits doctest's fault handlers, which would report a "crashed" test case
    // and a summary of their own: the child's faults take the default action instead.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      signal(sig, SIG_DFL);
    if (!freopen("/dev/null", "w", stdout)) _exit(100);
    try {
      body();
    } catch (const std::exception& e) {
      fprintf(stderr, "exception: %s\n", e.what());
      _exit(101);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ChildResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  return r;
}

std::string cache_dir() {
  return (fs::temp_directory_path() / ("kiln-fault-cache-" + std::to_string(getpid()))).string();
}

}  // namespace

TEST_CASE("a fault inside a compiled kernel names the kernel and composite and exits 4") {
  for (const char* name : {"clang", "cc"}) {
    CAPTURE(name);
    ChildResult r = in_child([&] {
      test::Run run = test::run({"ops/math.toml:add", {{"N", 1000}}});
      std::unique_ptr<Runtime> rt = Runtime::open(name);
      rt->use_cache_dir(cache_dir());
      Executable exe(run.graph, *rt, CompileOptions{});
      // The inputs are null pointers: the kernel's first load faults.
      std::vector<float> out(1000);
      void* buffers[] = {nullptr, nullptr, out.data()};
      std::vector<int64_t> sizes;
      for (const std::string& v : exe.program().plan.size_vars)
        sizes.push_back(run.sizes.at(v));
      exe.run_buffers(buffers, sizes.data());
    });
    CHECK(r.exit_code == 4);
    CHECK(r.err.find("kiln: error: SIGSEGV") == 0);
    CHECK(r.err.find("in kernel 'kiln_add_0' (1 of 1) of composite 'add' on runtime " +
                     std::string(name)) != std::string::npos);
  }
  fs::remove_all(cache_dir());
}

TEST_CASE("outside a kernel a fault is not taken for a kernel's") {
  ChildResult r = in_child([] {
    test::Run run = test::run({"ops/math.toml:add", {{"N", 10}}});
    std::unique_ptr<Runtime> rt = Runtime::open("cc");
    rt->use_cache_dir(cache_dir());
    Executable exe(run.graph, *rt, CompileOptions{});
    exe.run(run.inputs, run.sizes);  // installs the handlers
    raise(SIGSEGV);                  // the default action applies again: death by the signal
  });
  // Death by the signal, or by a sanitizer's report of it (exit 1): not Kiln's exit 4.
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != 4);
  CHECK(r.err.find("kiln: error") == std::string::npos);
  fs::remove_all(cache_dir());
}

TEST_CASE("CHECK=1 reports an access outside its buffer with the buffer and the element") {
  for (const char* name : {"clang", "cc"}) {
    CAPTURE(name);
    ChildResult r = in_child([&] {
      test::Run run = test::run({"ops/math.toml:add", {{"N", 100}}});
      std::unique_ptr<Runtime> rt = Runtime::open(name);
      rt->use_cache_dir(cache_dir());
      CompileOptions opt;
      opt.checked = true;
      LoweredProgram p = plan_program(run.graph, opt);
      // Plant an off-by-one: the statement reads x[i + 1], one past the end at the last i.
      Statement& st = p.plan.kernels.at(0).statements.at(0);
      std::function<void(ScalarExpr&)> shift = [&](ScalarExpr& e) {
        if (e.kind == ScalarExpr::Kind::load && e.buffer == 0) e.index.back() = e.index.back() + 1;
        for (ScalarExprPtr& a : e.args)
          shift(const_cast<ScalarExpr&>(*a));
      };
      shift(const_cast<ScalarExpr&>(*st.value));
      generate_code(p, backend_for(rt->backend()), opt);
      CompiledModule module = rt->compile(p.source, {});
      KernelContext ctx{
          "kernel 'k'",
          static_cast<const volatile int64_t*>(rt->lookup(module, kCheckRecordSymbol)),
          {"a", "b", "y"}};
      if (!ctx.check_record) _exit(102);
      void* fn = rt->lookup(module, p.symbols.at(0));
      std::vector<float> x(100), y(100), out(100);
      void* buffers[] = {x.data(), y.data(), out.data()};
      std::vector<int64_t> sizes;
      for (const std::string& v : p.plan.size_vars)
        sizes.push_back(run.sizes.at(v));
      KernelFaultScope scope(ctx);
      rt->launch(fn, buffers, sizes.data());
      // The kernel reads element 0 instead and returns; the record is reported after it, as
      // Executable does (driver/fault_guard.h).
      exit_on_failed_check(ctx);
      _exit(103);
    });
    CHECK(r.exit_code == 4);
    CHECK(r.err ==
          "kiln: error: kernel 'k': index 100 is outside buffer 'a' of 100 elements "
          "(--config CHECK=1)\n");
  }
  fs::remove_all(cache_dir());
}
