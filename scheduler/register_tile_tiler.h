/** \file
 * The register tiler behind register_tile.h, one class over three files: the bands, the vector
 * tiles and their packs (register_tile.cpp); the matrix units' and dot-product tiles' nest
 * (register_tile_matrix.cpp); the dot-product form along k of a decode step
 * (register_tile_along_k.cpp). Internal to those files: the pass is register_tile.h.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"
#include "scheduler/map_loops.h"
#include "scheduler/register_tile.h"

namespace kiln::register_tiling {

/** A reduction nest register_tile can tile inside row loop `row`: its loops outermost first
 *  (the reduction loops, then the lane loop) and its statement node. */
struct TileNest {
  std::vector<const LoopNode*> loops;
  const LoopNode* stmt = nullptr;
};

/** The lanes a partial tile of `lanes` at `lane_t` holds: min(lanes, end - lane_t). */
AstExprPtr remaining(const LoopNode& lane, const std::string& lane_t, int64_t lanes);

/** Register-tiles the contractions of one kernel's loop nest (register_tile.h's file comment):
 *  visit() rewrites the nest; the state below is that of the reduction nest being blocked. */
class Tiler {
 public:
  Tiler(const KernelPlan& plan, const Kernel& k, const RegisterTileShape& shape)
      : plan_(plan), kernel_(k), shape_(shape) {}

  /** `n` with the contractions inside it register-tiled (n itself where none is). */
  LoopNodePtr visit(const LoopNodePtr& n);

  /** How many reduction nests visit() tiled. */
  int count() const { return count_; }

 private:
  /** The band from `top` down: `top` and the loops perfectly nested in it that are coincident,
   *  canonical, of step 1 and rectangular (bounds free of the band's iterators), outermost
   *  first, with the reduction nests inside it register-tiled along the row loop that shares
   *  most operands; null when there is none. */
  LoopNodePtr tile(const LoopNodePtr& top);

  /** The statement node of `next`, the nest after reduction nest `t` in the row loop, when the
   *  tiles of `t` can run it as their epilogue: one loop with the bounds of t's lane loop around
   *  an assignment that reads t's buffer only at the element t writes (unmasked), does not read
   *  the buffer it writes, writes one element per instance, and writes nothing t reads. Each
   *  element's instance then runs once, after its tile's last block, reading the final sum; it
   *  moves past no other write of what it reads. Null otherwise. */
  const LoopNode* epilogue(const TileNest& t, const LoopNodePtr& next);

  /** The statement node of `prev`, the nest before reduction nest `t` in the row loop, when it
   *  is t's init: one loop with the bounds of t's lane loop around the reduce_init of t's buffer
   *  (a sum: 0) at the element t updates. The tiles then run it on their elements in their
   *  first block instead of loading what it stored: every element it sets is one of theirs, and
   *  nothing runs in between. Null otherwise. */
  const LoopNode* init_of(const TileNest& t, const LoopNode& prev);

  /** Whether `buffer`, the sums of a tile whose epilogue is epilogue_, is read by nothing but
   *  that epilogue: a temp of this kernel alone that no other statement of it loads. */
  bool sums_only_for_epilogue(int buffer) const;

  /** Tile `alloc` followed by the epilogue over its elements, in the last block only; for a
   *  matrix-unit tile whose buffer only the epilogue reads, the epilogue inside the tile
   *  (LoopNode::sums_to_epilogue). */
  LoopNodePtr with_epilogue(const LoopNodePtr& alloc, const LoopNode& row, const LoopNode& lane);

  /** Whether 8-bit products run on a matrix tile: on the matrix unit (AMX-INT8) or on VNNI
   *  vectors. */
  bool int8() const { return shape_.amx_int8 || shape_.dot_bytes > 0; }
  /** Whether bf16 products run on a matrix tile: on the matrix unit (AMX-BF16) or on vectors
   *  with bf16 pair dot products. */
  bool bf16() const { return shape_.amx_bf16 || shape_.bf16_dot_bytes > 0; }

  /** The bytes of the vectors statement `s`'s matrix tiles run on, 0 for the matrix unit: 8-bit
   *  products summing in i32 on a target with VNNI (or vpmaddwd) and no AMX-INT8, bf16
   *  products summing in f32 on one with AVX512-BF16 and no AMX-BF16. */
  int dot(const Statement& s) const;

  /** Whether `n` is a loop that may be a band member: coincident, canonical, of step 1. */
  static bool candidate(const LoopNode& n) {
    return n.kind == LoopNode::Kind::loop && n.coincident && n.step == 1 && canonical_loop(n);
  }

  /** Copies of `loops` nested in order around `inner`. */
  static LoopNodePtr wrap(const std::vector<LoopNodePtr>& loops, LoopNodePtr inner);

  /** Whether every load of `t`'s statement that moves along the lanes but not along row loop
   *  `row` (what its pack holds) reads a const input: the renderer keeps such packs. */
  bool row_shared_constants(const TileNest& t, const LoopNode& row) const;

  /** The vector lanes of the pack of `t`'s one-loop reduction (`loops`: its k loop, then its
   *  lane loop) when every operand the pack holds (a load that moves along the lanes, not along
   *  row loop `row`) lies contiguous along k and not along the lanes, unmasked and of a float
   *  type the pack holds: its fill then reads vectors along k and transposes them; else 0. */
  int64_t transposed_fill(const TileNest& t, const LoopNode& row,
                          const std::vector<const LoopNode*>& loops) const;

  /** Whether every load of `t`'s statement that moves along the lanes but not along row loop
   *  `row` reads its lanes as neighbours in memory (its last index the lane iterator plus what
   *  does not move with it): a register tile's vector loads take them as they are. */
  bool lanes_contiguous(const TileNest& t, const LoopNode& row) const;

  /** The vector lanes of the dot-product form of `t`'s one-loop reduction inside row loop
   *  `row` (file comment), 0 where it does not apply. It applies where a lane operand (a load
   *  that moves along the lanes, not along the rows) lies along k and not along the lanes, so
   *  that a pack would transpose it; every load that moves along k lies contiguous along it,
   *  unmasked; the value computes across vector lanes along k (tileable_statement with k as
   *  the lanes, the sum f32 or f64); and no bound narrows the tile's rows or lanes. Decided
   *  from the access relations alone: any contraction whose operands lie along k takes it. */
  int64_t along_k(const TileNest& t, const LoopNode& row) const;

  /** Row block `row_c` (of `block_rows` rows) of lane block `lane_c` (of `block_lanes` lanes):
   *  `packed`, its k blocks, where it has more than along_k_rows rows; else, where k is not
   *  empty, the dot-product form of `t` over the whole of k with vectors of `kv` k (file
   *  comment). */
  LoopNodePtr or_along_k(const LoopNode& row, const TileNest& t, int64_t kv,
                         const std::string& lane_c, int64_t block_lanes, const std::string& row_c,
                         LoopNodePtr packed);

  /** The loads of `t`'s statement that move along row loop `row` and along k loop `k` but
   *  not along the lanes (a's rows: what a row pack holds), in evaluation order. */
  std::vector<const ScalarExpr*> row_operands(const TileNest& t, const LoopNode& row,
                                              const LoopNode& k) const;

  /** Whether `load` of `t`'s statement lies contiguous along k loop `k`. */
  bool contiguous_along_k(const ScalarExpr& load, const TileNest& t, const LoopNode& k) const;

  /** Whether the row tiles of `t` inside row loop `row` read their row operands from a pack
   *  (RegisterTileShape::pack_rows): a load of `t`'s statement that moves along `row` and
   *  along k (`loops`' first) but not along the lanes is f16 or bf16, or is not contiguous
   *  along k. Decided from the loads' dtypes and access relations alone. */
  bool packs_rows(const TileNest& t, const LoopNode& row,
                  const std::vector<const LoopNode*>& loops) const;

  /** `tiles` (the lane tiles of the row tile at iterator `row_t`, `rows` rows) inside the pack
   *  of their row operands for one k block (LoopNode::pack_depth with tile_rows): body[0]
   *  fills it, k inner where the first row operand lies along k. */
  LoopNodePtr row_pack(const LoopNode& row, const TileNest& t,
                       const std::vector<const LoopNode*>& loops, const std::string& row_t,
                       int64_t rows, LoopNodePtr tiles);

  /** Prefetch nodes at the front of register tile `tile`'s k loop (of nest `t` in row loop
   *  `row`, its rows from iterator `origin`, `lanes` lanes): one per cache line of the tile's
   *  lanes, for the lane operand's elements prefetch_k k rows ahead (RegisterTileShape). */
  void prefetch_lane_rows(LoopNode& tile, const LoopNode& row, const TileNest& t,
                          const std::vector<const LoopNode*>& loops, const std::string& origin,
                          int64_t lanes);

  /** How many loads of `t`'s statement move along the lanes but not along row loop `row`. */
  int shared_operands(const TileNest& t, const LoopNode& row) const;

  /** Reduction nest `t` inside row loop `row`, in blocks of `depth` iterations of its outer
   *  reduction loop. In each block: the lane tiles of the full width, then masked tiles of one
   *  vector for the lanes left, each holding the row tiles (register tiles, the last of them
   *  with the rows left). */
  LoopNodePtr blocked(const LoopNode& row, const TileNest& t);

  /** The loads a and b of `t`'s update `acc += a * b` (either order) when the matrix unit can
   *  run it: the sum is f32, a and b load bf16 buffers (no gather), a moves along row loop
   *  `row` and not the lanes, b along the lanes and not the rows. */
  std::optional<std::pair<const ScalarExpr*, const ScalarExpr*>> matrix_operands(
      const TileNest& t, const LoopNode& row) const;

  /** Copies of `loops` (outermost first) nested around a copy of stmt node `stmt`. */
  static LoopNodePtr nest(const std::vector<LoopNodePtr>& loops, const LoopNode& stmt);

  /** `loop` restricted to [from, min(from + n, its end)) with step 1. */
  static LoopNodePtr restricted(const LoopNode& loop, const AstExprPtr& from, int64_t n);

  /** Nest `t` on the matrix unit (file comment): lane blocks by row blocks around `block`, the
   *  k blocks, each packing b's block in bf16 k pairs, then per row tile a's rows, then the
   *  32 × 32 matrix tiles of the row tile. On VNNI vectors (dot) the same nest with tiles of
   *  dot_rows rows by dot_vectors vectors, b's block in quads of k. */
  LoopNodePtr matrix_blocked(const LoopNode& row, const TileNest& t,
                             const std::vector<const LoopNode*>& loops,
                             const std::shared_ptr<LoopNode>& block, int64_t kv);

  /** The tiles of `lanes` lanes (masked, a vector at a time, when `partial`: the lanes past the
   *  last full tile) in the lane block of `block` lanes from iterator `lane_c`, for one k block:
   *  a pack of b's panel for all of them, filled lane tile by lane tile, then the row tiles,
   *  each sweeping the lane tiles. */
  LoopNodePtr lane_block(const LoopNode& row, const TileNest& t,
                         const std::vector<const LoopNode*>& loops, const std::string& lane_c,
                         int64_t block, const std::string& row_c, int64_t block_rows, int64_t lanes,
                         bool partial);

  /** A register tile of `n` rows from row `origin` (`count` of them existing, all when null) by
   *  `lanes` lanes from the lane tile loop's iterator (min(lanes, end - jt) of them when
   *  `partial`), for nest `t` whose loops are `loops` (the outer reduction loop over one block). */
  LoopNodePtr tile_alloc(const LoopNode& row, const TileNest& t,
                         const std::vector<const LoopNode*>& loops, int64_t lanes, bool partial,
                         int64_t n, const std::string& origin, const AstExprPtr& count);

  /** `for (jt = start; jt < end - (lanes - 1); jt += lanes)` over the register tiles of
   *  `rows` x `lanes` along row loop `row` (the last with the rows left), for nest `t` whose
   *  loops are `loops` (the outer reduction loop over one block). A `partial` tile is masked:
   *  `for (jt = start; jt < end; jt += lanes)`, its tiles hold min(lanes, end - jt) lanes.
   *  For nests whose rows share no packed operand (lane_block packs the others). */
  LoopNodePtr lane_tiles(const LoopNode& row, const TileNest& t,
                         const std::vector<const LoopNode*>& loops, const AstExprPtr& start,
                         int64_t lanes, bool partial);

  const KernelPlan& plan_;
  const Kernel& kernel_;
  RegisterTileShape shape_;
  int count_ = 0, packs_ = 0;
  bool matrix_ = false;          ///< tile_alloc makes matrix-unit tiles
  bool prefetch_lanes_ = false;  ///< ... whose k loops prefetch the lane operand ahead
  int dot_bytes_ = 0;  ///< ... on vectors of this many bytes when > 0 (LoopNode::dot_bytes)
  DotSigns dot_signs_ = DotSigns::unsigned_signed;  ///< ... with these operand signs
  const LoopNode* epilogue_ = nullptr;  ///< the epilogue of the nest being blocked, or null
  std::string epilogue_lane_;           ///< its lane loop's iterator
  AstExprPtr last_block_;               ///< true in the last block of the nest being blocked
  AstExprPtr first_block_;              ///< true in its first block
  const LoopNode* init_ = nullptr;      ///< the init folded into its tiles, or null
  std::string init_lane_;               ///< the init's lane loop iterator
};

}  // namespace kiln::register_tiling
