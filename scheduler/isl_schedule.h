/** \file
 * The isl steps of scheduling one kernel, on top of the RAII layer of scheduler/isl.h:
 * dependences, schedule computation, tiling and band annotation, and AST generation into the
 * isl-free loop IR of ir/loop_ir.h.
 */
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ir/loop_ir.h"
#include "scheduler/isl.h"
#include "scheduler/transforms.h"

namespace kiln::isl {

/** Memory-based dependences of a sequential program: every ordered pair of instances that touch
 *  one element, at least one of them writing (RAW, WAR, WAW), computed with relation algebra.
 *  They include the transitive pairs that compute_flow's value-based analysis drops; that costs
 *  the scheduler nothing on Kiln's kernels and takes a third of the time (docs/decisions.md).
 *  `order` maps every statement instance to its sequential time. Accesses must already be
 *  intersected with their domains. */
UnionMap compute_dependences(const UnionMap& reads, const UnionMap& writes, const UnionMap& order);

/** isl's schedule for `domain` with `deps` as validity, proximity and coincidence constraints,
 *  under the parameter constraints `context`. */
Schedule compute_schedule(const UnionSet& domain, const UnionMap& deps, const Set& context);

/** The statements of `domains` (one statement each) one after another, each in its own loop
 *  nest over its iterators in order: the program order, with no fusion, tiling or marks. A
 *  fallback that costs isl little work at any rank. */
Schedule sequential_schedule(const std::vector<UnionSet>& domains);

/** `a` then `b`: a sequence node over the two schedules (of disjoint domains). */
Schedule sequence(Schedule a, Schedule b);

/** Tiles every permutable band of `opt.min_depth` or more members (not the point band of a
 *  tiled band): the band becomes a tile band, marked "kiln.tile", over its point band. */
Schedule tile_bands(Schedule schedule, const TileOptions& opt);

/** Splits every band into single members and marks each one with its identity, which the AST
 *  conversion turns into loop annotations (LoopNode::band, member, tile, coincident,
 *  only_reductions): a tile band and its point band share one band number. A member is
 *  `only_reductions` when it is coincident, or when it carries none of `other_deps` (the
 *  dependences but those of each reduction's update on itself) that the members outside it do
 *  not already carry. */
Schedule annotate_members(Schedule schedule, const UnionMap& other_deps);

/** The dependences of `deps` but those from statement `first` to statement `second` for each
 *  pair of `pairs`: a reduction's update on itself (its accumulation into its element) and on
 *  its init. A loop that carries an init's dependence holds the init in its first iteration,
 *  under a guard, which keeps promote_accumulators from promoting it until it hoists the init
 *  before the loop; only a promoted reduction loop runs across vector lanes. */
UnionMap drop_dependences(const UnionMap& deps, const std::vector<std::pair<int, int>>& pairs);

/** isl's AST for `schedule` under `context`. With `deps` and `other_deps` (those but the
 *  reductions', drop_dependences), each for node is annotated with whether the loop itself
 *  carries none of them, from the instances it runs (isl_ast_build_get_schedule): finer than
 *  a band member's coincidence, which covers every loop isl generates for the member (a member
 *  that orders the phases of a row, `j`, `S + j`, `2S + j`, carries the dependences between
 *  them; each phase's loop carries none). convert_ast reads the annotation (parse_for_mark). */
AstNode build_ast(const Schedule& schedule, const Set& context, const UnionMap* deps = nullptr,
                  const UnionMap* other_deps = nullptr);

/** The loop IR of an isl AST. Statements are named "S<k>"; ids listed in `substitutions`
 *  (parameters standing for non-affine sizes) are replaced by their expressions. Loops below an
 *  annotate_members mark carry its annotations; every loop is mapped `serial`. */
LoopNest convert_ast(const AstNode& root, const std::map<std::string, AstExprPtr>& substitutions);

}  // namespace kiln::isl
