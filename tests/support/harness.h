/** \file
 * Test helpers: load a composite from ops/, lower it with chosen dtypes and batch, run the
 * interpreter on seeded random inputs, and compare with tolerances.
 */
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dsl/lower.h"
#include "ir/interpreter.h"

namespace kiln::test {

/** A lowered composite with its inputs and the interpreter's outputs. */
struct Run {
  std::shared_ptr<Library> lib;
  const Composite* comp = nullptr;
  Graph graph;
  SizeBindings sizes;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  /** Input by name. */
  const Tensor& in(const std::string& name) const;
  /** Output by name. */
  const Tensor& out(const std::string& name) const;
};

/** What to run: FILE:COMPOSITE, sizes, dtypes, batch, attributes, seed, input ranges. */
struct RunSpec {
  std::string target;
  SizeBindings sizes;
  std::map<std::string, DType> dtypes;
  std::vector<int64_t> batch;
  std::map<std::string, AttrValue> attrs;
  uint64_t seed = 1;
  bool specialize = false;  ///< lower with the sizes as constants (LowerOptions::fixed_sizes)
  std::map<std::string, std::pair<double, double>> ranges;  ///< overrides the spec's ranges
  /** Replaces random inputs by name (shape and dtype must match the graph). */
  std::map<std::string, Tensor> given;
  bool interpret = true;  ///< false: lower only (no inputs, no outputs)
};

/** Loads, lowers (verifying the graph), fills inputs and interprets. */
Run run(const RunSpec& spec);

/** run() of `target` (FILE:COMPOSITE) at `sizes`, with a batch and attributes where given: the
 *  graph a pass test rewrites, and the interpreter's outputs it must still compute. */
Run lowered(const std::string& target, SizeBindings sizes, std::vector<int64_t> batch = {},
            std::map<std::string, AttrValue> attrs = {});

/** Every composite with a test table in the spec files of `dirs` (sorted by path), as a RunSpec
 *  at its first test case, its first dtype choice and, where an input is batched, its table's
 *  last batch shape: what a test that walks the whole library runs each composite at. */
std::vector<RunSpec> first_cases(const std::vector<std::string>& dirs = {"ops",
                                                                         "tests/regressions"});

/** Attribute helpers. */
AttrValue attr_int(int64_t v);
AttrValue attr_float(double v);
AttrValue attr_bool(bool v);
AttrValue attr_list(const std::vector<int64_t>& v);

/** Row-major flat offset of a multi-index. */
size_t offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx);

/** Checks every element: |got - want| <= atol + rtol * |want| (NaNs must match); reports the
 *  first mismatch through doctest. */
void expect_close(const Tensor& got, const std::vector<double>& want, double rtol = 1e-9,
                  double atol = 1e-12);

/** Calls fn for every multi-index of dims, in row-major order. */
void for_each_index(const std::vector<int64_t>& dims,
                    const std::function<void(const std::vector<int64_t>&)>& fn);

}  // namespace kiln::test
