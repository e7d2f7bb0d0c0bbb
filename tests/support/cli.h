/** \file
 * Helpers of the command-line tests: run the `kiln` binary that CTest names in KILN_BIN, look
 * at what it printed, and a temporary folder.
 */
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace clitest {

/** The exit code (-1: no KILN_BIN, or ended by a signal) and stdout with stderr folded in. */
struct Result {
  int code = -1;
  std::string out;
};

/** Runs `ENV kiln ARGS`, where `env` is empty or assignments such as "KILN_CACHE=/tmp/x". */
inline Result run_kiln(const std::string& args, const std::string& env = "") {
  const char* bin = std::getenv("KILN_BIN");
  Result r;
  if (!bin) return r;
  auto once = [&](const std::string& extra_env) {
    std::string cmd = extra_env + (env.empty() ? "" : env + " ") + bin + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::array<char, 4096> buf;
    r.out.clear();
    while (size_t n = fread(buf.data(), 1, buf.size(), p))
      r.out.append(buf.data(), n);
    int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  once("");
  // LeakSanitizer's own tracer thread sometimes faults while it stops the process at exit,
  // after kiln has done its work (gcc 12; for some builds of one source every time, when kiln
  // runs under this harness): the leak check could not run, which says nothing about kiln.
  // Run once more without it; any other sanitizer report still fails the test below.
  if (r.out.find("Tracer caught signal") != std::string::npos &&
      r.out.find("LeakSanitizer has encountered a fatal error") != std::string::npos)
    once("ASAN_OPTIONS=detect_leaks=0 ");
  // A sanitizer report is the answer to a failure that comes later, often far from here.
  if (r.out.find("Sanitizer") != std::string::npos)
    std::cerr << "kiln " << args << " printed a sanitizer report:\n" << r.out << "\n";
  return r;
}

inline bool has(const Result& r, const std::string& s) {
  return r.out.find(s) != std::string::npos;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream bytes;
  bytes << f.rdbuf();
  return bytes.str();
}

/** A fresh folder under the system's temporary directory, removed with its contents. */
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-cli-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace clitest
