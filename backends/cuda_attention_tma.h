/** \file
 * The TMA copies of an online-softmax tile's keys and values (cuda_attention.cpp; the tile's
 * staged operands, scheduler/softmax_tile.h plan_softmax_tma): per key block, thread 0 issues
 * one box of 64 keys by 64 elements per 128-byte panel of a stage (k: one panel per 64 of the
 * head, v: one per 64 lanes), which lands swizzled as the tile's warpgroup products read it,
 * and arrives on the stage's "full" mbarrier with the bytes to expect.
 */
#pragma once

#include <cstdint>
#include <string>

#include "ir/loop_ir.h"

namespace kiln::softmax_tile {

/** Where the boxes go and what they read: the tile's locals `<name>_kc` and `<name>_vc` (the
 *  boxes' coordinates at key 0, innermost first), `<name>_sk` and `<name>_sv` (the stages),
 *  `<name>_D` (the head), the tensor maps from `first_map` on (k's, then v's). */
struct TmaStages {
  std::string name;
  int first_map = 0;
  int64_t lanes = 64;         ///< lanes of v per block: lanes / 64 boxes a stage
  int64_t k_stage_bytes = 0;  ///< bytes between two stages of k
  int64_t v_stage_bytes = 0;  ///< of v
};

/** Thread 0's copies of the key block starting at `j` into stage `stage` (C expressions), the
 *  stage's full barrier expecting their bytes (k's second box only where the head is longer
 *  than 64), at indent `in`. `n` is the tile (its staged operands: k, v). It reads the tile's
 *  shared addresses of the stages (`<name>_ak`, `<name>_av`) and of the full barriers
 *  (`<name>_fbar`, 8 bytes apart). */
std::string tma_issue(const LoopNode& n, const TmaStages& t, const std::string& j,
                      const std::string& stage, const std::string& in);

}  // namespace kiln::softmax_tile
