#include "ir/data_dirs.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must name the source tree Kiln is built from"
#endif
#ifndef KILN_BUILD_DIR
#error "KILN_BUILD_DIR must name the build folder"
#endif
// The install layout (GNUInstallDirs), as paths relative to the folders of the installed binary
// and library; the defaults are the layout of `cmake --install` with a prefix other than /usr.
#ifndef KILN_BIN_TO_DATA
#define KILN_BIN_TO_DATA "../share/kiln"
#endif
#ifndef KILN_LIB_TO_DATA
#define KILN_LIB_TO_DATA "../share/kiln"
#endif
#ifndef KILN_BIN_TO_PLUGINS
#define KILN_BIN_TO_PLUGINS "../lib/kiln"
#endif
#ifndef KILN_LIB_TO_PLUGINS
#define KILN_LIB_TO_PLUGINS "kiln"
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

std::string library_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&library_dir), &info) == 0 || !info.dli_fname ||
      !*info.dli_fname)
    return "";
  // The executable's own code reports the name it was started by, not a library.
  std::error_code ec;
  if (fs::equivalent(info.dli_fname, "/proc/self/exe", ec) || ec) return "";
  fs::path lib = fs::weakly_canonical(info.dli_fname, ec);
  return ec ? "" : lib.parent_path().string();
}

std::string plugins_from_library() {
  return KILN_LIB_TO_PLUGINS;
}

std::string plugins_from_executable() {
  return KILN_BIN_TO_PLUGINS;
}

bool running_in_build_tree() {
  auto in_build = [](const std::string& dir) {
    return inside(dir, KILN_SOURCE_DIR) || inside(dir, KILN_BUILD_DIR);
  };
  std::string exe = executable_dir(), lib = library_dir();
  return exe.empty() || in_build(exe) || (!lib.empty() && in_build(lib));
}

std::vector<std::string> data_roots() {
  std::vector<std::string> roots;
  auto add = [&](const fs::path& p) { roots.push_back(p.lexically_normal().string()); };
  if (const char* home = std::getenv("KILN_HOME"); home && *home) {
    add(home);
    add(fs::path(home) / "share" / "kiln");
  }
  // Code in a shared libkiln looks beside that library first: the program is someone else's.
  if (std::string lib = library_dir(); !lib.empty()) add(fs::path(lib) / KILN_LIB_TO_DATA);
  if (std::string exe = executable_dir(); !exe.empty()) {
    add(exe);
    add(fs::path(exe) / KILN_BIN_TO_DATA);
    add(fs::path(exe) / ".." / "share" / "kiln");  // tools/gpu/bundle.sh's layout
  }
  if (running_in_build_tree()) add(KILN_SOURCE_DIR);
  // Each root once, in the first place it comes.
  std::vector<std::string> unique;
  for (const std::string& r : roots)
    if (std::find(unique.begin(), unique.end(), r) == unique.end()) unique.push_back(r);
  return unique;
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
