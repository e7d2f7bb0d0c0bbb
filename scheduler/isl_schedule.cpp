#include "scheduler/isl_schedule.h"
#include <algorithm>
#include <cstdlib>

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

Schedule compute_schedule(const UnionSet& domain, const UnionMap& deps, const Set& context) {
  isl_ctx* ctx = isl_union_set_get_ctx(domain.keep());
  isl_schedule_constraints* sc =
      isl_schedule_constraints_on_domain(isl_union_set_copy(domain.keep()));
  sc = isl_schedule_constraints_set_context(sc, isl_set_copy(context.keep()));
  sc = isl_schedule_constraints_set_validity(sc, isl_union_map_copy(deps.keep()));
  sc = isl_schedule_constraints_set_proximity(sc, isl_union_map_copy(deps.keep()));
  sc = isl_schedule_constraints_set_coincidence(sc, isl_union_map_copy(deps.keep()));
  return give(ctx, isl_schedule_constraints_compute_schedule(sc), "compute_schedule");
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

bool has_band_below(isl_schedule_node* node) {
  isl_size n = isl_schedule_node_n_children(node);
  for (isl_size i = 0; i < n; ++i) {
    isl_schedule_node* child = isl_schedule_node_get_child(node, i);
    bool band =
        isl_schedule_node_get_type(child) == isl_schedule_node_band || has_band_below(child);
    isl_schedule_node_free(child);
    if (band) return true;
  }
  return false;
}

int64_t tile_size(const MarkOptions& opt, int k) {
  if (opt.tile_sizes.empty()) return 0;
  return opt.tile_sizes[std::min<size_t>(k, opt.tile_sizes.size() - 1)];
}

/** True for a permutable band of depth >= min_tile_depth with a nonzero tile size for every
 *  member. */
bool tileable(isl_schedule_node* node, const MarkOptions& opt) {
  isl_size n = isl_schedule_node_band_n_member(node);
  if (!opt.tile || n < std::max(2, opt.min_tile_depth) ||
      isl_schedule_node_band_get_permutable(node) != isl_bool_true)
    return false;
  for (int k = 0; k < n; ++k)
    if (tile_size(opt, k) <= 0) return false;
  return true;
}

/** Tiles a band: `node` becomes the tile band, its child the point band. */
isl_schedule_node* tile_band(isl_schedule_node* node, const MarkOptions& opt) {
  isl_size n = isl_schedule_node_band_n_member(node);
  isl_space* space = isl_schedule_node_band_get_space(node);
  isl_multi_val* sizes = isl_multi_val_zero(space);
  for (int k = 0; k < n; ++k)
    sizes = isl_multi_val_set_val(
        sizes, k, isl_val_int_from_si(isl_schedule_node_get_ctx(node), tile_size(opt, k)));
  return isl_schedule_node_band_tile(node, sizes);
}

isl_schedule_node* insert_mark(isl_schedule_node* node, const char* name) {
  isl_id* id = isl_id_alloc(isl_schedule_node_get_ctx(node), name, nullptr);
  return isl_schedule_node_child(isl_schedule_node_insert_mark(node, id), 0);
}

isl_schedule_node* mark_tree(isl_schedule_node* node, const MarkOptions& opt, bool band_seen,
                             bool may_tile);

/** Splits a band into single members, marks them, recurses below; returns at `node`'s place.
 *  `may_tile_below` is false for a tile band, whose child, the point band, is not tiled again. */
isl_schedule_node* mark_band(isl_schedule_node* node, const MarkOptions& opt, bool band_seen,
                             bool may_tile_below) {
  isl_size n = isl_schedule_node_band_n_member(node);
  bool innermost = !has_band_below(node);
  int levels = 0;
  for (int k = 0; k < n; ++k) {
    if (k + 1 < n) node = isl_schedule_node_band_split(node, 1);
    bool coincident = isl_schedule_node_band_member_get_coincident(node, 0) == isl_bool_true;
    if (opt.parallel && coincident && !band_seen) {
      node = insert_mark(node, "parallel");
      ++levels;
    }
    if (opt.vectorize && coincident && innermost && k + 1 == n) {
      node = insert_mark(node, "vector");
      ++levels;
    }
    if (k + 1 < n) {
      node = isl_schedule_node_child(node, 0);
      ++levels;
    }
  }
  if (isl_schedule_node_has_children(node) == isl_bool_true) {
    node = isl_schedule_node_child(node, 0);
    node = mark_tree(node, opt, true, may_tile_below);
    node = isl_schedule_node_parent(node);
  }
  for (int k = 0; k < levels; ++k)
    node = isl_schedule_node_parent(node);
  return node;
}

isl_schedule_node* mark_tree(isl_schedule_node* node, const MarkOptions& opt, bool band_seen,
                             bool may_tile) {
  if (!node) return node;
  if (isl_schedule_node_get_type(node) == isl_schedule_node_band) {
    bool tile = may_tile && tileable(node, opt);
    if (tile) node = tile_band(node, opt);
    return mark_band(node, opt, band_seen, !tile);
  }
  isl_size n = isl_schedule_node_n_children(node);
  for (isl_size i = 0; i < n; ++i) {
    node = isl_schedule_node_child(node, i);
    node = mark_tree(node, opt, band_seen, may_tile);
    node = isl_schedule_node_parent(node);
  }
  return node;
}

}  // namespace

Schedule tile_and_mark(Schedule schedule, const MarkOptions& opt) {
  isl_ctx* ctx = isl_schedule_get_ctx(schedule.keep());
  isl_schedule_node* root = isl_schedule_get_root(schedule.keep());
  root = mark_tree(root, opt, false, true);
  isl_schedule* result = root ? isl_schedule_node_get_schedule(root) : nullptr;
  isl_schedule_node_free(root);
  return give(ctx, result, "tiling and marking");
}

AstNode build_ast(const Schedule& schedule, const Set& context) {
  isl_ctx* ctx = isl_schedule_get_ctx(schedule.keep());
  isl_ast_build* build = isl_ast_build_from_context(isl_set_copy(context.keep()));
  isl_ast_node* ast = isl_ast_build_node_from_schedule(build, isl_schedule_copy(schedule.keep()));
  isl_ast_build_free(build);
  return give(ctx, ast, "AST generation");
}

}  // namespace kiln::isl
