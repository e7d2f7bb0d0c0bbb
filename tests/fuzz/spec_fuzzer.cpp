/** \file
 * libFuzzer target of the spec front end: the input bytes are a spec file's text. The file is
 * loaded with the files it uses, every composite is lowered for a few dtype and batch choices
 * (and once with its first test case's sizes fixed), verified, simplified with the shipped rules
 * and verified again. A SpecError is the expected answer to a bad spec; anything else that
 * escapes (a crash, a sanitizer report, another exception) is a bug. Built with -DKILN_FUZZ=ON
 * (clang only); tests/fuzz/spec_fuzz.sh runs it; docs/testing.md.
 */
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "dsl/check.h"
#include "dsl/diagnostic.h"
#include "dsl/library.h"
#include "dsl/lower.h"
#include "ir/verifier.h"
#include "simplifier/engine.h"
#include "simplifier/rule.h"

namespace fs = std::filesystem;

namespace {

/** A private folder holding the input as fuzz.toml next to links to the ops/ files, so that
 *  `use = ["math.toml"]` resolves as it does for the shipped files. */
char fuzz_dir[4096];  // plain storage: the exit handler that removes it runs after destructors

const std::string& input_path() {
  static const std::string path = [] {
    std::string tmpl = (fs::temp_directory_path() / "kiln-spec-fuzz-XXXXXX").string();
    if (tmpl.size() >= sizeof fuzz_dir || !mkdtemp(tmpl.data())) {
      std::perror("spec_fuzzer: mkdtemp");
      std::abort();
    }
    tmpl.copy(fuzz_dir, tmpl.size());
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fuzz_dir, ec);
    });
    const char* src = std::getenv("KILN_SOURCE_DIR");  // the checkout, when the binary moved
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(src ? src : KILN_SOURCE_DIR) / "ops", ec))
      if (e.path().extension() == ".toml")
        fs::create_symlink(e.path(), fs::path(tmpl) / e.path().filename(), ec);
    return (fs::path(tmpl) / "fuzz.toml").string();
  }();
  return path;
}

void lower_verify_simplify(const kiln::Library& lib, const kiln::Composite& c,
                           const kiln::LowerOptions& opt) {
  kiln::Graph g = kiln::lower_composite(lib, c, opt);
  kiln::verify_or_throw(g);
  kiln::SimplifyResult r = kiln::simplify(g, kiln::shipped_rules(), kiln::SimplifyOptions{});
  kiln::verify_or_throw(r.graph);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = input_path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    kiln::Library lib;
    const kiln::SpecFile& f = lib.load(path);
    for (const auto& c : f.composites) {
      for (const kiln::LowerOptions& opt : kiln::check_instances(*c, 2))
        lower_verify_simplify(lib, *c, opt);
      if (!c->test.sizes.empty()) {
        kiln::LowerOptions opt;
        opt.fixed_sizes = c->test.case_sizes(0);
        lower_verify_simplify(lib, *c, opt);
      }
    }
  } catch (const kiln::SpecError& e) {
    (void)kiln::format_error(e);  // the message and its source line must render too
  }
  return 0;
}
