/** \file
 * The set of loaded spec files: follows `[meta] use` across files, resolves a name called in a
 * body to a composite, and rejects call cycles (within a file or across files).
 */
#pragma once

#include <map>
#include <memory>
#include <string>

#include "dsl/spec.h"

namespace kiln {

/** Loaded spec files, each loaded once. */
class Library {
 public:
  /** Loads `path` and every file it uses, then checks for call cycles; `std:NAME` is NAME in the
   *  standard library of composites (ir/data_dirs.h), as in a `use` entry. Throws SpecError. */
  const SpecFile& load(const std::string& path);
  /** Parses `text` as a spec file called `name` (dsl/spec.h parse_spec_text), loads the files it
   *  uses and checks for call cycles. Throws SpecError. */
  const SpecFile& load_text(const std::string& text, const std::string& name);

  /** The composite `name` as seen from `from`: its own file first, then the files it uses, in
   *  order. nullptr when there is none. */
  const Composite* resolve(const SpecFile& from, const std::string& name) const;

  /** Every loaded file. */
  std::vector<const SpecFile*> files() const;

 private:
  const SpecFile& load_file(const std::string& path, const SourceLoc& used_at);
  void check_call_cycles(const SpecFile& root) const;
  std::map<std::string, std::unique_ptr<SpecFile>> files_;  // by canonical path
};

}  // namespace kiln
