#include "ir/data_dirs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must name the source tree Kiln is built from"
#endif
#ifndef KILN_BUILD_DIR
#error "KILN_BUILD_DIR must name the build folder"
#endif

namespace kiln {

namespace {

namespace fs = std::filesystem;

/** The folders a root may hold `which` in: the share/kiln name first, then the source tree's. */
std::vector<std::string> subfolders(DataDir which) {
  switch (which) {
    case DataDir::rules:
      return {"rules", "simplifier/rules"};
    case DataDir::runtimes:
      return {"runtimes"};
    case DataDir::ops:
      return {"ops"};
    case DataDir::baselines:
      return {"baselines", "tools/baselines"};
  }
  return {};
}

std::string what_of(DataDir which) {
  switch (which) {
    case DataDir::rules:
      return "the folder of the shipped rule files";
    case DataDir::runtimes:
      return "the folder of the runtime descriptors";
    case DataDir::ops:
      return "the folder of the standard library of composites";
    case DataDir::baselines:
      return "the folder of the benchmark baselines' helpers";
  }
  return "";
}

/** `dir` holds a file of `which`: a `.toml` file (a `.py` file for the baselines). */
bool holds_data(const fs::path& dir, DataDir which) {
  std::string ext = which == DataDir::baselines ? ".py" : ".toml";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ext && it->is_regular_file(ec)) return true;
  return false;
}

/** `path` lies inside `dir` (both made absolute and normal, symbolic links resolved). */
bool inside(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  fs::path d = fs::weakly_canonical(dir, ec);
  if (ec || d.empty()) return false;
  auto [pi, di] = std::mismatch(p.begin(), p.end(), d.begin(), d.end());
  return di == d.end() || (std::next(di) == d.end() && di->empty());  // "dir/" ends in ""
}

}  // namespace

std::string executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

bool running_in_build_tree() {
  std::string exe = executable_dir();
  return exe.empty() || inside(exe, KILN_SOURCE_DIR) || inside(exe, KILN_BUILD_DIR);
}

std::vector<std::string> data_roots() {
  std::vector<std::string> roots;
  auto add = [&](const fs::path& p) { roots.push_back(p.lexically_normal().string()); };
  if (const char* home = std::getenv("KILN_HOME"); home && *home) {
    add(home);
    add(fs::path(home) / "share" / "kiln");
  }
  if (std::string exe = executable_dir(); !exe.empty()) {
    add(exe);
    add(fs::path(exe) / ".." / "share" / "kiln");
  }
  if (running_in_build_tree()) add(KILN_SOURCE_DIR);
  return roots;
}

std::string find_data_dir(DataDir which, const std::vector<std::string>& roots) {
  std::string tried;
  for (const std::string& root : roots)
    for (const std::string& sub : subfolders(which)) {
      fs::path dir = (fs::path(root) / sub).lexically_normal();
      if (holds_data(dir, which)) return dir.string();
      tried += (tried.empty() ? "" : ", ") + dir.string();
    }
  const char* home = std::getenv("KILN_HOME");
  std::string hint = home && *home ? "" : " (KILN_HOME is not set)";
  throw DataDirError(what_of(which) + " was not found; tried " +
                     (tried.empty() ? std::string("nothing") : tried) + hint +
                     ": set KILN_HOME to a Kiln source tree or to an install's share/kiln");
}

std::string data_dir(DataDir which) {
  return find_data_dir(which, data_roots());
}

}  // namespace kiln
