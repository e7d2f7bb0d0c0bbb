#include "backends/c_externs.h"

#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

#include "backends/c_style.h"

namespace kiln {

namespace {

/** The CBLAS declarations every wrapper uses: the enum values as ints, as cblas.h has them. */
const char* const kCblasEnums = R"(
/* CBLAS (OpenBLAS's LP64 cblas.h: enums are ints, sizes are int). */
enum { CblasRowMajor = 101, CblasNoTrans = 111 };
#ifndef KILN_BLAS_INT_MAX
#define KILN_BLAS_INT_MAX 2147483647 /* larger sizes run a plain loop; tests lower it */
#endif
)";

std::string c_type(DType t) {
  return t == DType::f64 ? "double" : "float";
}

std::string dtype_suffix(DType t) {
  return t == DType::f64 ? "f64" : "f32";
}

std::string gemm_symbol(DType t) {
  return t == DType::f64 ? "cblas_dgemm" : "cblas_sgemm";
}

/** The prototype of cblas_?gemm and the wrapper kiln_gemm_<dtype>; `{T}` is the C type, `{SYM}`
 *  the CBLAS routine, `{DT}` the dtype's name, `{ONE}` and `{ZERO}` literals of the type. */
const char* const kGemmHelper = R"(
void {SYM}(int order, int transa, int transb, int m, int n, int k, {T} alpha, const {T}* a, int lda,
                 const {T}* b, int ldb, {T} beta, {T}* c, int ldc);

/* y[m, n] = a[m, k] b[k, n], row-major; a plain loop where CBLAS's int cannot hold the sizes
 * (or one is 0, which CBLAS rejects as a leading dimension). */
static void kiln_gemm_{DT}(int64_t m, int64_t n, int64_t k, const {T}* a, const {T}* b, {T}* y) {
  if (m > 0 && n > 0 && k > 0 && m <= KILN_BLAS_INT_MAX && n <= KILN_BLAS_INT_MAX &&
      k <= KILN_BLAS_INT_MAX) {
    {SYM}(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, {ONE}, a, (int)k, b,
                (int)n, {ZERO}, y, (int)n);
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      {T} sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      y[i * n + j] = sum;
    }
}
)";

/** `text` with every `{KEY}` replaced by its value. */
std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    std::string token = "{" + key + "}";
    for (size_t at = text.find(token); at != std::string::npos;
         at = text.find(token, at + value.size()))
      text.replace(at, token.size(), value);
  }
  return text;
}

std::string gemm_helper(DType t) {
  bool f64 = t == DType::f64;
  return fill(kGemmHelper, {{"T", c_type(t)},
                            {"SYM", gemm_symbol(t)},
                            {"DT", dtype_suffix(t)},
                            {"ONE", f64 ? "1.0" : "1.0f"},
                            {"ZERO", f64 ? "0.0" : "0.0f"}});
}

/** "m, n, k" of a gemm call: from y[m, n] and a[m, k]. */
std::string gemm_sizes(const KernelPlan& plan, const Statement& st) {
  const Shape& a = plan.buffers[st.args.at(0)].shape;
  const Shape& y = plan.buffers[st.buffer].shape;
  std::set<std::string> sizes(plan.size_vars.begin(), plan.size_vars.end());
  return int_expr_to_c(y[0], sizes) + ", " + int_expr_to_c(y[1], sizes) + ", " +
         int_expr_to_c(a[1], sizes);
}

/** The C side of one extern routine: its wrapper, the library function the wrapper calls, and
 *  the size arguments that precede the buffers in a call of the wrapper. */
struct CExtern {
  const char* routine;
  std::string (*helper)(DType t);
  std::string (*symbol)(DType t);
  std::string (*sizes)(const KernelPlan& plan, const Statement& st);
};

const CExtern kCExterns[] = {
    {"gemm", gemm_helper, gemm_symbol, gemm_sizes},
};

const CExtern& c_extern(const std::string& routine) {
  for (const CExtern& e : kCExterns)
    if (routine == e.routine) return e;
  throw std::runtime_error("the C backend cannot call extern routine '" + routine + "'");
}

/** (routine, dtype) of every call statement, each once, in a stable order. */
std::set<std::pair<std::string, DType>> calls_of(const KernelPlan& plan) {
  std::set<std::pair<std::string, DType>> out;
  for (const Kernel& k : plan.kernels)
    for (const Statement& st : k.statements)
      if (st.kind == Statement::Kind::call) out.insert({st.routine, plan.buffers[st.buffer].dtype});
  return out;
}

}  // namespace

std::string c_extern_helpers(const KernelPlan& plan) {
  auto calls = calls_of(plan);
  if (calls.empty()) return "";
  std::string s = kCblasEnums;
  for (const auto& [routine, dtype] : calls)
    s += c_extern(routine).helper(dtype);
  return s;
}

std::string c_extern_call(const KernelPlan& plan, const Statement& st) {
  const CExtern& e = c_extern(st.routine);
  std::string s = "kiln_" + std::string(e.routine) + "_" +
                  dtype_suffix(plan.buffers[st.buffer].dtype) + "(" + e.sizes(plan, st);
  for (int b : st.args)
    s += ", b" + std::to_string(b);
  return s + ", b" + std::to_string(st.buffer) + ");";
}

std::vector<std::string> c_extern_symbols(const KernelPlan& plan) {
  std::set<std::string> out;
  for (const auto& [routine, dtype] : calls_of(plan))
    out.insert(c_extern(routine).symbol(dtype));
  return {out.begin(), out.end()};
}

}  // namespace kiln
