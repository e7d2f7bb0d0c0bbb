// Relocatable data folders (ir/data_dirs.h): the search order on folders made here, and a copy of
// the kiln binary in a prefix laid out like tools/gpu/bundle.sh's bundle, run from elsewhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/data_dirs.h"
#include "tests/support/cli.h"

namespace fs = std::filesystem;
using clitest::Result;
using clitest::TempDir;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

/** Runs `sh -c CMD`, stdout with stderr folded in. */
Result run_sh(const std::string& cmd) {
  Result r;
  FILE* p = popen(("(" + cmd + ") 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p))
    r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void copy_tomls(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.path().extension() == ".toml") fs::copy_file(e.path(), to / e.path().filename());
}

/** PREFIX/bin/kiln, PREFIX/lib/kiln/<cc plugin>, PREFIX/share/kiln/{rules,runtimes,ops} copied
 *  from the build and the source tree (the working directory), plus a rule and a descriptor that
 *  exist only here, so that a run shows which folders it read. */
void make_prefix(const fs::path& prefix, const fs::path& kiln) {
  fs::path src = fs::current_path();
  fs::create_directories(prefix / "bin");
  fs::copy_file(kiln, prefix / "bin" / "kiln");
  fs::create_directories(prefix / "lib" / "kiln");
  fs::copy_file(kiln.parent_path() / "runtimes" / "libkiln_runtime_cc.so",
                prefix / "lib" / "kiln" / "libkiln_runtime_cc.so");
  fs::path share = prefix / "share" / "kiln";
  copy_tomls(src / "simplifier" / "rules", share / "rules");
  copy_tomls(src / "runtimes", share / "runtimes");
  copy_tomls(src / "ops", share / "ops");
  write(share / "rules" / "relocated.toml",
        "relocated-probe = { pattern = \"x | 0\", replacement = \"x\", comment = \"probe\" }\n");
  write(share / "runtimes" / "cc_relocated.toml",
        "name = \"cc_relocated\"\nbackend = \"c\"\nplugin = \"kiln_runtime_cc\"\n"
        "flags = [\"-std=c11\"]\n");
}

/** `cd DIR && env -u KILN_HOME KILN_CACHE=... PREFIX/bin/kiln ARGS`. */
Result run_moved(const TempDir& t, const std::string& env, const std::string& args) {
  fs::path work = t.path / "work";
  fs::create_directories(work);
  return run_sh("cd '" + work.string() + "' && env -u KILN_HOME -u KILN_PLUGIN_PATH KILN_CACHE='" +
                (t.path / "cache").string() + "' " + env + " '" +
                (t.path / "prefix" / "bin" / "kiln").string() + "' " + args);
}

/** The output from "kiln: error:" on has one line, the last. */
bool one_error_line(const std::string& out) {
  size_t at = out.find("kiln: error: ");
  return at != std::string::npos && out.find('\n', at) == out.size() - 1;
}

}  // namespace

TEST_CASE("data folders: the first root holding a .toml file wins, source or share/kiln layout") {
  TempDir t;
  fs::path src = t.path / "src", share = t.path / "share", empty = t.path / "empty";
  write(src / "simplifier" / "rules" / "a.toml", "");
  write(src / "runtimes" / "cc.toml", "");
  write(share / "rules" / "b.toml", "");
  write(share / "ops" / "nn.toml", "");
  write(empty / "runtimes" / "libkiln_runtime_cc.so", "");  // plugins only: not a descriptor folder
  std::vector<std::string> roots = {empty.string(), share.string(), src.string()};
  CHECK(kiln::find_data_dir(kiln::DataDir::rules, roots) == (share / "rules").string());
  CHECK(kiln::find_data_dir(kiln::DataDir::runtimes, roots) == (src / "runtimes").string());
  CHECK(kiln::find_data_dir(kiln::DataDir::rules, {src.string()}) ==
        (src / "simplifier" / "rules").string());
  try {
    kiln::find_data_dir(kiln::DataDir::runtimes, {empty.string(), share.string()});
    FAIL("no descriptor folder, no error");
  } catch (const kiln::DataDirError& e) {
    std::string msg = e.what();
    CHECK(msg.find("runtime descriptors was not found; tried " + (empty / "runtimes").string() +
                   ", " + (share / "runtimes").string()) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("data folders: $KILN_HOME is searched first, then the executable's folders") {
  std::vector<std::string> roots = kiln::data_roots();
  std::string exe = kiln::executable_dir();
  REQUIRE(!exe.empty());
  if (const char* home = std::getenv("KILN_HOME"); home && *home) {
    REQUIRE(roots.size() >= 4);
    CHECK(roots[1] == (fs::path(home) / "share" / "kiln").lexically_normal().string());
  } else {
    REQUIRE(roots.size() >= 2);
    CHECK(roots[0] == fs::path(exe).lexically_normal().string());
    CHECK(roots[1] == (fs::path(exe) / ".." / "share" / "kiln").lexically_normal().string());
  }
  CHECK(kiln::running_in_build_tree());  // the test binary runs from the build folder
  CHECK(fs::exists(fs::path(kiln::data_dir(kiln::DataDir::rules)) / "identities.toml"));
}

TEST_CASE("a kiln copied into a prefix finds bin/../share/kiln and lib/kiln from anywhere") {
  const char* bin = std::getenv("KILN_BIN");
  if (!bin) return;
  TempDir t;
  make_prefix(t.path / "prefix", bin);
  fs::path share = t.path / "prefix" / "share" / "kiln";

  std::string softmax = (share / "ops" / "nn.toml").string() + ":softmax --test N=8";
  Result r = run_moved(t, "", "run " + softmax + " --runtime cc_relocated");
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK_MESSAGE(clitest::has(r, "softmax [N=8] on cc_relocated"), r.out);
  r = run_moved(t, "", "rules list");
  CHECK_MESSAGE(clitest::has(r, "relocated-probe"), r.out);
  r = run_moved(t, "", "rules check");
  CHECK_MESSAGE(r.code == 0, r.out);
  CHECK_MESSAGE(clitest::has(r, (share / "ops" / "nn.toml").string() + ":softmax"), r.out);

  // KILN_HOME laid out like the source tree (simplifier/rules) comes before the prefix.
  r = run_moved(t, "KILN_HOME='" + fs::current_path().string() + "'", "rules list");
  CHECK_MESSAGE(clitest::has(r, "and-self"), r.out);
  CHECK_MESSAGE(!clitest::has(r, "relocated-probe"), r.out);

  // Without its rules the moved binary does not fall back on the build's source tree.
  fs::remove_all(share / "rules");
  r = run_moved(t, "", "run " + softmax + " --runtime cc");
  CHECK(r.code != 0);
  CHECK_MESSAGE(one_error_line(r.out), r.out);
  CHECK_MESSAGE(clitest::has(r, "the shipped rule files was not found; tried "), r.out);
  CHECK_MESSAGE(clitest::has(r, (share / "rules").string()), r.out);
  CHECK_MESSAGE(clitest::has(r, (t.path / "prefix" / "bin" / "simplifier" / "rules").string()),
                r.out);
  CHECK_MESSAGE(!clitest::has(r, "filesystem error"), r.out);

  fs::remove_all(share / "runtimes");
  r = run_moved(t, "", "run " + softmax + " --runtime cc");
  CHECK(r.code != 0);
  CHECK_MESSAGE(one_error_line(r.out), r.out);
  CHECK_MESSAGE(clitest::has(r, "was not found; tried "), r.out);
  CHECK_MESSAGE(!clitest::has(r, "filesystem error"), r.out);
}
