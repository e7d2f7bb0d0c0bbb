#include "ir/externs.h"

#include <array>

namespace kiln {

namespace {

std::string type_str(const ValueType& t) {
  return std::string(dtype_name(t.dtype)) + shape_str(t.shape);
}

/** gemm(a, b): a f32[M, K], b f32[K, N] (or both f64) -> [M, N], y[m, n] = sum_k a[m, k] b[k, n].
 */
ExternResult gemm_type(const std::vector<ValueType>& in) {
  const ValueType &a = in[0], &b = in[1];
  ExternResult r;
  if (a.shape.size() != 2 || b.shape.size() != 2)
    r.error = "gemm needs two matrices, got " + type_str(a) + " and " + type_str(b);
  else if (a.dtype != b.dtype)
    r.error = "gemm operand dtypes differ: " + type_str(a) + " and " + type_str(b);
  else if (a.dtype != DType::f32 && a.dtype != DType::f64)
    r.error = "gemm needs f32 or f64 operands, got " + type_str(a);
  else if (a.shape[1] != b.shape[0])
    r.error = "gemm inner sizes differ: " + type_str(a) + " times " + type_str(b);
  else
    r.type = {a.dtype, {a.shape[0], b.shape[1]}};
  return r;
}

/** The naive triple loop, summing over k in order in double: what a reduce-sum of products of
 *  the same operands computes in the interpreter. */
Tensor gemm_evaluate(const std::vector<const Tensor*>& in, DType result) {
  const Tensor &a = *in[0], &b = *in[1];
  const int64_t m = a.dims[0], k = a.dims[1], n = b.dims[1];
  Tensor y(result, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += a.f[i * k + p] * b.f[p * n + j];
      y.f[i * n + j] = sum;
    }
  return y;
}

constexpr std::array<ExternRoutine, 1> kExterns = {{
    {"gemm", 2, gemm_type, gemm_evaluate},
}};

}  // namespace

const ExternRoutine* find_extern(std::string_view name) {
  for (const ExternRoutine& r : kExterns)
    if (r.name == name) return &r;
  return nullptr;
}

ExternResult extern_result_type(std::string_view name, const std::vector<ValueType>& operands) {
  ExternResult r;
  const ExternRoutine* routine = find_extern(name);
  if (!routine)
    r.error = "unknown extern routine '" + std::string(name) + "'";
  else if (operands.size() != static_cast<size_t>(routine->arity))
    r.error = "extern " + std::string(name) + " expects " + std::to_string(routine->arity) +
              " operands, has " + std::to_string(operands.size());
  else
    r = routine->result_type(operands);
  return r;
}

}  // namespace kiln
