// Checked size arithmetic (ir/sizes.h): the helpers, IntExpr evaluation past int64, Tensor's
// element count and limits, the interpreter's and the public API's checks of bound sizes.
#include <doctest/doctest.h>

#include <climits>
#include <fstream>
#include <string>
#include <vector>

#include "ir/int_expr.h"
#include "ir/interpreter.h"
#include "ir/sizes.h"
#include "ir/tensor.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

/** The message of the SizeError that `f` throws, or "" when it throws none. */
template <class F>
std::string size_error(F f) {
  try {
    f();
  } catch (const SizeError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

using Sizes = std::map<std::string, int64_t>;

constexpr int64_t k2to32 = int64_t{1} << 32;

}  // namespace

TEST_CASE("sizes: checked_add and checked_mul report int64 overflow") {
  CHECK(checked_add(3, 4) == 7);
  CHECK(checked_add(INT64_MAX, -1) == INT64_MAX - 1);
  CHECK_FALSE(checked_add(INT64_MAX, 1).has_value());
  CHECK_FALSE(checked_add(INT64_MIN, -1).has_value());
  CHECK(checked_mul(k2to32, k2to32 / 4) == int64_t{1} << 62);
  CHECK_FALSE(checked_mul(k2to32, k2to32).has_value());
  CHECK_FALSE(checked_mul(INT64_MIN, -1).has_value());
  CHECK(checked_mul(-k2to32, k2to32 / 2) == INT64_MIN);
}

TEST_CASE("sizes: checked_numel and checked_bytes enforce the limits") {
  CHECK(checked_numel({3, 5}, "t") == 15);
  CHECK(checked_numel({}, "t") == 1);
  CHECK(checked_numel({0, k2to32, k2to32}, "t") == 0);  // empty, though the product overflows
  CHECK(checked_numel({k2to32, k2to32, 0}, "t") == 0);
  CHECK(checked_product({k2to32, k2to32}) == std::nullopt);
  CHECK(checked_product({3, -1, 0}) == std::nullopt);
  CHECK(checked_product({3, 0, -1}) == std::nullopt);
  CHECK(checked_product({3, 0, 5}) == 0);
  CHECK(checked_numel({kMaxElements}, "t") == kMaxElements);
  CHECK(contains(size_error([] { checked_numel({kMaxElements + 1}, "t"); }),
                 "t: [1099511627777] has 1099511627777 elements, more than the limit 2^40"));
  CHECK(contains(size_error([] {
                   checked_numel({k2to32, k2to32}, "x");
                 }),
                 "x: [4294967296, 4294967296] has 18446744073709551616 elements"));
  CHECK(contains(size_error([] {
                   checked_numel({2, -1}, "x");
                 }),
                 "x: dimension 1 of [2, -1] is -1; a dimension must not be negative"));
  CHECK(contains(size_error([] { checked_numel(std::vector<int64_t>(65, 1), "x"); }),
                 "has 65 dimensions, more than the limit 64"));
  CHECK(checked_numel(std::vector<int64_t>(64, 1), "x") == 1);
  CHECK(checked_bytes(DType::f64, {kMaxElements}, "t") == kMaxElements * 8);
  CHECK(checked_bytes(DType::f16, {3, 5}, "t") == 30);
}

TEST_CASE("sizes: IntExpr arithmetic and evaluation past int64 throw overflow_error") {
  IntExpr m = IntExpr::var("M"), n = IntExpr::var("N");
  std::map<std::string, int64_t> big{{"M", k2to32}, {"N", k2to32}};
  CHECK_THROWS_AS((m * n).eval(big), std::overflow_error);
  CHECK_THROWS_AS((m + n + INT64_MAX).eval({{"M", 1}, {"N", 0}}), std::overflow_error);
  CHECK_THROWS_AS(floordiv(m, n).eval({{"M", INT64_MIN}, {"N", -1}}), std::overflow_error);
  CHECK(mod(m, n).eval({{"M", INT64_MIN}, {"N", -1}}) == 0);
  CHECK((m * n).eval({{"M", k2to32}, {"N", k2to32 / 4}}) == int64_t{1} << 62);
  CHECK_THROWS_AS(IntExpr(INT64_MAX) * IntExpr(2), std::overflow_error);
  CHECK_THROWS_AS(IntExpr(INT64_MAX) + IntExpr(1), std::overflow_error);
  CHECK_THROWS_AS(m * INT64_MAX + m, std::overflow_error);  // merged coefficients
}

TEST_CASE("sizes: eval_checked_shape names the tensor, the dimension and the sizes") {
  IntExpr m = IntExpr::var("M"), n = IntExpr::var("N"), h = IntExpr::var("H");
  std::string what = "output 'y' of 'matmul'";
  CHECK(eval_checked_shape(what, DType::f32, {m, n}, {{"M", 3}, {"N", 7}}) ==
        std::vector<int64_t>{3, 7});
  CHECK(size_error([&] {
          eval_checked_shape(what, DType::f32, {m, n}, {{"M", k2to32}, {"N", k2to32}});
        }) ==
        "output 'y' of 'matmul': f32[M, N] with M = 4294967296, N = 4294967296 has "
        "18446744073709551616 elements, more than the limit 2^40");
  CHECK(size_error([&] {
          eval_checked_shape("input 'x' of 'conv'", DType::f16, {h - 3, n}, {{"H", 2}, {"N", 4}});
        }) ==
        "input 'x' of 'conv': dimension 0 (H - 3) of f16[H - 3, N] is -1 with H = 2; a "
        "dimension must not be negative");
  CHECK(size_error([&] {
          eval_checked_shape("t", DType::i8, {m * n}, {{"M", k2to32}, {"N", k2to32}});
        }) ==
        "t: dimension 0 (M*N) of i8[M*N] overflows int64 with M = 4294967296, "
        "N = 4294967296");
  CHECK(contains(size_error([&] { eval_checked_shape("t", DType::f32, {m}, {}); }),
                 "t: dimension 0 (M) of f32[M]: unbound size variable 'M'"));
  // The limit may be raised to int64 for tensors not held in memory (loop nests).
  CHECK(eval_checked_shape("t", DType::f32, {m, n}, {{"M", k2to32}, {"N", 4}}, INT64_MAX) ==
        std::vector<int64_t>{k2to32, 4});
}

TEST_CASE("sizes: Tensor checks its element count") {
  CHECK(Tensor(DType::f32, {3, 5}).numel() == 15);
  CHECK(contains(size_error([] {
                   Tensor(DType::f32, {k2to32, k2to32});
                 }),
                 "tensor f32[4294967296, 4294967296]: [4294967296, 4294967296] has "
                 "18446744073709551616 elements, more than the limit 2^40"));
  CHECK(contains(size_error([] { Tensor(DType::i32, {kMaxElements + 1}); }),
                 "more than the limit 2^40"));
  CHECK(contains(size_error([] { Tensor(DType::f32, {-1}); }), "must not be negative"));
  Tensor t(DType::f32, {2, 2});
  t.dims = {k2to32, k2to32};  // dims is a public field: numel() must not wrap to 0
  CHECK(contains(size_error([&] { t.numel(); }), "the element count overflows"));
  t.dims = {4, -1};
  CHECK_THROWS_AS(t.numel(), SizeError);
}

#if defined(KILN_SANITIZED)
#define KILN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN 1
#endif
#endif

TEST_CASE("sizes: a Tensor whose memory cannot be allocated names its type and bytes") {
  // 2^40 elements are 8 TiB as doubles: malloc refuses that unless the kernel overcommits
  // without limit (vm.overcommit_memory = 1), where filling it would exhaust memory instead.
  // AddressSanitizer aborts on such a request rather than failing it, so skip under it too.
#ifndef KILN_ASAN
  std::ifstream f("/proc/sys/vm/overcommit_memory");
  int mode = 1;
  f >> mode;
  if (mode == 1) return;
  std::string msg;
  try {
    Tensor(DType::f32, {kMaxElements});
  } catch (const TensorAllocError& e) {
    msg = e.what();
  }
  CHECK(msg ==
        "out of memory for f32[1099511627776] (8796093022208 bytes: the interpreter holds "
        "every element in 8 bytes)");
#endif
}

TEST_CASE("sizes: the interpreter rejects a negative or too large node naming it") {
  Graph g;
  g.name = "g";
  IntExpr h = IntExpr::var("H");
  NodeId x = g.input("x", DType::f32, {h - 3}, false);
  g.outputs.push_back({"y", g.unary(Op::neg, x)});
  g.size_vars = {"H"};
  std::string msg;
  try {
    interpret(g, {{"H", 2}}, {Tensor(DType::f32, {0})});
  } catch (const SizeError& e) {
    msg = e.what();
  }
  CHECK(msg ==
        "input 'x' of 'g': dimension 0 (H - 3) of f32[H - 3] is -1 with H = 2; a dimension must "
        "not be negative");
  CHECK(contains(size_error([&] {
                   check_graph_sizes(g, {{"H", kMaxElements + 4}}, false);
                 }),
                 "input 'x' of 'g': f32[H - 3] with H = 1099511627780 has 1099511627777 elements"));
  check_graph_sizes(g, {{"H", 10}}, true);
}

TEST_CASE("sizes: the interpreter's view index arithmetic is checked") {
  // The diagonal of an n x n view reading %0 * 2^62 - %1 * 2^62: always 0, but at [2, 2] each
  // term is 2^63, past int64 (undefined behaviour before the check, wrapping back to 0 by luck).
  auto diagonal = [](int64_t n) {
    Graph g;
    g.name = "g";
    NodeId x = g.input("x", DType::f32, {4}, false);
    IntExpr big = int64_t{1} << 62;
    View v;
    v.shape = {n, n};
    v.index = {IntExpr::index(0) * big - IntExpr::index(1) * big};
    v.mask = {{IntExpr::index(0) - IntExpr::index(1), 1}};  // only the diagonal is read
    g.outputs.push_back({"y", g.view(x, v)});
    return interpret(g, {}, {Tensor(DType::f32, {4})});
  };
  CHECK(diagonal(2)[0].dims == std::vector<int64_t>{2, 2});  // up to [1, 1] every term fits
  std::string msg;
  try {
    diagonal(3);
  } catch (const std::overflow_error& e) {
    msg = e.what();
  }
  CHECK(contains(msg, "%1 (view) of 'g': the view's index "));
  CHECK(contains(msg, " overflows int64"));
}

TEST_CASE("sizes: the C++ API rejects sizes past the limits as invalid arguments") {
  Spec spec = Spec::load("ops/nn.toml");
  Compiled mm = compile(spec, "matmul", "interp");
  Sizes huge{{"M", k2to32}, {"N", k2to32}, {"K", k2to32}};
  auto invalid = [&](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string msg = invalid([&] { mm.byte_size("y", huge); });
  CHECK(msg ==
        "output 'y' of 'matmul': f32[M, N] with M = 4294967296, N = 4294967296 has "
        "18446744073709551616 elements, more than the limit 2^40");
  CHECK(contains(invalid([&] { mm.shape("a", huge); }), "input 'a' of 'matmul'"));
  float a = 0, b = 0, y = 0;
  CHECK(contains(invalid([&] { mm.run({&a, &b, &y}, huge); }), "more than the limit 2^40"));
  CompileSettings s;
  s.batch_rank = 65;
  CHECK(contains(invalid([&] { compile(spec, "softmax", "interp", s); }),
                 "batch_rank 65 is more than the limit of 64 dimensions"));
  CompileSettings fixed;
  fixed.fixed_sizes = {{"M", k2to32}, {"N", k2to32}};
  CHECK(
      contains(invalid([&] { compile(Spec::load("ops/tensor.toml"), "flatten", "interp", fixed); }),
               "input 'x' of 'flatten': f32[M, N] with M = 4294967296, N = 4294967296 has "
               "18446744073709551616 elements"));  // named as `kiln run --specialize` names it
}
