/** \file
 * Optimises and compiles one module in parts, on threads (the clang plugin's compile).
 *
 * A Kiln program is several kernels, each an external entry point with internal helpers of its
 * own, so its module splits cleanly: every part keeps the bodies of some entry points and of the
 * internal functions they reach (a helper two parts reach is compiled in both), and the rest are
 * declarations. Each part goes through clang's own O2 pipeline and code generator
 * (`clang::EmitBackendOutput`, the same options as a whole-module compile) in an LLVMContext of
 * its own, parsed from the module's bitcode, since one context cannot be used from two threads.
 * The parts' object files travel as one artifact (pack_objects) that the JIT links side by side.
 * Cold compiles of multi-kernel programs then take about 1/parts of the time (docs/decisions.md,
 * "A program's kernels compile on every core").
 */
#pragma once

#include <clang/Basic/CodeGenOptions.h>
#include <clang/Basic/LangOptions.h>
#include <clang/Basic/TargetOptions.h>
#include <clang/Lex/HeaderSearchOptions.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/** What clang's back end needs besides the module: the compiler instance's options. */
struct BackendOptions {
  const clang::HeaderSearchOptions* header_search = nullptr;
  const clang::CodeGenOptions* codegen = nullptr;  ///< with the LLVM passes enabled
  const clang::TargetOptions* target = nullptr;
  const clang::LangOptions* lang = nullptr;
  std::string data_layout;
};

/** How many parts a module of `instructions` instructions and `entries` external functions is
 *  split into on `threads` threads: 1 below kMinPartInstructions a part, never more parts than
 *  entry points or threads. */
unsigned part_count(size_t instructions, size_t entries, unsigned threads);

/** The object files of `module` (unoptimised IR, as clang's front end leaves it with the LLVM
 *  passes disabled), compiled in up to `threads` parts; an empty list with `*error` set on a
 *  failure. One part compiles `module` in place, in its own context. */
std::vector<std::string> compile_in_parts(std::unique_ptr<llvm::Module> module,
                                          const BackendOptions& options, unsigned threads,
                                          std::string* error);

/** The artifact of several object files: a magic line, the count, then each file's size and
 *  bytes. A single object file is its own artifact (no header), as before parts existed. */
std::string pack_objects(const std::vector<std::string>& objects);

/** The object files in an artifact of pack_objects (one for a plain object file); empty when
 *  a packed artifact is truncated. */
std::vector<llvm::StringRef> unpack_objects(llvm::StringRef artifact);

}  // namespace kiln
