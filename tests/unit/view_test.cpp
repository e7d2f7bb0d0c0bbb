#include <doctest/doctest.h>

#include <optional>

#include "ir/view.h"

using namespace kiln;

namespace {

using Index = std::vector<int64_t>;
using Env = std::map<std::string, int64_t>;

const IntExpr M = IntExpr::var("M");
const IntExpr N = IntExpr::var("N");

/** Size bindings every test is run under, including size-1 cases. */
const Env kBindings[] = {{{"M", 3}, {"N", 5}}, {{"M", 1}, {"N", 2}}, {{"M", 2}, {"N", 1}}};

/** The source index that view element `idx` reads, or nothing when the mask hides it. */
std::optional<Index> apply(const View& v, const Index& idx, Env env) {
  for (size_t k = 0; k < idx.size(); ++k)
    env["%" + std::to_string(k)] = idx[k];
  for (const MaskBound& m : v.mask) {
    int64_t e = m.expr.eval(env);
    if (e < 0 || e >= m.bound.eval(env)) return std::nullopt;
  }
  Index out;
  for (const IntExpr& e : v.index)
    out.push_back(e.eval(env));
  return out;
}

/** Every multi-index of `dims` in row-major order. */
std::vector<Index> all_indices(const Index& dims) {
  std::vector<Index> out;
  Index idx(dims.size(), 0);
  for (int64_t d : dims)
    if (d == 0) return out;
  while (true) {
    out.push_back(idx);
    size_t d = dims.size();
    while (d > 0 && ++idx[d - 1] == dims[d - 1])
      idx[--d] = 0;
    if (d == 0) return out;
  }
}

int64_t ravel(const Index& idx, const Index& dims) {
  int64_t linear = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    linear = linear * dims[d] + idx[d];
  return linear;
}

Index unravel(int64_t linear, const Index& dims) {
  Index idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = linear % dims[d];
    linear /= dims[d];
  }
  return idx;
}

}  // namespace

TEST_CASE("view: reshape matches a naive row-major reshape") {
  struct Case {
    Shape src, dst;
  };
  const Case cases[] = {
      {{M * N}, {M, N}},
      {{M, N}, {M * N}},
      {{2, 3, 4}, {6, 4}},
      {{2, 3, 4}, {2, 12}},
      {{2, 3, 4}, {24}},
      {{2, 3, 4}, {3, 8}},  // no aligned grouping: falls back to one linearisation
      {{2, 3, 4}, {4, 3, 2}},
      {{M, N}, {N, M}},
      {{M, N, 4}, {M, N * 2, 2}},
      {{6}, {2, 1, 3}},
      {{1, M}, {M}},
      {{M}, {M, 1}},
      {{M}, {1, M, 1}},
      {{4, N}, {2, 2 * N}},
      {{M, 2, N}, {M * 2, N}},
  };
  for (const Case& c : cases)
    for (const Env& env : kBindings) {
      View v = views::reshape(c.src, c.dst);
      Index src = eval_shape(c.src, env), dst = eval_shape(c.dst, env);
      CAPTURE(shape_str(c.src));
      CAPTURE(shape_str(c.dst));
      CAPTURE(v.str());
      CHECK(v.mask.empty());
      for (const Index& idx : all_indices(dst)) {
        CAPTURE(ravel(idx, dst));
        CHECK(apply(v, idx, env) == unravel(ravel(idx, dst), src));
      }
    }
}

TEST_CASE("view: permute") {
  View v = views::permute({2, M, N}, {2, 0, 1});
  CHECK(same_shape(v.shape, {N, 2, M}));
  for (const Env& env : kBindings)
    for (const Index& idx : all_indices(eval_shape(v.shape, env)))
      CHECK(apply(v, idx, env) == Index{idx[1], idx[2], idx[0]});
}

TEST_CASE("view: expand broadcasts size-1 dimensions") {
  View v = views::expand({1, N, 1}, {M, N, 3});
  for (const Env& env : kBindings)
    for (const Index& idx : all_indices(eval_shape(v.shape, env)))
      CHECK(apply(v, idx, env) == Index{0, idx[1], 0});
}

TEST_CASE("view: slice with positive and negative steps") {
  View reversed = views::slice({M, N}, 1, N - 1, N, -1);
  for (const Env& env : kBindings)
    for (const Index& idx : all_indices(eval_shape(reversed.shape, env)))
      CHECK(apply(reversed, idx, env) == Index{idx[0], env.at("N") - 1 - idx[1]});
  View strided = views::slice({7}, 0, 1, 3, 2);
  CHECK(same_shape(strided.shape, {3}));
  Index read;
  for (const Index& idx : all_indices({3}))
    read.push_back((*apply(strided, idx, {}))[0]);
  CHECK(read == Index{1, 3, 5});
}

TEST_CASE("view: pad masks the added elements") {
  View v = views::pad({M, N}, 1, 2, 1);
  CHECK(same_shape(v.shape, {M, N + 3}));
  for (const Env& env : kBindings)
    for (const Index& idx : all_indices(eval_shape(v.shape, env))) {
      bool inside = idx[1] >= 2 && idx[1] < env.at("N") + 2;
      auto read = apply(v, idx, env);
      CHECK(read.has_value() == inside);
      if (inside) CHECK(*read == Index{idx[0], idx[1] - 2});
    }
}

TEST_CASE("view: identity") {
  View v = View::identity({M, N});
  CHECK(v.is_identity({M, N}));
  CHECK_FALSE(v.is_identity({M, N + 1}));
  CHECK_FALSE(views::permute({M, N}, {1, 0}).is_identity({M, N}));
  CHECK(views::permute({M, M}, {0, 1}).is_identity({M, M}));
}

TEST_CASE("view: compose equals applying the views one after the other") {
  struct Case {
    const char* what;
    View inner, outer;
  };
  Shape src = {M, N};
  View padded = views::pad(src, 1, 1, 2);            // [M, N + 3]
  View flat = views::reshape(src, {M * N});          // [M*N]
  View sliced = views::slice(src, 0, M - 1, M, -1);  // [M, N] reversed rows
  const Case cases[] = {
      {"pad then permute", padded, views::permute(padded.shape, {1, 0})},
      {"pad then pad", padded, views::pad(padded.shape, 0, 1, 0)},
      {"reshape then slice", flat, views::slice(flat.shape, 0, 1, M * N - 2, 1)},
      {"slice then reshape", sliced, views::reshape(sliced.shape, {M * N})},
      {"reshape then reshape", flat, views::reshape(flat.shape, {N, M})},
      {"permute then expand", views::permute({1, N}, {1, 0}), views::expand({N, 1}, {N, M})},
  };
  for (const Case& c : cases)
    for (const Env& env : kBindings) {
      View both = View::compose(c.outer, c.inner);
      CAPTURE(c.what);
      CAPTURE(both.str());
      for (const Index& idx : all_indices(eval_shape(c.outer.shape, env))) {
        auto mid = apply(c.outer, idx, env);
        auto expected = mid ? apply(c.inner, *mid, env) : std::nullopt;
        CHECK(apply(both, idx, env) == expected);
      }
    }
}

TEST_CASE("view: reshape of a source with a zero dimension has no index to compute") {
  // found by tests/fuzz/spec_fuzzer.cpp: reshape(x, [M * N]) lowered with M fixed to 0 threw
  // "modulus by zero in a size expression"
  IntExpr N = IntExpr::var("N");
  View v;
  CHECK_NOTHROW(v = views::reshape({IntExpr(0), N}, {IntExpr(0) * N}));
  CHECK(v.shape == Shape{IntExpr(0)});
  CHECK_NOTHROW(v = views::reshape({IntExpr(2), IntExpr(0), IntExpr(3)}, {IntExpr(6), IntExpr(0)}));
  CHECK(v.shape.size() == 2);
  CHECK(v.index.size() == 3);
}

namespace {

/** Checks that `inverse` undoes `v` at every element of the view under every binding. */
void check_inverse(const View& v, const std::vector<IntExpr>& inverse, const Shape& source,
                   const std::vector<Env>& bindings) {
  for (const Env& env : bindings) {
    Index dims;
    for (const IntExpr& d : v.shape)
      dims.push_back(d.eval(env));
    for (const Index& at : all_indices(dims)) {
      std::optional<Index> src = apply(v, at, env);
      REQUIRE(src);
      Env back = env;
      for (size_t j = 0; j < src->size(); ++j) {
        CHECK((*src)[j] >= 0);
        CHECK((*src)[j] < source[j].eval(env));
        back["%" + std::to_string(j)] = (*src)[j];
      }
      Index again;
      for (const IntExpr& e : inverse)
        again.push_back(e.eval(back));
      CHECK(again == at);
    }
  }
}

}  // namespace

TEST_CASE("view: reshapes and permutes invert to affine maps; other views do not") {
  const IntExpr S = IntExpr::var("S"), C = IntExpr::var("C");
  const IntExpr D = floordiv(C, 4);
  SizeFacts facts;
  facts.assume({mod(C, 4), Relation::eq, 0});
  std::vector<Env> bindings = {{{"S", 3}, {"C", 8}}, {{"S", 1}, {"C", 4}}, {{"S", 2}, {"C", 12}}};

  // Heads merged back: [1, 4, S, D, 1] (a reduction's result) → permute → [S, C].
  Shape out = {1, 4, S, D, 1};
  View heads = View::compose(
      views::reshape({1, S, 4, D}, {S, C}),
      View::compose(views::permute({1, 4, S, D}, {0, 2, 1, 3}), views::reshape(out, {1, 4, S, D})));
  std::optional<std::vector<IntExpr>> inv = invert(heads, out, facts);
  REQUIRE(inv);
  // Affine in the source coordinates: no coordinate inside a division or a modulus.
  for (const IntExpr& e : *inv)
    for (const IntExpr::Term& term : e.terms())
      for (const auto& f : term.factors)
        if (f->kind != IntAtom::Kind::var) CHECK(f->a.str().find('%') == std::string::npos);
  check_inverse(heads, *inv, out, bindings);

  // Heads split: [S, C] → [S, 4, D] → [4, S, D] (a permute of a split).
  View split =
      View::compose(views::permute({S, 4, D}, {1, 0, 2}), views::reshape({S, C}, {S, 4, D}));
  CHECK_FALSE(invert(split, {S, C}, facts));  // %1 * D + %2: its inverse divides

  // A transpose and a three-way merge.
  View t = views::permute({S, C, 3}, {2, 0, 1});
  inv = invert(t, {S, C, 3}, facts);
  REQUIRE(inv);
  check_inverse(t, *inv, {S, C, 3}, bindings);
  View merged = views::reshape({2, S, 3}, {2 * S * 3});
  inv = invert(merged, {2, S, 3}, facts);
  REQUIRE(inv);
  check_inverse(merged, *inv, {2, S, 3}, bindings);

  // Not one-to-one and onto: a slice, a broadcast, a pad, a flip.
  CHECK_FALSE(invert(views::slice({S, C}, 1, 0, D, 1), {S, C}, facts));
  CHECK_FALSE(invert(views::slice({S, C}, 1, D, D, 1), {S, C}, facts));
  CHECK_FALSE(invert(views::expand({S, 1}, {S, C}), {S, 1}, facts));
  CHECK_FALSE(invert(views::pad({S, C}, 1, 1, 0), {S, C}, facts));
  CHECK_FALSE(invert(views::slice({S, C}, 0, S - 1, S, -1), {S, C}, facts));
}

TEST_CASE("view: a reshape that drops or adds leading unit dimensions reads plain indices") {
  // [1, M, N] -> [M, N] (a squeeze, a stacked weight's slice): no mod by M; and back.
  View squeeze = views::reshape({IntExpr(1), M, N}, {M, N});
  REQUIRE(squeeze.index.size() == 3);
  CHECK(squeeze.index[0] == IntExpr(0));
  CHECK(squeeze.index[1] == IntExpr::index(0));
  CHECK(squeeze.index[2] == IntExpr::index(1));
  View unsqueeze = views::reshape({M, N}, {IntExpr(1), IntExpr(1), M, N});
  CHECK(unsqueeze.index[0] == IntExpr::index(2));
  CHECK(unsqueeze.index[1] == IntExpr::index(3));
  // A merge after a unit dimension still splits with a mod where it must.
  View split = views::reshape({IntExpr(1), M, N}, {M * N});
  CHECK(split.index[1].str() == "(%0 / N)");
  CHECK(split.index[2].str() == "(%0 % N)");
}
