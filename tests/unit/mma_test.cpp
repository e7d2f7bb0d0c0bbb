// The tensor-core instruction table (ir/mma.h): each fragment layout places every element of
// its matrix exactly once over the warp's 32 threads (a warpgroup's 128 for wgmma), and the
// printed coordinate agrees with the computed one.
#include <doctest/doctest.h>

#include <set>
#include <utility>

#include "ir/mma.h"

namespace kiln {

namespace {

/** Checks that `f` covers its rows × cols once: `threads` × elements positions, all distinct
 *  and in range. */
void check_covers(const FragmentLayout& f, int threads = 32) {
  std::set<std::pair<int, int>> seen;
  for (int q = 0; q < threads; ++q)
    for (int e = 0; e < f.elements; ++e) {
      const int r = fragment_coordinate(f.row, q, e), c = fragment_coordinate(f.col, q, e);
      CHECK(r >= 0);
      CHECK(r < f.rows);
      CHECK(c >= 0);
      CHECK(c < f.cols);
      seen.insert({r, c});
    }
  CHECK(seen.size() == static_cast<size_t>(f.rows * f.cols));
  CHECK(threads * f.elements == f.rows * f.cols);
}

}  // namespace

TEST_CASE("mma: every fragment layout of the table covers its matrix once") {
  REQUIRE_FALSE(mma_instructions().empty());
  for (const MmaInstruction& i : mma_instructions()) {
    CAPTURE(i.name);
    CHECK(i.fc.rows == i.m);
    CHECK(i.fc.cols == i.n);
    CHECK(i.acc_rows * i.acc_cols == i.fc.elements);
    if (i.warpgroup) {  // a and b from shared memory: only the accumulator is in registers
      CHECK(i.fa.elements == 0);
      CHECK(i.fb.elements == 0);
      CHECK(i.min_sm >= 90);
      check_covers(i.fc, 128);
      for (int e = 0; e < i.fc.elements; ++e)
        CHECK(e / i.acc_cols == 0);
      continue;
    }
    CHECK(i.fa.rows == i.m);
    CHECK(i.fa.cols == i.k);
    CHECK(i.fb.rows == i.k);
    CHECK(i.fb.cols == i.n);
    CHECK(i.fc.rows == i.m);
    CHECK(i.fc.cols == i.n);
    CHECK(i.acc_rows * i.acc_cols == i.fc.elements);
    check_covers(i.fa);
    check_covers(i.fb);
    check_covers(i.fc);
    // An accumulator element's block position (e / acc_cols, e % acc_cols) moves its row and
    // column as the layout says: a thread's elements tile as a matrix.
    for (int e = 0; e < i.fc.elements; ++e) {
      CHECK(fragment_coordinate(i.fc.row, 0, e) / 8 == e / i.acc_cols);
      CHECK(fragment_coordinate(i.fc.col, 0, e) % 2 == e % i.acc_cols);
    }
  }
}

TEST_CASE("mma: the PTX ISA's m16n8k16 positions, and the printed coordinates") {
  const MmaInstruction* f16 = find_mma(DType::f16, DType::f16, DType::f32);
  REQUIRE(f16 != nullptr);
  CHECK(f16->ptx == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
  const MmaInstruction* bf16 = find_mma(DType::bf16, DType::bf16, DType::f32);
  REQUIRE(bf16 != nullptr);
  CHECK(bf16->ptx == "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  CHECK(find_mma(DType::f32, DType::f32, DType::f32) == nullptr);
  CHECK(find_mma(DType::f16, DType::bf16, DType::f32) == nullptr);
  // Thread 6 (group 1, index 2 in its group): a's a5 is row 1, column 2·2 + 1 + 8 = 13; b's b3
  // is row 2·2 + 1 + 8 = 13, column 1; the accumulator's c2 is row 9, column 4.
  CHECK(fragment_coordinate(f16->fa.row, 6, 5) == 1);
  CHECK(fragment_coordinate(f16->fa.col, 6, 5) == 13);
  CHECK(fragment_coordinate(f16->fb.row, 6, 3) == 13);
  CHECK(fragment_coordinate(f16->fb.col, 6, 3) == 1);
  CHECK(fragment_coordinate(f16->fc.row, 6, 2) == 9);
  CHECK(fragment_coordinate(f16->fc.col, 6, 2) == 4);
  CHECK(fragment_coordinate(f16->fc.row, "q", "e") == "(((q / 4) % 8) + ((e / 2) % 2) * 8)");
  CHECK(fragment_coordinate(f16->fc.col, "t % 32", "e") == "(((t % 32) % 4) * 2 + (e % 2))");
}

TEST_CASE("mma: the PTX ISA's wgmma m64nNk16 accumulator positions") {
  const MmaInstruction* w = find_warpgroup_mma(DType::f16, DType::f16, DType::f32, 256);
  REQUIRE(w != nullptr);
  CHECK(w->ptx == "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16");
  CHECK(w->fc.elements == 128);
  REQUIRE(find_warpgroup_mma(DType::bf16, DType::bf16, DType::f32, 128) != nullptr);
  CHECK(find_warpgroup_mma(DType::f16, DType::f16, DType::f32, 96) == nullptr);
  CHECK(find_mma(DType::f16, DType::f16, DType::f32)->warpgroup == false);
  // Thread 37 of the group (warp 1, lane 5: group 1, index 1): d6 is row 16 + 1 + 8 = 25,
  // column 8 + 2 + 0 = 10; d127 is row 16 + 1 + 8 = 25, column 8·31 + 2 + 1 = 251.
  CHECK(fragment_coordinate(w->fc.row, 37, 6) == 25);
  CHECK(fragment_coordinate(w->fc.col, 37, 6) == 10);
  CHECK(fragment_coordinate(w->fc.row, 37, 127) == 25);
  CHECK(fragment_coordinate(w->fc.col, 37, 127) == 251);
}

}  // namespace kiln
