#include "driver/blas.h"

#include <dlfcn.h>

#include <stdexcept>

namespace kiln {

namespace {

/** A known BLAS: its --config name, its shared library, and the package that provides it. */
struct BlasLibrary {
  const char* name;
  const char* soname;
  const char* package;
};

const BlasLibrary kBlasLibraries[] = {
    {"openblas", "libopenblas.so.0", "libopenblas0"},
    {"none", "", ""},
};

const BlasLibrary* find_blas(const std::string& name) {
  for (const BlasLibrary& b : kBlasLibraries)
    if (name == b.name) return &b;
  return nullptr;
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items)
    s += (s.empty() ? "" : ", ") + item;
  return s;
}

/** dlopens `b` with RTLD_NOW | RTLD_GLOBAL; the handle stays open for the process's life. */
void* open_library(const BlasLibrary& b) {
  void* handle = dlopen(b.soname, RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* why = dlerror();
    throw std::runtime_error("--config BLAS=" + std::string(b.name) + " needs " + b.soname +
                             ", which cannot be loaded (" + (why ? why : "?") +
                             "); on Debian: apt-get install " + b.package);
  }
  return handle;
}

}  // namespace

std::string blas_name_error(const std::string& name) {
  if (find_blas(name)) return "";
  std::vector<std::string> known;
  for (const BlasLibrary& b : kBlasLibraries)
    known.push_back(b.name);
  return "--config BLAS=" + name + ": unknown BLAS '" + name + "' (known: " + joined(known) + ")";
}

std::string blas_library(const std::string& name) {
  if (std::string err = blas_name_error(name); !err.empty()) throw std::runtime_error(err);
  return find_blas(name)->soname;
}

void load_blas(const std::map<std::string, std::string>& config,
               const std::vector<std::string>& symbols) {
  if (symbols.empty()) return;
  auto it = config.find("BLAS");
  std::string name = it == config.end() ? "none" : it->second;
  if (blas_library(name).empty())
    throw std::runtime_error("the program calls " + joined(symbols) +
                             " but no BLAS is configured: pass --config BLAS=openblas");
  void* handle = open_library(*find_blas(name));
  for (const std::string& s : symbols)
    if (!dlsym(handle, s.c_str()))
      throw std::runtime_error("--config BLAS=" + name + ": " + find_blas(name)->soname +
                               " does not define " + s);
}

}  // namespace kiln
