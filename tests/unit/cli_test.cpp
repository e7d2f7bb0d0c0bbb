// The `kiln` binary end to end: exit codes and the first lines it prints. The binary's path
// comes from KILN_BIN, which CTest sets.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;
};

Result kiln(const std::string& args) {
  const char* bin = std::getenv("KILN_BIN");
  Result r;
  if (!bin) return r;
  std::string cmd = std::string(bin) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p))
    r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const Result& r, const std::string& s) {
  return r.out.find(s) != std::string::npos;
}

}  // namespace

TEST_CASE("cli: exit codes and output") {
  if (!std::getenv("KILN_BIN")) {
    MESSAGE("KILN_BIN is not set; skipping the command-line tests");
    return;
  }
  struct Case {
    const char* args;
    int code;
    const char* expect;
  };
  const Case cases[] = {
      {"--help", 0, "check"},
      {"run --help", 0, "--test"},
      {"run tests/data/cli.toml:scale --test N=4 --batch 2", 0, "out y : f32[2, 4]"},
      {"run tests/data/cli.toml:scale --test N=4 --dtype T=f64 --attr alpha=0.5", 0, "f64[4]"},
      {"show tests/data/cli.toml:scale --format dot", 0, "digraph"},
      {"run tests/data/cli.toml:scale --test N=4 --specialize --debug 2", 0, "input x : f32[4]"},
      {"show tests/data/cli.toml:scale", 0, "= mul"},
      {"check tests/data/cli.toml", 0, "ok, 2 composites"},
      {"run tests/data/cli.toml", 2, "several composites"},
      {"run tests/data/cli.toml:nope", 2, "no composite 'nope'"},
      {"run tests/data/cli.toml:scale --test N=x", 2, "expected an integer"},
      {"run tests/data/cli.toml:shift", 2, "size variable N"},
      {"run tests/data/cli.toml:scale --attr beta=1", 2, "no attribute 'beta'"},
      {"run tests/data/cli.toml:scale --dtype T=i32", 2, "does not allow"},
      {"run tests/data/cli.toml:scale --runtime warp", 2, "unknown runtime"},
      {"frobnicate", 2, ""},
      {"run tests/data/cli.toml:shift --test N=5", 4, "outside its source"},
      {"check tests/data/missing.toml", 1, "does not exist"},
  };
  for (const Case& c : cases) {
    Result r = kiln(c.args);
    std::string args = c.args;
    CAPTURE(args);
    CAPTURE(r.out);
    CHECK(r.code == c.code);
    CHECK(has(r, c.expect));
  }
}
