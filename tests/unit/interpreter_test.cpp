#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "dsl/check.h"
#include "ir/interpreter.h"
#include "tests/support/harness.h"

using namespace kiln;

namespace {

using Values = std::vector<double>;

const double kNaN = NAN;
const double kInf = INFINITY;

/** A 1-d tensor of dtype `t` holding `values` (rounded or wrapped to `t` by Tensor::set). */
Tensor make(DType t, const Values& values, std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(values.size())};
  Tensor out(t, dims);
  for (size_t k = 0; k < values.size(); ++k)
    out.set(k, values[k]);
  return out;
}

Values values_of(const Tensor& t) {
  Values v;
  for (size_t k = 0; k < t.numel(); ++k)
    v.push_back(t.at(k));
  return v;
}

/** Element-wise equality where NaN equals NaN. */
bool same_values(const Values& a, const Values& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])))) return false;
  return true;
}

std::string show(const Values& v) {
  std::string s;
  for (double x : v)
    s += std::to_string(x) + " ";
  return s;
}

/** Runs `g`, whose inputs are 1-d tensors of the given values, and returns its only output. */
Tensor run(const Graph& g, const std::vector<Tensor>& inputs, const SizeBindings& sizes = {}) {
  return interpret(g, sizes, inputs).at(0);
}

Tensor run_binary(Op op, DType t, const Values& a, const Values& b) {
  Graph g;
  Shape s = {static_cast<int64_t>(a.size())};
  NodeId x = g.input("a", t, s, false), y = g.input("b", t, s, false);
  g.outputs = {{"out", g.binary(op, x, y)}};
  return run(g, {make(t, a), make(t, b)});
}

Tensor run_unary(Op op, DType t, const Values& a) {
  Graph g;
  NodeId x = g.input("a", t, {static_cast<int64_t>(a.size())}, false);
  g.outputs = {{"out", g.unary(op, x)}};
  return run(g, {make(t, a)});
}

Tensor run_cast(DType from, DType to, const Values& a, bool bitwise) {
  Graph g;
  NodeId x = g.input("a", from, {static_cast<int64_t>(a.size())}, false);
  g.outputs = {{"out", g.cast(x, to, bitwise)}};
  return run(g, {make(from, a)});
}

}  // namespace

TEST_CASE("interpreter: binary ops") {
  struct Case {
    Op op;
    DType t;
    Values a, b, expected;
  };
  using enum DType;
  const Case cases[] = {
      {Op::add, f32, {1, 2.5, -1}, {2, 0.5, 1}, {3, 3, 0}},
      {Op::mul, f64, {1.5, -2, 0}, {2, 3, kInf}, {3, -6, kNaN}},
      {Op::max, f32, {1, kNaN, 3, -kInf}, {2, 1, kNaN, -1}, {2, kNaN, kNaN, -1}},
      {Op::mod, f32, {-7, 7.5, 7}, {2, 2, -2}, {-1, 1.5, 1}},
      {Op::add, i8, {127, -128, 100}, {1, -1, 100}, {-128, 127, -56}},
      {Op::add, u8, {255, 200}, {1, 100}, {0, 44}},
      {Op::mul, i32, {65536, 2147483647, -3}, {65536, 2, 5}, {0, -2, -15}},
      {Op::max, i32, {-5, 7}, {-3, 2}, {-3, 7}},
      {Op::idiv, i32, {7, -7, 7, -7, 0}, {2, 2, -2, -2, 5}, {3, -3, -3, 3, 0}},
      {Op::mod, i32, {7, -7, 7, -7}, {2, 2, -2, -2}, {1, -1, 1, -1}},
      {Op::idiv, i8, {-128, 127}, {-1, -1}, {-128, -127}},
      {Op::mod, i8, {-128}, {-1}, {0}},
      {Op::bit_and, i32, {12, -1}, {10, 5}, {8, 5}},
      {Op::bit_or, i32, {12, -8}, {10, 3}, {14, -5}},
      {Op::bit_xor, u8, {12, 255}, {10, 1}, {6, 254}},
      {Op::bit_xor, boolean, {0, 1, 1}, {1, 1, 0}, {1, 0, 1}},
      {Op::shl, i8, {1, 3, 1, 5}, {7, 9, -1, 0}, {-128, 6, -128, 5}},
      {Op::shl, u8, {255, 1}, {1, 8}, {254, 1}},
      {Op::shr, i8, {-128, -1, 64}, {1, 7, 3}, {-64, -1, 8}},
      {Op::shr, u8, {128, 255}, {1, 4}, {64, 15}},
      {Op::shr, i32, {-1, -16}, {31, 2}, {-1, -4}},
      {Op::cmplt, f32, {1, 2, kNaN, 1}, {2, 2, 1, kNaN}, {1, 0, 0, 0}},
      {Op::cmpeq, f32, {1, kNaN, 0}, {1, kNaN, -0.0}, {1, 0, 1}},
      {Op::cmplt, i32, {-1, 5}, {0, 5}, {1, 0}},
      {Op::cmpeq, u8, {3, 4}, {3, 5}, {1, 0}},
      {Op::add, u16, {65535, 40000}, {1, 30000}, {0, 4464}},
      {Op::mul, u16, {65535, 256}, {65535, 256}, {1, 0}},
      {Op::mul, u32, {4294967295, 65536}, {4294967295, 65536}, {1, 0}},
      {Op::idiv, u32, {4294967295, 7}, {2, 4294967295}, {2147483647, 0}},
      {Op::mod, u32, {4294967295, 7}, {10, 4294967295}, {5, 7}},
      {Op::max, u32, {4294967295, 1}, {0, 2147483648}, {4294967295, 2147483648}},
      {Op::shr, u32, {4294967295, 2147483648}, {31, 4}, {1, 134217728}},
      {Op::shr, u16, {65535}, {17}, {32767}},
      {Op::shl, u32, {3}, {31}, {2147483648}},
      {Op::cmplt, u32, {2147483648, 1}, {1, 4294967295}, {0, 1}},
      {Op::cmplt, u16, {32768}, {1}, {0}},
  };
  for (const Case& c : cases) {
    CAPTURE(op_name(c.op));
    CAPTURE(dtype_name(c.t));
    Tensor out = run_binary(c.op, c.t, c.a, c.b);
    bool compare = c.op == Op::cmplt || c.op == Op::cmpeq;
    CHECK(out.dtype == (compare ? boolean : c.t));
    CAPTURE(show(values_of(out)));
    CHECK(same_values(values_of(out), c.expected));
  }
}

TEST_CASE("interpreter: unary ops") {
  struct Case {
    Op op;
    DType t;
    Values a, expected;
  };
  using enum DType;
  const Case cases[] = {
      {Op::neg, f32, {1, -0.5}, {-1, 0.5}},
      {Op::neg, i8, {-128, 5}, {-128, -5}},
      {Op::recip, f64, {4, 0, -0.5}, {0.25, kInf, -2}},
      {Op::sqrt, f32, {4, -1}, {2, kNaN}},
      {Op::exp2, f64, {3, -1}, {8, 0.5}},
      {Op::log2, f64, {8, 0}, {3, -kInf}},
      {Op::sin, f64, {0}, {0}},
      {Op::logical_not, boolean, {0, 1}, {1, 0}},
      {Op::logical_not, i32, {0, 5}, {-1, -6}},
      {Op::logical_not, u8, {0, 15}, {255, 240}},
      {Op::logical_not, u32, {0}, {4294967295}},
      {Op::neg, u16, {1, 0}, {65535, 0}},
  };
  for (const Case& c : cases) {
    CAPTURE(op_name(c.op));
    CAPTURE(dtype_name(c.t));
    Tensor out = run_unary(c.op, c.t, c.a);
    CAPTURE(show(values_of(out)));
    CHECK(same_values(values_of(out), c.expected));
  }
}

TEST_CASE("interpreter: cast and bitcast") {
  struct Case {
    DType from, to;
    bool bitwise;
    Values a, expected;
  };
  using enum DType;
  const double third = 1.0 / 3;
  const Case cases[] = {
      {f64,
       f16,
       false,
       {third, 65520, 65504, 1e-8, -0.1},
       {0.333251953125, kInf, 65504, 0, -0.0999755859375}},
      {f64,
       bf16,
       false,
       {third, 3.14159, 1.00390625, 1.01171875},
       {0.333984375, 3.140625, 1, 1.015625}},
      {f64, f32, false, {0.1}, {static_cast<double>(0.1f)}},
      {f32, i32, false, {2.7, -2.7, kNaN, 1e10, -1e10}, {2, -2, 0, 2147483647, -2147483648.0}},
      {f32, u8, false, {-5, 300, 254.9}, {0, 255, 254}},
      {f32, boolean, false, {0.5, 0, kNaN}, {1, 0, 1}},
      {i32, i8, false, {300, -129, -1}, {44, 127, -1}},
      {i32, boolean, false, {0, 5, -1}, {0, 1, 1}},
      {i32, f16, false, {2049, 4097, 3}, {2048, 4096, 3}},
      {i64, f32, false, {16777217}, {16777216}},
      {boolean, f32, false, {1, 0}, {1, 0}},
      {f32, i32, true, {1.0, -2.0}, {1065353216, -1073741824}},
      {i32, f32, true, {1065353216}, {1.0}},
      {f16,
       i16,
       true,
       {1.0, -2.0, 65504, 3 * std::ldexp(1.0, -24), kInf},
       {15360, -16384, 31743, 3, 31744}},
      {i16, f16, true, {15360, 1, 31744, -1024}, {1.0, std::ldexp(1.0, -24), kInf, -kInf}},
      {bf16, i16, true, {1.0, -2.0}, {16256, -16384}},
      {i16, bf16, true, {16256, 16448}, {1.0, 3.0}},
      {f64, i64, true, {1.0}, {4607182418800017408.0}},
      {i8, u8, true, {-1, 5}, {255, 5}},
      {f64, u32, false, {-1, 4294967296, 4294967295.5, kNaN}, {0, 4294967295, 4294967295, 0}},
      {f32, u16, false, {70000, 3.9}, {65535, 3}},
      {i32, u32, true, {-1}, {4294967295}},
      {u32, i32, false, {4294967295}, {-1}},
      {u32, f64, false, {4294967295}, {4294967295}},
      {i64, u16, false, {-1, 65537}, {65535, 1}},
      {f64, u64, false, {-1, 1e30, 0x1.8p63, kNaN}, {0, 0x1.0p64, 0x1.8p63, 0}},
  };
  for (const Case& c : cases) {
    CAPTURE(dtype_name(c.from));
    CAPTURE(dtype_name(c.to));
    CAPTURE(c.bitwise);
    Tensor out = run_cast(c.from, c.to, c.a, c.bitwise);
    CHECK(out.dtype == c.to);
    CAPTURE(show(values_of(out)));
    CHECK(same_values(values_of(out), c.expected));
  }
  CHECK(std::isnan(run_cast(i32, f32, {0x7fc00000}, true).f[0]));
  CHECK(run_cast(f64, i64, {-0.0}, true).i[0] == INT64_MIN);
  CHECK_THROWS_AS(run_cast(f32, i16, {1}, true), std::runtime_error);
}

TEST_CASE("interpreter: scan") {
  struct Case {
    Op op;
    DType t;
    std::vector<int64_t> dims;
    int axis;
    Values a, expected;
  };
  using enum DType;
  const Case cases[] = {
      {Op::add, f32, {5}, 0, {1, 2, 3, 4, 5}, {1, 3, 6, 10, 15}},
      {Op::add, f32, {2, 3}, 0, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 5, 7, 9}},
      {Op::add, f32, {2, 3}, 1, {1, 2, 3, 4, 5, 6}, {1, 3, 6, 4, 9, 15}},
      {Op::add, i8, {3}, 0, {100, 100, 100}, {100, -56, 44}},
      {Op::mul, i32, {2, 2}, 1, {2, 3, -4, 5}, {2, 6, -4, -20}},
      {Op::max, f32, {4}, 0, {1, kNaN, 3, 7}, {1, kNaN, kNaN, kNaN}},
      {Op::max, i32, {4}, 0, {-5, -9, -3, -4}, {-5, -5, -3, -3}},
      {Op::bit_and, i32, {3}, 0, {7, 6, 12}, {7, 6, 4}},
      {Op::bit_or, u8, {3}, 0, {1, 4, 2}, {1, 5, 7}},
      {Op::bit_xor, i64, {3}, 0, {5, 3, 5}, {5, 6, 3}},
      {Op::add, f32, {2, 0}, 1, {}, {}},
  };
  for (const Case& c : cases) {
    Graph h;
    Shape s(c.dims.begin(), c.dims.end());
    h.outputs = {{"out", h.scan(c.op, h.input("a", c.t, s, false), c.axis)}};
    Tensor result = run(h, {make(c.t, c.a, c.dims)});
    CAPTURE(op_name(c.op));
    CAPTURE(show(values_of(result)));
    CHECK(result.dims == c.dims);
    CHECK(same_values(values_of(result), c.expected));
  }
}

TEST_CASE("interpreter: a reduce over a bounded domain") {
  const IntExpr i = IntExpr::var("%0"), j = IntExpr::var("%1"), n = IntExpr::var("N");
  Graph g;
  g.size_vars = {"N"};
  NodeId x = g.input("x", DType::f32, {n, n}, false);
  // j <= i: the lower triangle; j < i and j > i - 3: a band, empty in row 0.
  g.outputs = {{"tri", g.reduce(ReduceKind::sum, x, {1}, {i - j})},
               {"band", g.reduce(ReduceKind::max, x, {1}, {i - j - 1, j - i + 2})},
               {"upper", g.reduce(ReduceKind::prod, x, {0}, {i - j + n - 4})}};
  Tensor in(DType::f32, {4, 4});
  for (size_t k = 0; k < in.numel(); ++k)
    in.set(k, static_cast<double>(k + 1));
  auto out = interpret(g, {{"N", 4}}, {in});
  CHECK(values_of(out[0]) == Values{1, 5 + 6, 9 + 10 + 11, 13 + 14 + 15 + 16});
  CHECK(values_of(out[1]) == Values{-kInf, 5, 10, 15});
  // i - j >= 0 with N = 4: rows i >= j, so column j multiplies rows j .. 3.
  CHECK(values_of(out[2]) == Values{1 * 5 * 9 * 13, 6 * 10 * 14, 11 * 15, 16});
}

TEST_CASE("interpreter: reduce") {
  Graph g;
  NodeId x = g.input("x", DType::f32, {2, 3, 4}, false);
  NodeId sum = g.reduce(ReduceKind::sum, x, {0, 2});
  NodeId max = g.reduce(ReduceKind::max, x, {1});
  NodeId all = g.reduce(ReduceKind::sum, x, {0, 1, 2});
  g.outputs = {{"sum", sum}, {"max", max}, {"all", all}};
  Tensor in(DType::f32, {2, 3, 4});
  for (size_t k = 0; k < in.numel(); ++k)
    in.set(k, static_cast<double>(k));
  auto out = interpret(g, {}, {in});
  CHECK(out[0].dims == std::vector<int64_t>{1, 3, 1});
  CHECK(values_of(out[0]) == Values{60, 92, 124});
  CHECK(out[1].dims == std::vector<int64_t>{2, 1, 4});
  CHECK(values_of(out[1]) == Values{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK(values_of(out[2]) == Values{276});

  struct Case {
    ReduceKind kind;
    DType t;
    std::vector<int64_t> dims;
    std::vector<int> axes;
    Values a, expected;
  };
  using enum DType;
  const Case cases[] = {
      {ReduceKind::prod, f32, {2, 1, 3}, {0, 1, 2}, {1, 2, 3, 4, 5, 6}, {720}},
      {ReduceKind::prod, i8, {2, 3}, {0, 1}, {1, 2, 3, 4, 5, 6}, {-48}},
      {ReduceKind::prod, i32, {2, 3}, {1}, {1, 2, 3, 4, 5, 6}, {6, 120}},
      {ReduceKind::max, f32, {3}, {0}, {1, kNaN, 3}, {kNaN}},
      {ReduceKind::max, i32, {3}, {0}, {-5, -3, -9}, {-3}},
      {ReduceKind::sum, i8, {2, 2}, {0}, {100, -100, 100, -100}, {-56, 56}},
      {ReduceKind::sum, f32, {2, 0}, {1}, {}, {0, 0}},
      {ReduceKind::max, f32, {2, 0}, {1}, {}, {-kInf, -kInf}},
      {ReduceKind::max, i8, {1, 0}, {1}, {}, {-128}},
  };
  for (const Case& c : cases) {
    Graph h;
    Shape s(c.dims.begin(), c.dims.end());
    h.outputs = {{"out", h.reduce(c.kind, h.input("a", c.t, s, false), c.axes)}};
    Tensor result = run(h, {make(c.t, c.a, c.dims)});
    CAPTURE(reduce_kind_name(c.kind));
    CAPTURE(show(values_of(result)));
    CHECK(same_values(values_of(result), c.expected));
  }
}

TEST_CASE("interpreter: views, index, constants, where, mulacc") {
  IntExpr n = IntExpr::var("N");
  Graph g;
  g.size_vars = {"N"};
  NodeId x = g.input("x", DType::f32, {n}, false);
  NodeId padded = g.view(x, views::pad({n}, 0, 1, 2));
  NodeId m = g.input("m", DType::i32, {2, 3}, false);
  NodeId transposed = g.view(m, views::permute({2, 3}, {1, 0}));
  NodeId flipped = g.view(transposed, views::slice({3, 2}, 0, 2, 3, -1));
  g.outputs = {{"padded", padded},
               {"flipped", g.unary(Op::copy, flipped)},
               {"iota1", g.index(DType::i32, {2, 3}, 1)},
               {"iota0", g.index(DType::f16, {2, 3}, 0)},
               {"c", g.constant(DType::f16, {2}, 0.1)},
               {"ci", g.constant_int(DType::u8, {1}, 300)}};
  auto out = interpret(g, {{"N", 3}},
                       {make(DType::f32, {1, 2, 3}), make(DType::i32, {0, 1, 2, 3, 4, 5}, {2, 3})});
  CHECK(values_of(out[0]) == Values{0, 1, 2, 3, 0, 0});
  CHECK(out[1].dims == std::vector<int64_t>{3, 2});
  CHECK(values_of(out[1]) == Values{2, 5, 1, 4, 0, 3});
  CHECK(values_of(out[2]) == Values{0, 1, 2, 0, 1, 2});
  CHECK(values_of(out[3]) == Values{0, 0, 0, 1, 1, 1});
  CHECK(values_of(out[4]) == Values{0.0999755859375, 0.0999755859375});
  CHECK(values_of(out[5]) == Values{44});

  Graph t;
  NodeId c = t.input("c", DType::boolean, {3}, false);
  NodeId a = t.input("a", DType::i8, {3}, false), b = t.input("b", DType::i8, {3}, false);
  t.outputs = {{"where", t.ternary(Op::where, c, a, b)},
               {"mulacc", t.ternary(Op::mulacc, a, a, b)}};
  auto r = interpret(
      t, {},
      {make(DType::boolean, {1, 0, 1}), make(DType::i8, {1, 16, 3}), make(DType::i8, {10, 1, 30})});
  CHECK(values_of(r[0]) == Values{1, 1, 3});
  CHECK(values_of(r[1]) == Values{11, 1, 39});
}

TEST_CASE("interpreter: errors") {
  Graph div;
  NodeId a = div.input("a", DType::i32, {2}, false), b = div.input("b", DType::i32, {2}, false);
  div.outputs = {{"q", div.binary(Op::idiv, a, b)}};
  CHECK_THROWS_WITH_AS(run(div, {make(DType::i32, {1, 2}), make(DType::i32, {1, 0})}),
                       "integer division by zero in node %2", std::runtime_error);
  CHECK_THROWS_WITH_AS(run(div, {make(DType::i32, {1, 2, 3}), make(DType::i32, {1, 1})}),
                       doctest::Contains("input 'a'"), std::runtime_error);
  CHECK_THROWS_WITH_AS(run(div, {make(DType::i32, {1, 2}), make(DType::i16, {1, 1})}),
                       doctest::Contains("input 'b'"), std::runtime_error);
  CHECK_THROWS_AS(run(div, {make(DType::i32, {1, 2})}), std::runtime_error);

  Graph sized;
  sized.size_vars = {"M"};
  sized.outputs = {{"x", sized.input("x", DType::f32, {IntExpr::var("M"), 3}, false)}};
  CHECK_THROWS_WITH_AS(run(sized, {Tensor(DType::f32, {2, 4})}, {{"M", 2}}),
                       doctest::Contains("input 'x'"), std::runtime_error);
  CHECK_THROWS_WITH_AS(run(sized, {Tensor(DType::f32, {2, 3})}), doctest::Contains("'M'"),
                       std::runtime_error);
  CHECK(run(sized, {Tensor(DType::f32, {2, 3})}, {{"M", 2}}).dims == std::vector<int64_t>{2, 3});

  Graph shifted;
  View v = View::identity({3});
  v.index[0] = IntExpr::index(0) + 1;
  shifted.outputs = {{"y", shifted.view(shifted.input("x", DType::f32, {3}, false), v)}};
  CHECK_THROWS_WITH_AS(run(shifted, {Tensor(DType::f32, {3})}),
                       doctest::Contains("view reads outside its source"), std::runtime_error);

  Graph ext;
  Node call;
  call.op = Op::extern_call;
  call.name = "nosuch";
  call.shape = {1};
  ext.outputs = {{"y", ext.add(call)}};
  CHECK_THROWS_WITH_AS(run(ext, {}), "%0 (extern): unknown extern routine 'nosuch'",
                       std::runtime_error);

  CHECK_THROWS_AS(run_unary(Op::sqrt, DType::i32, {4}), std::runtime_error);
  CHECK_THROWS_AS(run_binary(Op::idiv, DType::f32, {4}, {2}), std::runtime_error);
}

TEST_CASE("tensor: random_tensor is seeded, in range and rounded") {
  Tensor a = random_tensor(DType::f32, {4, 50}, 7, -1, 1);
  CHECK(values_of(a) == values_of(random_tensor(DType::f32, {4, 50}, 7, -1, 1)));
  CHECK(values_of(a) != values_of(random_tensor(DType::f32, {4, 50}, 8, -1, 1)));
  for (double v : a.f) {
    CHECK(v >= -1);
    CHECK(v < 1);
    CHECK(v == static_cast<double>(static_cast<float>(v)));
  }
  Tensor h = random_tensor(DType::f16, {100}, 1, 0, 10);
  for (double v : h.f)
    CHECK(v == round_to_float(DType::f16, v));
  Tensor i = random_tensor(DType::i8, {200}, 3, -3, 3);
  std::set<int64_t> seen(i.i.begin(), i.i.end());
  CHECK(seen == std::set<int64_t>{-3, -2, -1, 0, 1, 2});
  Tensor b = random_tensor(DType::boolean, {100}, 3, 0, 1);
  std::set<int64_t> bits(b.i.begin(), b.i.end());
  CHECK(bits == std::set<int64_t>{0, 1});
}

TEST_CASE("tensor: type string and summary") {
  CHECK(tensor_type_str(Tensor(DType::bf16, {3, 5})) == "bf16[3, 5]");
  CHECK(tensor_type_str(Tensor(DType::boolean, {})) == "bool[]");
  CHECK(tensor_summary(make(DType::f32, {0.5, -1, 2.5})) ==
        "min -1 max 2.5 mean 0.666667 [0.5, -1, 2.5]");
  CHECK(tensor_summary(make(DType::i32, {1, 2, 3, 4, 5, 6, 7})) ==
        "min 1 max 7 mean 4 [1, 2, 3, 4, 5, 6, ...]");
  CHECK(tensor_summary(make(DType::f64, {kNaN, 1})) == "min 1 max 1 mean 1 nan 1 [nan, 1]");
  CHECK(tensor_summary(Tensor(DType::f32, {0})) == "empty");
}

namespace {

/** A 1-d u64 tensor holding `bits` (u64 values held as int64 bits). */
Tensor u64s(const std::vector<uint64_t>& bits) {
  Tensor t(DType::u64, {static_cast<int64_t>(bits.size())});
  for (size_t k = 0; k < bits.size(); ++k)
    t.set_int(k, static_cast<int64_t>(bits[k]));
  return t;
}

std::vector<uint64_t> u64_values(const Tensor& t) {
  std::vector<uint64_t> out;
  for (size_t k = 0; k < t.numel(); ++k)
    out.push_back(static_cast<uint64_t>(t.i[k]));
  return out;
}

}  // namespace

TEST_CASE("interpreter: u64 values past 2^63 are exact") {
  const uint64_t max = ~uint64_t{0}, top = uint64_t{1} << 63;
  struct Case {
    Op op;
    std::vector<uint64_t> a, b, expected;
  };
  const Case cases[] = {
      {Op::add, {max, top}, {1, top}, {0, 0}},
      {Op::mul, {max, 0x9e3779b97f4a7c15}, {max, 3}, {1, 0xdaa66d2c7ddf743f}},
      {Op::idiv, {max, top + 5, 7}, {2, top, max}, {top - 1, 1, 0}},
      {Op::mod, {max, top + 5}, {10, top}, {5, 5}},
      {Op::max, {max, 1}, {0, top}, {max, top}},
      {Op::shr, {max, top}, {63, 4}, {1, top >> 4}},
      {Op::shl, {3}, {63}, {top}},
      {Op::bit_xor, {max}, {top}, {top - 1}},
  };
  for (const Case& c : cases) {
    CAPTURE(op_name(c.op));
    Graph g;
    Shape s = {static_cast<int64_t>(c.a.size())};
    NodeId x = g.input("a", DType::u64, s, false), y = g.input("b", DType::u64, s, false);
    g.outputs = {{"out", g.binary(c.op, x, y)}};
    CHECK(u64_values(run(g, {u64s(c.a), u64s(c.b)})) == c.expected);
  }
  Graph g;
  NodeId x = g.input("a", DType::u64, {2}, false), y = g.input("b", DType::u64, {2}, false);
  g.outputs = {{"lt", g.binary(Op::cmplt, x, y)},
               {"f", g.cast(x, DType::f64, false)},
               {"k", g.binary(Op::add, x, g.constant_int(DType::u64, {2}, -1))}};
  std::vector<Tensor> out = interpret(g, {}, {u64s({max, 1}), u64s({1, top})});
  CHECK(values_of(out[0]) == Values{0, 1});
  CHECK(values_of(out[1]) == Values{0x1.0p64, 1});
  CHECK(u64_values(out[2]) == std::vector<uint64_t>{max - 1, 0});
  CHECK(int_to_string(DType::u64, out[2].i[0]) == "18446744073709551614");
  CHECK(tensor_summary(out[2]).find("max 18446744073709551614") != std::string::npos);
  Graph c;
  NodeId big = c.constant(DType::u64, {}, 0x1.8p63);
  CHECK(static_cast<uint64_t>(c[big].int_value) == 0xc000000000000000);
  CHECK(constant_str(c[big]) == "13835058055282163712");
}

TEST_CASE("interpreter: gather picks along its axis; a position outside it reads 0") {
  // src [2, 3] along axis 1: out[r, c] = src[r, idx[r, c]]; -1 and 3 are outside, no wrapping.
  Graph g;
  NodeId src = g.input("src", DType::f32, {2, 3}, false);
  NodeId idx = g.input("idx", DType::i32, {2, 4}, false);
  g.outputs = {{"out", g.gather(src, idx, 1)}};
  Tensor out = run(g, {make(DType::f32, {1, 2, 3, 4, 5, 6}, {2, 3}),
                       make(DType::i32, {2, 0, -1, 1, 3, 2, 2, 0}, {2, 4})});
  CHECK(out.dims == std::vector<int64_t>{2, 4});
  Values want = {3, 1, 0, 2, 0, 6, 6, 4};
  CHECK_MESSAGE(same_values(values_of(out), want), show(values_of(out)));

  // Along axis 0 with i64 positions, an integer source.
  Graph h;
  NodeId table = h.input("table", DType::i64, {3, 2}, false);
  NodeId rows = h.input("rows", DType::i64, {2, 2}, false);
  h.outputs = {{"out", h.gather(table, rows, 0)}};
  Tensor t = run(h, {make(DType::i64, {10, 11, 20, 21, 30, 31}, {3, 2}),
                     make(DType::i64, {2, -3, 0, 1}, {2, 2})});
  CHECK(same_values(values_of(t), {30, 0, 10, 21}));
}

TEST_CASE("interpreter: scatter combines repeated positions in order and drops the outside ones") {
  // base [2, 3] along axis 1: row 0 adds 10 + 30 at 2, drops 20 (at -1); row 1 drops 3.
  Graph g;
  NodeId base = g.input("base", DType::f32, {2, 3}, false);
  NodeId idx = g.input("idx", DType::i32, {2, 3}, false);
  NodeId src = g.input("src", DType::f32, {2, 3}, false);
  g.outputs = {{"add", g.scatter(Op::add, base, idx, src, 1)},
               {"mul", g.scatter(Op::mul, base, idx, src, 1)},
               {"max", g.scatter(Op::max, base, idx, src, 1)}};
  std::vector<Tensor> in = {make(DType::f32, {1, 2, 3, 4, 5, 6}, {2, 3}),
                            make(DType::i32, {2, -1, 2, 0, 3, 0}, {2, 3}),
                            make(DType::f32, {10, 20, 30, -1, 50, -2}, {2, 3})};
  std::vector<Tensor> out = interpret(g, {}, in);
  CHECK(out[0].dims == std::vector<int64_t>{2, 3});
  CHECK_MESSAGE(same_values(values_of(out[0]), {1, 2, 43, 1, 5, 6}), show(values_of(out[0])));
  CHECK_MESSAGE(same_values(values_of(out[1]), {1, 2, 900, 8, 5, 6}), show(values_of(out[1])));
  CHECK_MESSAGE(same_values(values_of(out[2]), {1, 2, 30, 4, 5, 6}), show(values_of(out[2])));

  // Along axis 0, integers that wrap, positions (u64) that repeat; index 2 x 1, base 3 x 1.
  Graph h;
  NodeId t = h.input("t", DType::i32, {3, 1}, false);
  NodeId rows = h.input("rows", DType::u64, {2, 1}, false);
  NodeId v = h.input("v", DType::i32, {2, 1}, false);
  h.outputs = {{"out", h.scatter(Op::add, t, rows, v, 0)}};
  Tensor r = run(h, {make(DType::i32, {2147483647, 7, 8}, {3, 1}), make(DType::u64, {0, 0}, {2, 1}),
                     make(DType::i32, {1, 1}, {2, 1})});
  CHECK(same_values(values_of(r), {-2147483647, 7, 8}));
}

TEST_CASE("interpreter: a scattered position outside its axis is an error when checked") {
  Graph g;
  NodeId base = g.input("base", DType::i64, {3}, false);
  NodeId idx = g.input("idx", DType::i64, {2}, false);
  NodeId src = g.input("src", DType::i64, {2}, false);
  g.outputs = {{"out", g.scatter(Op::add, base, idx, src, 0)}};
  std::vector<Tensor> in = {make(DType::i64, {1, 2, 3}), make(DType::i64, {1, 3}),
                            make(DType::i64, {5, 6})};
  CHECK(same_values(values_of(interpret(g, {}, in).at(0)), {1, 7, 3}));
  CHECK_THROWS_WITH_AS(interpret(g, {}, in, true),
                       doctest::Contains("scattered index 3 is outside the 3 elements of axis 0"),
                       std::runtime_error);
  in[1] = make(DType::i64, {-1, 0});  // negative positions do not wrap
  CHECK(same_values(values_of(interpret(g, {}, in).at(0)), {7, 2, 3}));
  CHECK_THROWS_WITH_AS(interpret(g, {}, in, true), doctest::Contains("scattered index -1"),
                       std::runtime_error);
}

TEST_CASE("interpreter: gather refuses float positions and positions that do not fit") {
  Graph g;
  NodeId src = g.input("src", DType::f32, {3}, false);
  NodeId pos = g.input("pos", DType::f32, {2}, false);
  g.outputs = {{"out", g.gather(src, pos, 0)}};
  CHECK_THROWS_WITH_AS(run(g, {make(DType::f32, {1, 2, 3}), make(DType::f32, {0, 1})}),
                       doctest::Contains("needs an integer index"), std::runtime_error);
  Graph h;
  NodeId s2 = h.input("src", DType::f32, {2, 3}, false);
  NodeId p2 = h.input("pos", DType::i32, {3, 1}, false);
  h.outputs = {{"out", h.gather(s2, p2, 1)}};
  CHECK_THROWS_WITH_AS(
      run(h, {make(DType::f32, {1, 2, 3, 4, 5, 6}, {2, 3}), make(DType::i32, {0, 1, 2}, {3, 1})}),
      doctest::Contains("differ from source"), std::runtime_error);
}

TEST_CASE(
    "interpreter: values computed where read give the stored values' bits, ops/ and "
    "tests/regressions") {
  // interpret(..., lazy_from): from 1 element on every view and elementwise node that only
  // reductions, views and elementwise nodes read is computed where read (the Lazy path that
  // large products take); the outputs must be the same bits as with every node stored.
  int compared = 0;
  for (const test::RunSpec& spec : test::first_cases()) {
    CAPTURE(spec.target);
    test::Run r = test::run(spec);
    std::vector<Tensor> lazy = interpret(r.graph, r.sizes, r.inputs, false, 1);
    REQUIRE(lazy.size() == r.outputs.size());
    for (size_t k = 0; k < lazy.size(); ++k) {
      CHECK(lazy[k].dims == r.outputs[k].dims);
      CHECK(lazy[k].i == r.outputs[k].i);
      bool same = lazy[k].f.size() == r.outputs[k].f.size();
      for (size_t j = 0; same && j < lazy[k].f.size(); ++j)
        same = std::bit_cast<uint64_t>(lazy[k].f[j]) == std::bit_cast<uint64_t>(r.outputs[k].f[j]);
      CHECK(same);
    }
    ++compared;
  }
  CHECK(compared > 100);
}
