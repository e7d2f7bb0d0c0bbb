/** \file
 * Which key blocks of the fused attention tile the score expression leaves alone, as C
 * conditions on the block's rows and keys (backends/cuda_attention.cpp): whether a score may
 * be finite there (else the block is skipped) and whether every score is surely the where's
 * value inside the domain (then the expression runs unguarded). Interval arithmetic over the
 * domain's affine bounds and a where(condition, value, -inf)'s condition.
 */
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace kiln::softmax_tile {

/** C for whether the score expression of `f` (its max's value, statement node `max_node`) may
 *  be finite somewhere in the tile's rows [N_rlo, N_rhi] and the key block [N_klo, N_khi]: each
 *  bound of the domain may hold (its greatest value is >= 0), and the condition of a
 *  `where(condition, value, -inf)` may be true, by may_be; "1" when nothing is known. */
std::string may_be_finite(const std::set<std::string>& sizes, const Statement& mx,
                          const std::vector<IntExpr>& domain, const LoopNode& tile,
                          const LoopNode& max_node, int rank);

/** C for whether the score expression of `f` is surely what its value says over the rows [rlo,
 *  rhi] and the keys [klo, khi]: every bound of the domain holds (its least value is >= 0) and
 *  the condition of a `where(condition, value, -inf)` is true (may_be false is "0"), by interval
 *  arithmetic as may_be; "0" when that cannot be known. `value_only` tells whether the where's
 *  value may stand for the whole expression there (the condition had a bound). */
std::string sure_inside(const std::set<std::string>& sizes, const Statement& mx,
                        const std::vector<IntExpr>& domain, const LoopNode& max_node, int rank,
                        const std::string& rlo, const std::string& rhi, const std::string& klo,
                        const std::string& khi, bool& value_only);

}  // namespace kiln::softmax_tile
