// `kiln runtimes`: every runtime descriptor found, where it and its plugin come from, its
// backend, compiler and device, and whether it can run kernels here.
#include <iostream>
#include <map>
#include <memory>

#include "runtimes/runtime.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

void describe(const std::string& name, const std::string& path) {
  std::cout << name << "\n";
  std::unique_ptr<Runtime> rt;
  try {
    rt = Runtime::open(path);
  } catch (const std::exception& e) {
    std::string why = e.what();
    for (size_t at = why.find('\n'); at != std::string::npos; at = why.find('\n', at + 1))
      why.insert(at + 1, "           ");  // under the text after "usable"
    std::cout << "  descriptor " << path << "\n"
              << "  usable     no: " << why << "\n";
    return;
  }
  std::cout << "  descriptor " << rt->descriptor().path << "\n"
            << "  backend    " << rt->backend() << "\n"
            << "  plugin     " << rt->plugin_path() << " (version " << rt->plugin_version() << ")\n"
            << "  compiler   " << rt->compiler_version() << "\n"
            << "  device     " << rt->describe_device() << "\n";
  try {
    rt->probe();
    std::cout << "  usable     yes\n";
  } catch (const std::exception& e) {
    std::cout << "  usable     compiles only: " << e.what() << "\n";
  }
}

}  // namespace

void add_runtimes_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "runtimes",
      "List every runtime found: its descriptor, backend, plugin, device and whether "
      "it runs kernels here");
  cmd->callback([&exit_code] {
    std::map<std::string, std::string> found = Runtime::descriptors();
    std::cout << "runtimes in " << join_names(Runtime::descriptor_folders()) << ":"
              << (found.empty() ? " none" : "") << "\n";
    for (const auto& [name, path] : found)
      describe(name, path);
    exit_code = Exit::ok;
  });
}

}  // namespace kiln::cli
