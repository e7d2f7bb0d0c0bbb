// The `kiln` command line: subcommands are registered from tools/kiln/cmd_*.cpp; errors are
// printed here once, each with its exit code (README "Exit codes").
#include <iostream>

#include "scheduler/schedule_kernel.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

int main(int argc, char** argv) {
  using namespace kiln::cli;
  CLI::App app{
      "kiln: a tensor compiler. Write kernels as composites in TOML; check, show, compile and run "
      "them.",
      "kiln"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln 0.1.0");
  if (std::string isl = kiln::check_isl_build(); !isl.empty()) {
    std::cerr << "kiln: error: " << isl << "\n";
    return Exit::run_error;
  }
  int exit_code = Exit::ok;
  add_check_command(app, exit_code);
  add_run_command(app, exit_code);
  add_show_command(app, exit_code);
  add_compile_command(app, exit_code);
  add_cache_command(app, exit_code);
  add_rules_command(app, exit_code);
  add_bench_command(app, exit_code);
  add_runtimes_command(app, exit_code);
  add_test_command(app, exit_code);
  add_test_runtime_command(app, exit_code);
  add_new_runtime_command(app, exit_code);
  add_grad_command(app, exit_code);
  add_generate_command(app, exit_code);
  add_tune_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? Exit::ok : Exit::usage_error;
  } catch (const kiln::SpecError& e) {
    std::cerr << kiln::format_error(e);
    return Exit::spec_error;
  } catch (const UsageError& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return Exit::usage_error;
  } catch (const std::bad_alloc&) {  // tensors name themselves (TensorAllocError); this is the rest
    std::cerr << "kiln: error: out of memory\n";
    return Exit::run_error;
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return Exit::run_error;
  }
  return exit_code;
}
