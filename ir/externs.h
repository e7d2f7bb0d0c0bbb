/** \file
 * The extern routines an `extern_call` node may name: library calls (BLAS) that rewrite rules
 * put in place of primitive subgraphs. Each entry gives the routine's operand rule (result dtype
 * and shape, or a message naming what is wrong) and its reference evaluation, which the
 * interpreter uses. Adding a routine (gemv, ...) is one entry in externs.cpp here, plus its
 * rendering in the backends.
 */
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

/** The type of a value: what an operand rule looks at. */
struct ValueType {
  DType dtype = DType::f32;
  Shape shape;
};

/** The result of an operand rule: the result's type, or `error` when the operands do not fit. */
struct ExternResult {
  ValueType type;
  std::string error;  ///< empty when the operands are valid
};

/** One extern routine. */
struct ExternRoutine {
  std::string_view name;  ///< the spelling in Node::name, e.g. "gemm"
  int arity;              ///< operand count
  /** Checks operand types; gives the result type. */
  ExternResult (*result_type)(const std::vector<ValueType>& operands);
  /** The reference value in double (operands already checked), as the interpreter computes. */
  Tensor (*evaluate)(const std::vector<const Tensor*>& operands, DType result);
};

/** The routine named `name`, or nullptr. */
const ExternRoutine* find_extern(std::string_view name);

/** The result type of routine `name` on `operands`; the error names the routine and says what
 *  is wrong (unknown routine, operand count, ranks, sizes, dtypes). */
ExternResult extern_result_type(std::string_view name, const std::vector<ValueType>& operands);

}  // namespace kiln
