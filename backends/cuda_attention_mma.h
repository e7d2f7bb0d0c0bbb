/** \file
 * The tensor-core products of the online-softmax tile (cuda_attention.cpp): the scores q·kᵀ of
 * a chunk of the head and the weights times the values of a key block, as mma.sync m16n8k16
 * steps of each warp's 16 rows (operands through ldmatrix) or, where the schedule chose
 * warpgroup products (an sm_90a target), as wgmma steps of each warpgroup's 64 rows from
 * swizzled shared memory. They print CUDA C into the tile's key-block loop, reading and writing
 * the tile's locals `<tile>_<name>` that render_softmax_tile declares.
 */
#pragma once

#include <cstdint>
#include <string>

#include "ir/mma.h"

namespace kiln::softmax_tile {

/** The block tile: rows x lanes of the output (lanes 64 or 128: the tile shape's, chosen by the
 *  schedule from the head), keys per block, the head's elements staged per chunk (one chunk up
 *  to 128), the padding of a shared-memory row (16 bytes: ldmatrix's eight row addresses then
 *  fall in distinct banks). */
constexpr int64_t kRows = 128, kKeys = 64, kHead = 128, kPad = 8;

/** What the products of one tile need: its locals' prefix, the operands' type, its lanes and,
 *  for warpgroup products, the two instructions. */
struct TileProducts {
  std::string name;                           ///< the tile's name: its locals are name_x
  std::string kind;                           ///< the 16-bit operands' type: "f16" or "bf16"
  int64_t lanes = 64;                         ///< lanes of the output a block computes
  const MmaInstruction* score_mma = nullptr;  ///< the scores' wgmma, null for mma.sync
  const MmaInstruction* value_mma = nullptr;  ///< the weights times the values' wgmma
  /** Whether the chunk is deeper than 64 (the wgmma steps: 8, else 4): C text, "1" or "0". */
  std::string deep;
};

/** `<name>_D > x` (the tile's head, k's last extent, above x), or "1" or "0" where the heads
 *  the kernel is launched at (LoopNode::head_min, head_max; head_max 0: any) decide it. */
std::string head_above(const std::string& name, int64_t head_min, int64_t head_max, int64_t x);

/** The loops over a thread's accumulator elements of tile `name`: `tiles` tiles of 8 columns
 *  (`<name>_t`), 4 elements each (`<name>_e`: rows g and g + 8, two columns), around `body`, at
 *  indent `pad`. */
std::string each_element(const std::string& name, const std::string& body, const std::string& pad,
                         int64_t tiles);

/** Element (`<name>_t`, `<name>_e`)'s row in the tile (C text): warp w's 16 rows from r0,
 *  lane q's group q / 4, and 8 on for elements 2 and 3. */
std::string element_row(const std::string& name);

/** Its column within the block of keys or lanes: 8 per tile, lane q's pair 2 (q % 4). */
std::string element_col(const std::string& name);

/** `cond ? a : b` as C text, or a or b alone where `cond` is "1" or "0" (head_above's). */
std::string head_choice(const std::string& cond, const std::string& a, const std::string& b);

/** The scores s[8][4] of the warp's rows by the block's keys, added over one chunk of dk head
 *  elements (the inside of the chunk loop, at indent `in3`): from q and the key stage at
 *  N_aq and N_kst. */
std::string score_products(const TileProducts& p, const std::string& in3);

/** The block's weights (in s) times its values (the stage at N_vst), added to the output
 *  accumulators o, key steps of 16 at indent `in2`. */
std::string value_products(const TileProducts& p, const std::string& in2);

}  // namespace kiln::softmax_tile
