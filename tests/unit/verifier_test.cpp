#include <doctest/doctest.h>

#include <functional>
#include <stdexcept>

#include "ir/verifier.h"

using namespace kiln;

namespace {

const IntExpr M = IntExpr::var("M");
const IntExpr N = IntExpr::var("N");

/** A well-formed graph using most ops; node ids are noted for the broken variants below. */
Graph good_graph() {
  Graph g;
  g.name = "good";
  g.size_vars = {"M", "N"};
  NodeId x = g.input("x", DType::f32, {M, N}, false);                        // %0
  NodeId y = g.input("y", DType::f32, {M, N}, true);                         // %1
  NodeId sum = g.binary(Op::add, x, y);                                      // %2
  NodeId lt = g.binary(Op::cmplt, x, y);                                     // %3
  NodeId sel = g.ternary(Op::where, lt, sum, x);                             // %4
  NodeId red = g.reduce(ReduceKind::sum, sel, {1});                          // %5
  NodeId tr = g.view(x, views::permute({M, N}, {1, 0}));                     // %6
  NodeId ints = g.cast(x, DType::i32);                                       // %7
  NodeId shifted = g.binary(Op::shl, ints, ints);                            // %8
  NodeId root = g.unary(Op::sqrt, x);                                        // %9
  NodeId iota = g.index(DType::i32, {M, N}, 1);                              // %10
  NodeId one = g.constant(DType::f32, {M, N}, 1);                            // %11
  NodeId fma = g.ternary(Op::mulacc, x, y, one);                             // %12
  NodeId padded = g.view(x, views::pad({M, N}, 0, 1, 1));                    // %13
  NodeId bits = g.cast(x, DType::i32, true);                                 // %14
  NodeId flags = g.unary(Op::logical_not, g.binary(Op::cmpeq, ints, iota));  // %15, %16
  g.outputs = {{"red", red}, {"tr", tr},         {"shifted", shifted}, {"root", root},
               {"fma", fma}, {"padded", padded}, {"bits", bits},       {"flags", flags}};
  return g;
}

}  // namespace

TEST_CASE("verifier: a well-formed graph passes") {
  Graph g = good_graph();
  CHECK(verify(g).empty());
  CHECK_NOTHROW(verify_or_throw(g));
  CHECK(verify(Graph{}).empty());
}

TEST_CASE("verifier: broken graphs are reported") {
  struct Case {
    const char* what;
    std::function<void(Graph&)> breaks;
    const char* expected;
  };
  const Case cases[] = {
      {"wrong arity", [](Graph& g) { g.nodes[2].operands = {0}; },
       "%2 (add): expects 2 operands, has 1"},
      {"operand after user",
       [](Graph& g) {
         g.nodes[2].operands = {0, 5};
       },
       "%2 (add): operand %5 does not precede its user"},
      {"negative operand",
       [](Graph& g) {
         g.nodes[2].operands = {0, -1};
       },
       "operand %-1"},
      {"shape mismatch in add",
       [](Graph& g) {
         g.binary(Op::add, 0, g.input("z", DType::f32, {N, M}, false));
       },
       "has shape [N, M] but the node has [M, N]"},
      {"dtype mismatch", [](Graph& g) { g.binary(Op::add, 0, 7); },
       "(add): operand dtypes differ: f32 and i32"},
      {"sqrt on int", [](Graph& g) { g.unary(Op::sqrt, 7); },
       "(sqrt): needs a float dtype, got i32"},
      {"idiv on float", [](Graph& g) { g.binary(Op::idiv, 0, 1); }, "needs an integer dtype"},
      {"xor on float", [](Graph& g) { g.binary(Op::bit_xor, 0, 1); }, "integer or bool"},
      {"not on float", [](Graph& g) { g.unary(Op::logical_not, 0); }, "integer or bool"},
      {"scan axis out of range", [](Graph& g) { g.scan(Op::add, 0, 2); },
       "(scan): a scan needs one axis within the operand's rank 2"},
      {"scan by a non-combiner", [](Graph& g) { g.scan(Op::idiv, 7, 0); },
       "scan combiner 'idiv' is not one of add, mul, max, and, or, xor"},
      {"bitwise scan of floats", [](Graph& g) { g.scan(Op::bit_or, 0, 1); },
       "scan combiner 'or' needs an integer or bool dtype, got f32"},
      {"domain outside the rank",
       [](Graph& g) {
         g.reduce(ReduceKind::sum, 0, {1}, {IntExpr::var("%0") - IntExpr::var("%2")});
       },
       "domain bound %0 - %2 >= 0 uses %2, outside the operand's rank 2"},
      {"comparison not bool", [](Graph& g) { g.nodes[3].dtype = DType::f32; },
       "result dtype f32 should be bool"},
      {"add result dtype", [](Graph& g) { g.nodes[2].dtype = DType::f64; },
       "result dtype f64 should be f32"},
      {"where condition",
       [](Graph& g) {
         g.nodes[4].operands = {0, 2, 0};
       },
       "condition has dtype f32"},
      {"mulacc dtype", [](Graph& g) { g.ternary(Op::mulacc, 0, 1, 7); }, "has dtype i32"},
      {"reduce axis out of range", [](Graph& g) { g.nodes[5].axes = {2}; },
       "(reduce): reduce axis 2 is out of range"},
      {"reduce axes repeated",
       [](Graph& g) {
         g.nodes[5].axes = {1, 1};
       },
       "ascending"},
      {"reduce axes descending",
       [](Graph& g) {
         g.nodes[5].axes = {1, 0};
       },
       "ascending"},
      {"reduce shape",
       [](Graph& g) {
         g.nodes[5].shape = {M, N};
       },
       "should be [M, 1]"},
      {"unknown size var", [](Graph& g) { g.size_vars = {"M"}; }, "size variable 'N'"},
      {"view rank", [](Graph& g) { g.nodes[6].view.index.pop_back(); }, "index expressions"},
      {"view shape",
       [](Graph& g) {
         g.nodes[6].shape = {M, N};
       },
       "view shape [N, M]"},
      {"view index variable", [](Graph& g) { g.nodes[6].view.index[0] = IntExpr::index(5); },
       "index variable %5"},
      {"index axis", [](Graph& g) { g.nodes[10].axis = 2; }, "(index): axis 2 is out of range"},
      {"bitcast width", [](Graph& g) { g.cast(0, DType::i16, true); }, "different widths"},
      {"gather float index", [](Graph& g) { g.gather(0, 1, 0); },
       "(gather): index has dtype f32, not an integer"},
      {"gather axis", [](Graph& g) { g.gather(0, 7, 2); }, "(gather): axis 2 is out of range"},
      {"scatter float index", [](Graph& g) { g.scatter(Op::add, 0, 1, 0, 1); },
       "(scatter): index has dtype f32, not an integer"},
      {"scatter axis", [](Graph& g) { g.scatter(Op::add, 0, 7, 0, 2); },
       "(scatter): axis 2 is out of range"},
      {"scatter combiner", [](Graph& g) { g.scatter(Op::bit_or, 0, 7, 0, 1); },
       "(scatter): scatter combiner 'or' is not one of add, mul, max"},
      {"scatter src dtype", [](Graph& g) { g.scatter(Op::add, 0, 7, 7, 1); },
       "(scatter): src has dtype i32 but the node has f32"},
      {"scatter src shape", [](Graph& g) { g.scatter(Op::add, 0, 7, 6, 1); },
       "(scatter): index of shape [M, N] differs from src's [N, M]"},
      {"scatter shape",
       [](Graph& g) {
         NodeId p = g.input("p", DType::i64, {N, N}, false);
         g.scatter(Op::max, 0, p, g.constant(DType::f32, {N, N}, 1), 1);
       },
       "index of shape [N, N] does not fit base [M, N] along axis 1"},
      {"gather shape",
       [](Graph& g) {
         g.gather(0, g.input("p", DType::i32, {M, M}, false), 0);
       },
       "index of shape [M, M] does not fit source [M, N] along axis 0"},
      {"unlisted input", [](Graph& g) { g.inputs.pop_back(); }, "not listed among"},
      {"non-input listed", [](Graph& g) { g.inputs.push_back(2); }, "%2 is not an input node"},
      {"missing output",
       [](Graph& g) {
         g.outputs.push_back({"z", 99});
       },
       "output 'z': %99 does not exist"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Graph g = good_graph();
    c.breaks(g);
    std::vector<std::string> problems = verify(g);
    REQUIRE_FALSE(problems.empty());
    std::string all;
    for (const std::string& p : problems)
      all += p + "\n";
    CAPTURE(all);
    CHECK(all.find(c.expected) != std::string::npos);
    CHECK_THROWS_WITH_AS(verify_or_throw(g), problems.front().c_str(), std::logic_error);
  }
}
