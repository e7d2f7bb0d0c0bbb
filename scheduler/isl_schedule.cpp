#include "scheduler/isl_schedule.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "scheduler/isl_internal.h"

namespace kiln::isl {

UnionMap compute_dependences(const UnionMap& reads, const UnionMap& writes, const UnionMap& order) {
  isl_ctx* ctx = isl_union_map_get_ctx(reads.keep());
  // Pairs of instances touching one element, at least one of them writing: W.(R u W)^-1 holds
  // RAW and WAW, R.W^-1 holds WAR.
  isl_union_map* accesses =
      isl_union_map_union(isl_union_map_copy(reads.keep()), isl_union_map_copy(writes.keep()));
  isl_union_map* from_writes =
      isl_union_map_apply_range(isl_union_map_copy(writes.keep()), isl_union_map_reverse(accesses));
  isl_union_map* from_reads = isl_union_map_apply_range(
      isl_union_map_copy(reads.keep()), isl_union_map_reverse(isl_union_map_copy(writes.keep())));
  isl_union_map* pairs = isl_union_map_union(from_writes, from_reads);
  // ... where the source runs first in the sequential order.
  isl_union_map* earlier = isl_union_map_lex_lt_union_map(isl_union_map_copy(order.keep()),
                                                          isl_union_map_copy(order.keep()));
  return give(ctx, isl_union_map_intersect(pairs, earlier), "dependences");
}

namespace {

isl_schedule* schedule_once(const UnionSet& domain, const UnionMap& deps, const Set& context) {
  isl_schedule_constraints* sc =
      isl_schedule_constraints_on_domain(isl_union_set_copy(domain.keep()));
  sc = isl_schedule_constraints_set_context(sc, isl_set_copy(context.keep()));
  sc = isl_schedule_constraints_set_validity(sc, isl_union_map_copy(deps.keep()));
  sc = isl_schedule_constraints_set_proximity(sc, isl_union_map_copy(deps.keep()));
  sc = isl_schedule_constraints_set_coincidence(sc, isl_union_map_copy(deps.keep()));
  return isl_schedule_constraints_compute_schedule(sc);
}

/** Whether an affine expression moves along two or more of its statement's iterators. */
isl_stat count_skew(isl_set* set, isl_aff* aff, void* user) {
  isl_set_free(set);
  int moving = 0;
  isl_size n = isl_aff_dim(aff, isl_dim_in);
  for (int i = 0; i < n; ++i) {
    isl_val* c = isl_aff_get_coefficient_val(aff, isl_dim_in, i);
    if (!isl_val_is_zero(c)) ++moving;
    isl_val_free(c);
  }
  isl_aff_free(aff);
  if (moving >= 2) *static_cast<bool*>(user) = true;
  return isl_stat_ok;
}

isl_stat map_skewed(isl_map* map, void* user) {
  isl_pw_multi_aff* f = isl_pw_multi_aff_from_map(map);
  isl_size n = isl_pw_multi_aff_dim(f, isl_dim_out);
  for (int d = 0; d < n && !*static_cast<bool*>(user); ++d) {
    isl_pw_aff* member = isl_pw_multi_aff_get_at(f, d);
    isl_pw_aff_foreach_piece(member, count_skew, user);
    isl_pw_aff_free(member);
  }
  isl_pw_multi_aff_free(f);
  return isl_stat_ok;
}

/** Whether some loop of `s` runs along a combination of a statement's iterators (a skew:
 *  `c = i + j`) rather than one of them. */
bool skewed(isl_schedule* s) {
  bool found = false;
  isl_union_map* map = isl_schedule_get_map(s);
  isl_union_map_foreach_map(map, map_skewed, &found);
  isl_union_map_free(map);
  return found;
}

}  // namespace

Schedule compute_schedule(const UnionSet& domain, const UnionMap& deps, const Set& context) {
  isl_ctx* ctx = isl_union_set_get_ctx(domain.keep());
  isl_schedule* s = schedule_once(domain, deps, context);
  if (s && skewed(s)) {
    // One ILP over the whole component fuses phases that a reduction separates (a row's
    // bounded max, then the exponentials that read it) by skewing the later ones past the
    // first (`for c < L + i: if (c <= i) max(i, c); if (c >= i) exp(i, c - i)`): one serial
    // loop with guards, no vector lanes. isl's per-SCC scheduling with clustering keeps
    // such phases in loops of their own; taken when it finds no skew (docs/decisions.md).
    isl_options_set_schedule_whole_component(ctx, 0);
    isl_schedule* apart = schedule_once(domain, deps, context);
    isl_options_set_schedule_whole_component(ctx, 1);
    if (apart && !skewed(apart)) {
      isl_schedule_free(s);
      s = apart;
    } else {
      isl_schedule_free(apart);
    }
  }
  return give(ctx, s, "compute_schedule");
}

Schedule sequential_schedule(const std::vector<UnionSet>& domains) {
  isl_schedule* out = nullptr;
  isl_ctx* ctx = nullptr;
  for (const UnionSet& d : domains) {
    ctx = isl_union_set_get_ctx(d.keep());
    isl_schedule* s = isl_schedule_from_domain(isl_union_set_copy(d.keep()));
    isl_set* set = isl_set_from_union_set(isl_union_set_copy(d.keep()));
    if (isl_set_dim(set, isl_dim_set) > 0) {
      // { S[i] -> [i] }: the iterators in order.
      isl_map* order = isl_map_reset_tuple_id(isl_set_identity(set), isl_dim_out);
      s = isl_schedule_insert_partial_schedule(
          s, isl_multi_union_pw_aff_from_union_map(isl_union_map_from_map(order)));
    } else {
      isl_set_free(set);
    }
    out = out ? isl_schedule_sequence(out, s) : s;
  }
  return give(ctx, out, "sequential schedule");
}

Schedule sequence(Schedule a, Schedule b) {
  isl_ctx* ctx = isl_schedule_get_ctx(a.keep());
  return give(ctx, isl_schedule_sequence(std::move(a).take(), std::move(b).take()), "sequence");
}

namespace {

int64_t tile_size(const TileOptions& opt, int k) {
  if (opt.sizes.empty()) return 0;
  return opt.sizes[std::min<size_t>(k, opt.sizes.size() - 1)];
}

/** True for a permutable band of depth >= min_depth with a nonzero tile size for every
 *  member. */
bool tileable(isl_schedule_node* node, const TileOptions& opt) {
  isl_size n = isl_schedule_node_band_n_member(node);
  if (n < std::max(2, opt.min_depth) ||
      isl_schedule_node_band_get_permutable(node) != isl_bool_true)
    return false;
  for (int k = 0; k < n; ++k)
    if (tile_size(opt, k) <= 0) return false;
  return true;
}

constexpr const char* kTileMark = "kiln.tile";
constexpr const char* kMemberMark = "kiln.member";

isl_schedule_node* insert_mark(isl_schedule_node* node, const std::string& name) {
  isl_id* id = isl_id_alloc(isl_schedule_node_get_ctx(node), name.c_str(), nullptr);
  return isl_schedule_node_child(isl_schedule_node_insert_mark(node, id), 0);
}

bool is_mark(isl_schedule_node* node, const char* name) {
  if (isl_schedule_node_get_type(node) != isl_schedule_node_mark) return false;
  isl_id* id = isl_schedule_node_mark_get_id(node);
  bool same = std::string(isl_id_get_name(id)) == name;
  isl_id_free(id);
  return same;
}

/** Applies `visit` to every band, outermost first, and returns at `node`'s place. `visit`
 *  returns the node it leaves the band at (it may insert marks above it) and how many levels
 *  below the band the walk continues. */
template <class Visit>
isl_schedule_node* walk_bands(isl_schedule_node* node, Visit& visit) {
  if (!node) return node;
  int levels = 0;
  if (isl_schedule_node_get_type(node) == isl_schedule_node_band) {
    auto [band, below] = visit(node);
    node = band;
    for (int k = 0; k < below; ++k) {
      node = isl_schedule_node_child(node, 0);
      ++levels;
    }
    // `node` is the last band member visited; its child is the subtree below the band.
    if (isl_schedule_node_has_children(node) != isl_bool_true) {
      for (int k = 0; k < levels; ++k)
        node = isl_schedule_node_parent(node);
      return node;
    }
    node = isl_schedule_node_child(node, 0);
    ++levels;
    node = walk_bands(node, visit);
  } else {
    isl_size n = isl_schedule_node_n_children(node);
    for (isl_size i = 0; i < n; ++i) {
      node = isl_schedule_node_child(node, i);
      node = walk_bands(node, visit);
      node = isl_schedule_node_parent(node);
    }
  }
  for (int k = 0; k < levels; ++k)
    node = isl_schedule_node_parent(node);
  return node;
}

Schedule map_root(Schedule schedule, const char* what,
                  const std::function<isl_schedule_node*(isl_schedule_node*)>& f) {
  isl_ctx* ctx = isl_schedule_get_ctx(schedule.keep());
  isl_schedule_node* root = f(isl_schedule_get_root(schedule.keep()));
  isl_schedule* result = root ? isl_schedule_node_get_schedule(root) : nullptr;
  isl_schedule_node_free(root);
  return give(ctx, result, what);
}

}  // namespace

Schedule tile_bands(Schedule schedule, const TileOptions& opt) {
  // A tiled band is left as mark -> tile band -> point band; the walk resumes below the point
  // band, so the point band is never tiled again.
  auto visit = [&](isl_schedule_node* band) -> std::pair<isl_schedule_node*, int> {
    if (!tileable(band, opt)) return {band, 0};
    isl_size n = isl_schedule_node_band_n_member(band);
    isl_multi_val* sizes = isl_multi_val_zero(isl_schedule_node_band_get_space(band));
    for (int k = 0; k < n; ++k)
      sizes = isl_multi_val_set_val(
          sizes, k, isl_val_int_from_si(isl_schedule_node_get_ctx(band), tile_size(opt, k)));
    band = isl_schedule_node_band_tile(band, sizes);
    band = insert_mark(band, kTileMark);
    return {isl_schedule_node_parent(band), 2};
  };
  return map_root(std::move(schedule), "tiling",
                  [&](isl_schedule_node* root) { return walk_bands(root, visit); });
}

UnionMap drop_dependences(const UnionMap& deps, const std::vector<std::pair<int, int>>& pairs) {
  isl_ctx* ctx = isl_union_map_get_ctx(deps.keep());
  std::set<std::pair<std::string, std::string>> names;
  for (const auto& [a, b] : pairs)
    names.insert({"S" + std::to_string(a), "S" + std::to_string(b)});
  isl_union_map* out = isl_union_map_empty(isl_union_map_get_space(deps.keep()));
  isl_map_list* maps = isl_union_map_get_map_list(deps.keep());
  isl_size n = isl_map_list_size(maps);
  for (isl_size i = 0; i < n; ++i) {
    isl_map* m = isl_map_list_get_at(maps, i);
    const char* in = isl_map_get_tuple_name(m, isl_dim_in);
    const char* to = isl_map_get_tuple_name(m, isl_dim_out);
    if (in && to && names.count({in, to}))
      isl_map_free(m);
    else
      out = isl_union_map_add_map(out, m);
  }
  isl_map_list_free(maps);
  return give(ctx, out, "dependences without reductions");
}

namespace {

/** { a -> b : f(a) = f(b) } for a schedule `f` (taken). */
isl_union_map* same_image(isl_union_map* f) {
  isl_union_map* reversed = isl_union_map_reverse(isl_union_map_copy(f));
  return isl_union_map_apply_range(f, reversed);
}

/** Whether the single-member band `band` carries none of `deps` that its outer members leave
 *  uncarried: every pair of instances below it with equal outer schedule gets equal values. */
bool carries_none(isl_schedule_node* band, const UnionMap& deps) {
  isl_union_set* domain = isl_schedule_node_get_domain(band);
  isl_union_map* d = isl_union_map_intersect_range(
      isl_union_map_intersect_domain(isl_union_map_copy(deps.keep()), isl_union_set_copy(domain)),
      domain);
  d = isl_union_map_intersect(d, same_image(isl_schedule_node_get_prefix_schedule_union_map(band)));
  isl_union_map* same_member =
      same_image(isl_schedule_node_band_get_partial_schedule_union_map(band));
  isl_bool subset = isl_union_map_is_subset(d, same_member);
  isl_union_map_free(d);
  isl_union_map_free(same_member);
  return subset == isl_bool_true;
}

}  // namespace

Schedule annotate_members(Schedule schedule, const UnionMap& other_deps) {
  int next_band = 0;
  bool point_band = false;  // the band below a tile band: same number, not a tile
  auto visit = [&](isl_schedule_node* band) -> std::pair<isl_schedule_node*, int> {
    isl_schedule_node* parent = isl_schedule_node_parent(isl_schedule_node_copy(band));
    bool tile = parent && is_mark(parent, kTileMark);
    isl_schedule_node_free(parent);
    int id = point_band ? next_band - 1 : next_band++;
    point_band = tile;
    isl_size n = isl_schedule_node_band_n_member(band);
    int levels = 0;
    for (int k = 0; k < n; ++k) {
      if (k + 1 < n) band = isl_schedule_node_band_split(band, 1);
      bool coincident = isl_schedule_node_band_member_get_coincident(band, 0) == isl_bool_true;
      bool only_reductions = coincident || carries_none(band, other_deps);
      band = insert_mark(band, std::string(kMemberMark) + " " + std::to_string(id) + " " +
                                   std::to_string(k) + " " + (tile ? "1" : "0") + " " +
                                   (coincident ? "1" : "0") + " " + (only_reductions ? "1" : "0"));
      ++levels;
      if (k + 1 < n) {
        band = isl_schedule_node_child(band, 0);
        ++levels;
      }
    }
    // Leave the walk at the last member: back up to where the band was, then down again.
    for (int k = 0; k < levels; ++k)
      band = isl_schedule_node_parent(band);
    return {band, levels};
  };
  return map_root(std::move(schedule), "band annotation",
                  [&](isl_schedule_node* root) { return walk_bands(root, visit); });
}

bool parse_member_mark(const std::string& mark, MemberMark& out) {
  if (mark.rfind(kMemberMark, 0) != 0) return false;
  int t = 0, c = 0, r = 0;
  if (std::sscanf(mark.c_str() + std::strlen(kMemberMark), " %d %d %d %d %d", &out.band,
                  &out.member, &t, &c, &r) != 5)
    return false;
  out.tile = t;
  out.coincident = c;
  out.only_reductions = r;
  return true;
}

namespace {

/** Whether the loop the AST `build` is about to generate carries none of `deps` (taken): no
 *  pair of the statement instances it runs whose outer schedule dimensions are equal differs
 *  in the loop's dimension. isl_bool_error when isl fails (its operation limit). */
isl_bool carries_nothing(isl_ast_build* build, isl_union_map* deps) {
  isl_union_map* sched = isl_ast_build_get_schedule(build);
  isl_space* space = isl_ast_build_get_schedule_space(build);
  isl_size n = isl_space_dim(space, isl_dim_out);
  isl_space_free(space);
  deps = isl_union_map_apply_range(deps, isl_union_map_copy(sched));
  deps = isl_union_map_apply_domain(deps, sched);
  if (n < 1 || !deps) {
    isl_union_map_free(deps);
    return n < 1 ? isl_bool_false : isl_bool_error;
  }
  isl_bool empty = isl_union_map_is_empty(deps);
  if (empty != isl_bool_false) {
    isl_union_map_free(deps);
    return empty;
  }
  // Every pair maps into the one schedule space of the build.
  if (isl_union_map_n_map(deps) != 1) {
    isl_union_map_free(deps);
    return isl_bool_false;
  }
  isl_map* pairs = isl_map_from_union_map(deps);
  for (isl_size d = 0; d + 1 < n; ++d)
    pairs = isl_map_equate(pairs, isl_dim_in, d, isl_dim_out, d);
  isl_map* same = isl_map_universe(isl_map_get_space(pairs));
  same = isl_map_equate(same, isl_dim_in, n - 1, isl_dim_out, n - 1);
  isl_bool subset = isl_map_is_subset(pairs, same);
  isl_map_free(pairs);
  isl_map_free(same);
  return subset;
}

/** The dependences build_ast checks each loop against. */
struct LoopDeps {
  const UnionMap* all;
  const UnionMap* other;
};

/** isl's before_each_for callback: names the loop "kiln.for P R", P whether it carries none
 *  of the dependences, R none but reductions' (LoopNode::coincident and only_reductions). */
isl_id* loop_legality(isl_ast_build* build, void* user) {
  const LoopDeps& deps = *static_cast<const LoopDeps*>(user);
  isl_bool parallel = carries_nothing(build, isl_union_map_copy(deps.all->keep()));
  isl_bool only = parallel == isl_bool_true
                      ? isl_bool_true
                      : carries_nothing(build, isl_union_map_copy(deps.other->keep()));
  if (parallel == isl_bool_error || only == isl_bool_error) return nullptr;
  std::string name = std::string(kForMark) + " " + (parallel == isl_bool_true ? "1" : "0") + " " +
                     (only == isl_bool_true ? "1" : "0");
  return isl_id_alloc(isl_ast_build_get_ctx(build), name.c_str(), nullptr);
}

}  // namespace

bool parse_for_mark(const std::string& mark, bool& coincident, bool& only_reductions) {
  if (mark.rfind(kForMark, 0) != 0) return false;
  int c = 0, r = 0;
  if (std::sscanf(mark.c_str() + std::strlen(kForMark), " %d %d", &c, &r) != 2) return false;
  coincident = c;
  only_reductions = r;
  return true;
}

AstNode build_ast(const Schedule& schedule, const Set& context, const UnionMap* deps,
                  const UnionMap* other_deps) {
  isl_ctx* ctx = isl_schedule_get_ctx(schedule.keep());
  isl_ast_build* build = isl_ast_build_from_context(isl_set_copy(context.keep()));
  LoopDeps loop_deps{deps, other_deps};
  if (deps && other_deps)
    build = isl_ast_build_set_before_each_for(build, loop_legality, &loop_deps);
  isl_ast_node* ast = isl_ast_build_node_from_schedule(build, isl_schedule_copy(schedule.keep()));
  isl_ast_build_free(build);
  return give(ctx, ast, "AST generation");
}

}  // namespace kiln::isl
