/** \file
 * The `kiln` subcommands. Each registers itself on the CLI11 app and returns a callback result
 * through `exit_code`.
 */
#pragma once

#include <CLI/CLI.hpp>

namespace kiln::cli {

void add_check_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_show_command(CLI::App& app, int& exit_code);
void add_compile_command(CLI::App& app, int& exit_code);
void add_cache_command(CLI::App& app, int& exit_code);
void add_rules_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_runtimes_command(CLI::App& app, int& exit_code);
void add_test_command(CLI::App& app, int& exit_code);
void add_test_runtime_command(CLI::App& app, int& exit_code);
void add_new_runtime_command(CLI::App& app, int& exit_code);
void add_grad_command(CLI::App& app, int& exit_code);
void add_generate_command(CLI::App& app, int& exit_code);
void add_tune_command(CLI::App& app, int& exit_code);
/** `kiln tune ls|clear|export FILE|import FILE`, registered on the `tune` subcommand. */
void add_tune_db_commands(CLI::App& tune, int& exit_code);

}  // namespace kiln::cli
