/** \file
 * Stored values computed only where they are read (CPU and GPU backends alike).
 *
 * A value written over a box and read only inside a bound is computed over the bound alone:
 * causal attention's weights `e[b, h, i, j] = exp(score - m)` are elementwise over the square,
 * but the row sum and the weighted sum of values read them only where `j <= i`, so their
 * statement takes that bound as its own and half the exponentials go. The writer then shares
 * its readers' domain, and isl fuses it with the row sum into one loop without guards.
 *
 * It applies to a temporary written by one assignment whose index moves along each of its
 * iterators alone, every read of which (in any kernel) indexes it likewise from a statement
 * with bounds over the read dimensions only, all readers' bounds the same: the bound each
 * reader puts on the buffer's dimensions becomes the writer's. A reader without bounds, a
 * gathered read, an output buffer or readers that disagree leave the writer as it is. Run
 * before tile_bounded.h, which turns readers' bounds into selects.
 */
#pragma once

#include <optional>
#include <vector>

#include "ir/kernel_ir.h"

namespace kiln {

/** Gives each stored value of `plan` that its readers read only inside one bound that bound;
 *  returns how many statements it bounded. */
int restrict_demanded_domains(KernelPlan& plan);

/** The one bound inside which every statement of `plan` that reads buffer `b` reads it, in the
 *  iterators of `writer` (a statement writing `b` whose index moves each dimension by one of its
 *  iterators alone, or holds it constant); nullopt where a reader reads it without bounds, reads
 *  it gathered, or readers disagree, or where nothing reads it. */
std::optional<std::vector<IntExpr>> read_bounds(const KernelPlan& plan, int b,
                                                const Statement& writer);

}  // namespace kiln
