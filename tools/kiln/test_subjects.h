/** \file
 * What `kiln test` and `kiln test-runtime` check: a composite at one dtype and one batch shape,
 * every case of its test table compiled by a runtime and compared with the interpreter.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtimes/runtime.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

/** One program to test: a composite at one dtype and one batch shape. */
struct Subject {
  std::string path;  ///< the spec file, as given
  const Composite* comp = nullptr;
  std::string dtype_choice;    ///< "T=f16", or empty where the composite has no type variable
  std::vector<int64_t> batch;  ///< bound to batch0, batch1, ...
  bool grad = false;           ///< its backward composite, with respect to every float input
};

/** Every composite of the file `l` loaded from `path` (or the one `l.comp` names, where `one`),
 *  each dtype its first type variable allows, each batch shape of its test table (none where no
 *  input takes `...`): its forward composite unless `only_grad`, its backward composite where
 *  `only_grad` or its table says `grad = true`. */
std::vector<Subject> subjects_of(const std::string& path, const Loaded& l, bool one,
                                 bool only_grad);

/** "softmax T=f16 batch [3,5] grad", with the file in front where `with_path`. */
std::string subject_name(const Subject& s, bool with_path);

/** How a subject fared. */
struct SubjectResult {
  enum class Status { passed, failed, cannot_compile, skipped };
  Status status = Status::passed;
  int cases = 0;  ///< cases of its test table
  int ok = 0;     ///< cases that matched the interpreter
  /** Each failed case: "[N=3] output y element 0: got 1, interpreter 2" (or the error); for
   *  cannot_compile the error; for skipped the reason. */
  std::vector<std::string> problems;
};

/** The settings every subject is tested under. */
struct TestSettings {
  std::vector<std::string> config, attrs, rules;
  uint64_t seed = 0;
};

/** Compiles `s` with `rt` and runs every case against the interpreter; `before_case(k)` is
 *  called before case k. Throws SpecError where the spec itself is wrong, UsageError for a bad
 *  setting of a composite that has a test table. */
SubjectResult run_subject(const Subject& s, Runtime& rt, const TestSettings& t,
                          const std::function<void(int)>& before_case);

/** Loads each target (FILE: every composite, FILE:COMPOSITE: that one) into `files`, which
 *  keeps them alive, and lists their subjects; a bad target throws before anything runs. */
std::vector<Subject> load_subjects(const std::vector<std::string>& targets, bool only_grad,
                                   std::vector<std::unique_ptr<Loaded>>& files);

/** A line that redraws itself on a terminal: `[=====>    ] 12/40 softmax T=f16`; nothing where
 *  `tty` is false. */
void progress(bool tty, int done, int total, const std::string& what);

}  // namespace kiln::cli
