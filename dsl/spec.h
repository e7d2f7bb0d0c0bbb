/** \file
 * The model of a spec file: its composites with their signatures, attributes, type variables,
 * parsed bodies and test settings. Built from TOML by load_spec_file (dsl/spec_loader.h);
 * lowered to a graph by dsl/lower.h.
 */
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "ir/dtype.h"

namespace kiln {

/** A compile-time attribute value: an integer, float, bool, string or list of them. */
struct AttrValue {
  enum class Kind { integer, number, boolean, string, list } kind = Kind::integer;
  int64_t integer = 0;
  double number = 0;
  bool boolean = false;
  std::string string;
  std::vector<AttrValue> list;
  std::string str() const;
};

/** One declared input or output. */
struct Param {
  std::string name;
  TypeSpec type;
  SourceLoc loc;
};

/** One attribute with its default. */
struct AttrDecl {
  std::string name;
  AttrValue value;
  SourceLoc loc;
};

/** A peer's expression of the same computation, for `kiln bench --vs NAME` (e.g. `torch`:
 *  a Python expression over the inputs, attributes and sizes by name). */
struct BaselineExpr {
  std::string code;
  SourceLoc loc;
};

/** A type variable and the dtypes it may take (in preference order). */
struct TypeVar {
  std::string name;
  std::vector<DType> allowed;
  SourceLoc loc;
};

/** Test settings: case k binds each size variable to sizes[var][k] (a single value repeats). */
struct TestSpec {
  std::map<std::string, std::vector<int64_t>> sizes;
  std::vector<std::vector<int64_t>> batches;  ///< batch shapes to try; empty means none
  std::optional<double> rtol, atol;
  std::map<std::string, std::pair<double, double>> ranges;  ///< input -> [lo, hi) of random data
  /** `grad = true`: `kiln test` also checks the backward composite with respect to every float
   *  input (docs/autodiff.md). */
  bool grad = false;
  /** Number of test cases: the longest list in `sizes` (at least 1). */
  size_t case_count() const;
  /** Size bindings of case k. */
  std::map<std::string, int64_t> case_sizes(size_t k) const;
};

/** A shape fact, one string of `where`: a comparison of size expressions such as `C == F` or
 *  `C % groups == 0` (ir/size_facts.h). */
struct Fact {
  std::string text;  ///< as written
  ExprPtr expr;      ///< a binary comparison
  SourceLoc loc;     ///< the first character of the string
};

/** `state = { k_out = "k" }`: output `output` is the state that input `input` takes on the
 *  next call (a KV cache); callers may pass the buffer one call wrote as the next call's input. */
struct StatePair {
  std::string output, input;
  SourceLoc loc;        ///< the output's key
  SourceLoc input_loc;  ///< the input's name
};

struct SpecFile;

/** One composite. */
struct Composite {
  std::string name;
  std::string doc;
  SourceLoc loc;
  std::vector<Param> inputs, outputs;  ///< in the order written
  std::vector<AttrDecl> attrs;
  std::vector<TypeVar> types;
  std::vector<Fact> facts;  ///< `where = ["C == F", ...]`, in the order written
  std::vector<BodyStatement> body;
  SourceLoc body_loc;
  TestSpec test;
  std::map<std::string, BaselineExpr> baselines;  ///< `baseline = { torch = "..." }`
  std::vector<StatePair> state;                   ///< `state = { out = "in" }`, as written
  const SpecFile* file = nullptr;
  const TypeVar* type_var(const std::string& n) const;
  const AttrDecl* attr(const std::string& n) const;
};

/** One parsed spec file. */
struct SpecFile {
  std::string path;                                     ///< as given (used in messages)
  std::vector<std::pair<std::string, SourceLoc>> uses;  ///< [meta] use, resolved paths
  std::vector<std::string> rules;                       ///< [meta] rules, resolved paths
  std::vector<std::unique_ptr<Composite>> composites;   ///< in the order written
  std::vector<const SpecFile*> used;                    ///< filled by the Library
  const Composite* find(const std::string& name) const;
};

/** Reads and parses one spec file (not the files it uses). Throws SpecError. */
std::unique_ptr<SpecFile> load_spec_file(const std::string& path);

/** Parses `text` as a spec file called `name` (in messages; `use` paths relative to its folder)
 *  and remembers the text for diagnostics (remember_source). Throws SpecError. */
std::unique_ptr<SpecFile> parse_spec_text(const std::string& text, const std::string& name);

}  // namespace kiln
