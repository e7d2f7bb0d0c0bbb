#include "scheduler/schedule_kernel.h"

#include <cctype>
#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "scheduler/carry_scans.h"
#include "scheduler/distribute_reductions.h"
#include "scheduler/group_rows.h"
#include "scheduler/interchange.h"
#include "scheduler/isl.h"
#include "scheduler/isl_schedule.h"
#include "scheduler/isl_text.h"
#include "scheduler/map_gpu.h"
#include "scheduler/map_loops.h"
#include "scheduler/online_softmax.h"
#include "scheduler/prefetch_rows.h"
#include "scheduler/promote_accumulators.h"
#include "scheduler/stream_stores.h"

namespace kiln {

namespace {

/** "S3[i0, i1]" */
std::string instance_tuple(int k, size_t rank) {
  std::string out = "S" + std::to_string(k) + "[";
  for (size_t d = 0; d < rank; ++d)
    out += (d ? ", " : "") + iterator_name(static_cast<int>(d));
  return out + "]";
}

/** The isl pieces of one kernel, as text until every parameter is known. */
struct KernelText {
  std::vector<std::string> domains, reads, writes, order;
};

std::string domain_text(IslTextRenderer& r, const Statement& s, int k) {
  std::string cond;
  for (size_t d = 0; d < s.extents.size(); ++d) {
    std::optional<std::string> extent = r.render(s.extents[d], true);
    if (!extent)
      throw std::runtime_error("schedule: extent " + s.extents[d].str() + " of " + s.name +
                               " cannot be expressed in isl");
    std::string it = iterator_name(static_cast<int>(d));
    cond += (cond.empty() ? "" : " and ") + ("0 <= " + it + " < " + *extent);
  }
  for (const IntExpr& e : s.domain) {
    std::optional<std::string> bound = r.render(e, true);
    if (!bound)
      throw std::runtime_error("schedule: the domain bound " + e.str() + " >= 0 of " + s.name +
                               " cannot be expressed in isl");
    cond += (cond.empty() ? "" : " and ") + (*bound + " >= 0");
  }
  return "{ " + instance_tuple(k, s.extents.size()) + (cond.empty() ? "" : " : " + cond) + " }";
}

/** Per buffer, the positions of its index that isl is told: all but those that every access
 *  of the kernel indexes with 0 (a merged or size-1 dimension, see coalesce_dims.h), which tell
 *  isl nothing and cost it work per dimension. Buffers of calls, seen whole, keep all. */
using KeptPositions = std::map<int, std::vector<bool>>;

KeptPositions kept_positions(const KernelPlan& plan, const Kernel& kernel) {
  KeptPositions kept;
  auto visit = [&](int buffer, const std::vector<IntExpr>& index) {
    auto [it, fresh] = kept.try_emplace(buffer, index.size(), false);
    for (size_t d = 0; d < index.size() && d < it->second.size(); ++d)
      if (index[d] != IntExpr(0)) it->second[d] = true;
  };
  for (const Statement& s : kernel.statements) {
    if (s.kind == Statement::Kind::call) {
      kept[s.buffer].assign(plan.buffers[s.buffer].shape.size(), true);
      for (int b : s.args)
        kept[b].assign(plan.buffers[b].shape.size(), true);
    }
  }
  for (const Statement& s : kernel.statements) {
    if (s.kind == Statement::Kind::call) continue;
    visit(s.buffer, s.index);
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* load : loads)
      visit(load->buffer, load->index);
  }
  return kept;
}

bool is_iterator(const std::string& v) {
  return v.size() > 1 && v[0] == 'i' && std::isdigit(static_cast<unsigned char>(v[1]));
}

/** A position `E·q + r` of an index: E a size expression that is not a constant, q affine in
 *  the iterators with constant coefficients, r one iterator whose extent is E (so that
 *  0 <= r < E). isl cannot multiply a parameter by a variable, but it can see the position as
 *  the two coordinates (q, r) of the buffer's dimension split by E. */
struct SplitIndex {
  IntExpr radix, quotient, remainder;
};

std::optional<SplitIndex> split_index(const IntExpr& e, const Statement& s) {
  std::optional<IntExpr> radix;
  IntExpr quotient = 0, remainder = 0;
  for (const IntExpr::Term& t : e.terms()) {
    std::string iter;
    IntExpr sizes = 1;
    for (const auto& f : t.factors) {
      std::set<std::string> inside;
      if (f->kind == IntAtom::Kind::var && is_iterator(f->name)) {
        if (!iter.empty()) return std::nullopt;
        iter = f->name;
        continue;
      }
      f->a.collect_vars(inside);
      f->b.collect_vars(inside);
      for (const std::string& v : inside)
        if (is_iterator(v)) return std::nullopt;
      sizes = sizes * (f->kind == IntAtom::Kind::var        ? IntExpr::var(f->name)
                       : f->kind == IntAtom::Kind::floordiv ? floordiv(f->a, f->b)
                                                            : mod(f->a, f->b));
    }
    if (iter.empty()) return std::nullopt;  // a constant or size offset: not (q, r)
    if (sizes == IntExpr(1)) {
      remainder = remainder + t.coeff * IntExpr::var(iter);
      continue;
    }
    if (radix && *radix != sizes) return std::nullopt;
    radix = sizes;
    quotient = quotient + t.coeff * IntExpr::var(iter);
  }
  std::optional<std::string> r = remainder.as_var();
  if (!radix || !r) return std::nullopt;
  size_t k = std::stoul(r->substr(1));
  if (k >= s.extents.size() || s.extents[k] != *radix) return std::nullopt;
  return SplitIndex{*radix, quotient, remainder};
}

/** Per buffer and position, the size E by which isl sees the position split into two
 *  coordinates: where one access of the kernel indexes it as `E·q + r` (split_index) and no
 *  access splits it by another size. Other accesses of a split position leave both coordinates
 *  unconstrained, which over-approximates them. */
using SplitPositions = std::map<int, std::vector<std::optional<IntExpr>>>;

SplitPositions split_positions(const KernelPlan& plan, const Kernel& kernel) {
  SplitPositions split;
  std::map<std::pair<int, size_t>, bool> conflict;
  auto visit = [&](const Statement& s, int buffer, const std::vector<IntExpr>& index) {
    auto [it, fresh] = split.try_emplace(buffer, plan.buffers[buffer].shape.size());
    for (size_t d = 0; d < index.size() && d < it->second.size(); ++d) {
      std::optional<SplitIndex> si = split_index(index[d], s);
      if (!si) continue;
      if (it->second[d] && *it->second[d] != si->radix) conflict[{buffer, d}] = true;
      it->second[d] = si->radix;
    }
  };
  for (const Statement& s : kernel.statements) {
    if (s.kind == Statement::Kind::call) continue;
    visit(s, s.buffer, s.index);
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* load : loads)
      visit(s, load->buffer, load->index);
  }
  for (const auto& [at, bad] : conflict)
    split[at.first][at.second].reset();
  return split;
}

/** The coordinates of `buffer` that isl sees. */
struct Layout {
  KeptPositions kept;
  SplitPositions split;
  bool is_split(int buffer, size_t d) const {
    auto it = split.find(buffer);
    return it != split.end() && d < it->second.size() && it->second[d].has_value();
  }
};

/** An access `S_k[i] -> B<buffer>[o]` over the kept positions, split ones as two coordinates;
 *  an index that isl cannot express leaves its coordinates unconstrained, which
 *  over-approximates the access. */
std::string access_text(IslTextRenderer& r, const Layout& layout, int k, const Statement& s,
                        int buffer, const std::vector<IntExpr>& index) {
  std::string out =
      "{ " + instance_tuple(k, s.extents.size()) + " -> B" + std::to_string(buffer) + "[";
  std::string cond;
  const std::vector<bool>& keep = layout.kept.at(buffer);
  bool first = true;
  auto constrain = [&](const std::string& o, const IntExpr& e) {
    if (std::optional<std::string> text = r.render(e, false))
      cond += (cond.empty() ? "" : " and ") + (o + " = " + *text);
  };
  for (size_t d = 0; d < index.size(); ++d) {
    if (!keep[d]) continue;
    std::string o = "o" + std::to_string(d);
    if (layout.is_split(buffer, d)) {
      out += (first ? "" : ", ") + o + "q, " + o + "r";
      first = false;
      std::optional<SplitIndex> si = split_index(index[d], s);
      if (si && si->radix == *layout.split.at(buffer)[d]) {
        constrain(o + "q", si->quotient);
        constrain(o + "r", si->remainder);
      }
      continue;
    }
    out += (first ? "" : ", ") + o;
    first = false;
    constrain(o, index[d]);
  }
  return out + "]" + (cond.empty() ? "" : " : " + cond) + " }";
}

/** An access of statement k (0-dimensional: a call) to the whole of `buffer`; a dimension whose
 *  extent isl cannot express is left unbounded, which over-approximates the access. */
std::string whole_buffer_text(IslTextRenderer& r, const Layout& layout, int k, int buffer,
                              const Shape& shape) {
  std::string out = "{ " + instance_tuple(k, 0) + " -> B" + std::to_string(buffer) + "[";
  std::string cond;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string o = "o" + std::to_string(d);
    if (layout.is_split(buffer, d)) {
      out += (d ? ", " : "") + o + "q, " + o + "r";
      continue;
    }
    out += (d ? ", " : "") + o;
    if (std::optional<std::string> e = r.render(shape[d], true))
      cond += (cond.empty() ? "" : " and ") + ("0 <= " + o + " < " + *e);
  }
  return out + "]" + (cond.empty() ? "" : " : " + cond) + " }";
}

/** A call reads the whole of its argument buffers and writes the whole of its result. */
void call_accesses(IslTextRenderer& r, const Layout& layout, const KernelPlan& plan,
                   const Statement& s, int k, KernelText& t) {
  t.writes.push_back(whole_buffer_text(r, layout, k, s.buffer, plan.buffers[s.buffer].shape));
  for (int b : s.args)
    t.reads.push_back(whole_buffer_text(r, layout, k, b, plan.buffers[b].shape));
}

/** Statement k runs after every earlier statement, its instances in lexicographic order. */
std::string order_text(int k, size_t rank, size_t depth) {
  std::string out = "{ " + instance_tuple(k, rank) + " -> [" + std::to_string(k);
  for (size_t d = 0; d < depth; ++d)
    out += ", " + (d < rank ? iterator_name(static_cast<int>(d)) : std::string("0"));
  return out + "] }";
}

KernelText kernel_text(IslTextRenderer& r, const KernelPlan& plan, const Kernel& kernel) {
  KernelText t;
  Layout layout{kept_positions(plan, kernel), split_positions(plan, kernel)};
  size_t depth = 0;
  for (const auto& s : kernel.statements)
    depth = std::max(depth, s.extents.size());
  for (int k = 0; k < static_cast<int>(kernel.statements.size()); ++k) {
    const Statement& s = kernel.statements[k];
    size_t rank = s.extents.size();
    t.domains.push_back(domain_text(r, s, k));
    t.order.push_back(order_text(k, rank, depth));
    if (s.kind == Statement::Kind::call) {
      call_accesses(r, layout, plan, s, k, t);
      continue;
    }
    t.writes.push_back(access_text(r, layout, k, s, s.buffer, s.index));
    if (s.kind == Statement::Kind::reduce_update)
      t.reads.push_back(access_text(r, layout, k, s, s.buffer, s.index));
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* load : loads)
      t.reads.push_back(access_text(r, layout, k, s, load->buffer, load->index));
  }
  return t;
}

/** The pieces `{ ... }` joined into one union text, parsed once: isl parses one text of n
 *  pieces much faster than n texts united one by one. */
std::string union_text(const std::string& params, const std::vector<std::string>& texts) {
  std::string body;
  for (const auto& t : texts) {
    std::string inner = t.substr(1, t.size() - 2);  // strip "{" and "}"
    body += (body.empty() ? "" : ";") + inner;
  }
  return params + " -> {" + body + " }";
}

isl::UnionSet parse_sets(const isl::Ctx& ctx, const std::string& params,
                         const std::vector<std::string>& texts) {
  return isl::read_union_set(ctx, union_text(params, texts));
}

isl::UnionMap parse_maps(const isl::Ctx& ctx, const std::string& params,
                         const std::vector<std::string>& texts) {
  return isl::read_union_map(ctx, union_text(params, texts));
}

/** Statement ranges [first, last) that isl schedules apart, in order: every call statement
 *  alone and the runs between calls. A library call fuses with nothing, and isl would otherwise
 *  put the 0-dimensional call into its consumer's band, which then loses its coincidence (and
 *  its coincidence, and with it the parallel and simd mappings). A kernel without calls is one
 * range. */
std::vector<std::pair<int, int>> segments(const Kernel& k) {
  std::vector<std::pair<int, int>> out;
  int first = 0, n = static_cast<int>(k.statements.size());
  for (int s = 0; s < n; ++s) {
    if (k.statements[s].kind != Statement::Kind::call) continue;
    if (first < s) out.push_back({first, s});
    out.push_back({s, s + 1});
    first = s + 1;
  }
  if (first < n) out.push_back({first, n});
  return out;
}

/** isl's schedule of every segment with the dependences inside it, in sequence; segments run
 *  in statement order, which respects the dependences between them. */
isl::Schedule schedule_segments(const isl::Ctx& ctx, const std::string& params,
                                const KernelText& text, const Kernel& k,
                                const isl::UnionSet& domain, const isl::UnionMap& deps,
                                const isl::Set& context) {
  std::vector<std::pair<int, int>> parts = segments(k);
  if (parts.size() == 1) return isl::compute_schedule(domain, deps, context);
  isl::Schedule out;
  for (size_t p = 0; p < parts.size(); ++p) {
    auto [first, last] = parts[p];
    isl::UnionSet part =
        parse_sets(ctx, params, {text.domains.begin() + first, text.domains.begin() + last});
    isl::UnionMap inside = isl::intersect_range(isl::intersect_domain(deps, part), part);
    isl::Schedule s = isl::compute_schedule(part, inside, context);
    out = p == 0 ? std::move(s) : isl::sequence(std::move(out), std::move(s));
  }
  return out;
}

/** With --debug 5, prints the milliseconds of each isl phase to stderr. */
class PhaseTimer {
 public:
  explicit PhaseTimer(bool enabled) : enabled_(enabled) {}
  void lap(const char* phase) {
    auto now = std::chrono::steady_clock::now();
    std::chrono::duration<double, std::milli> ms = now - last_;
    if (enabled_) std::cerr << "schedule: " << phase << " " << ms.count() << " ms\n";
    last_ = now;
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

/** True for a kernel with a contraction: a reduction over a domain of rank 3 or more, like
 *  matmul or conv2d, whose 2-D output band reuses data across tiles. */
bool has_contraction(const Kernel& k) {
  for (const Statement& s : k.statements)
    if (s.kind == Statement::Kind::reduce_update && s.extents.size() >= 3) return true;
  return false;
}

/** Whether `e` uses iterator `var`. */
bool mentions(const IntExpr& e, const std::string& var) {
  std::set<std::string> vars;
  e.collect_vars(vars);
  return vars.count(var) > 0;
}

/** Whether an access walks along `inner` in its last dimension that moves at all (a kept
 *  dimension of extent 1 after it is a constant), or not at all (a value the inner loop holds
 *  still: a row's maximum read by its exponentials, an accumulator). */
bool streams(const std::vector<IntExpr>& index, const std::string& inner) {
  bool last = true;
  for (size_t d = index.size(); d-- > 0;) {
    std::set<std::string> vars;
    index[d].collect_vars(vars);
    if (vars.empty()) continue;
    if (vars.count(inner)) return last;
    last = false;
  }
  return true;
}

/** Whether `index` uses each of the first `n` iterators. */
bool uses_all(const std::vector<IntExpr>& index, size_t n) {
  std::set<std::string> vars;
  for (const IntExpr& e : index)
    e.collect_vars(vars);
  for (size_t a = 0; a < n; ++a)
    if (!vars.count(iterator_name(static_cast<int>(a)))) return false;
  return true;
}

/** Whether tiling can bring `k` locality: false for a kernel whose every access, the write and
 *  each load, walks along its statement's innermost iterator in its last dimension or holds
 *  still along it, and whose reductions read each element once (a copy, a pad, an elementwise
 *  op, a row's max and sum over stored scores: each access streams in the loop order already,
 *  so tiles only shorten the inner loop and break its vectors). A transposed load or a
 *  contraction (an operand reused across the iterators it does not use) may gain. */
bool gains_from_tiles(const Kernel& k) {
  for (const Statement& s : k.statements) {
    bool update = s.kind == Statement::Kind::reduce_update;
    bool plain = s.kind == Statement::Kind::assign || s.kind == Statement::Kind::reduce_init;
    if (!(plain || update) || s.extents.empty()) return true;
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    auto streams_along = [&](const std::string& inner) {
      if (!streams(s.index, inner)) return false;
      for (const ScalarExpr* l : loads) {
        if (!l->args.empty() || !streams(l->index, inner)) return false;
        if (update && !uses_all(l->index, s.extents.size())) return false;
      }
      return true;
    };
    if (streams_along(iterator_name(static_cast<int>(s.extents.size()) - 1))) continue;
    // A sum over a middle axis that reads each element once (a channels-last pooling,
    // y[b, c] = sum(x[b, p, c], p)) streams once its element's last moving iterator runs
    // innermost, below the reduction (interchange.h).
    std::set<std::string> last;
    for (size_t d = s.index.size(); d-- > 0 && last.empty();)
      s.index[d].collect_vars(last);
    if (update && last.size() == 1 && !reuses_a_load(s) && streams_along(*last.begin())) continue;
    return true;
  }
  return false;
}

/** The smallest band worth tiling: 2 in a kernel with a contraction, else opt.min_tile_depth. */
int tile_depth(const Kernel& k, const ScheduleOptions& opt) {
  return has_contraction(k) ? 2 : opt.min_tile_depth;
}

/** Runs the schedule-tree steps of `list` on `schedule`. */
isl::Schedule apply_tree_steps(isl::Schedule schedule, const std::vector<Transform>& list,
                               const isl::UnionMap& other_deps) {
  for (const Transform& t : list)
    if (t.kind == Transform::Kind::tile) schedule = isl::tile_bands(std::move(schedule), t.tile);
  return isl::annotate_members(std::move(schedule), other_deps);
}

/** Each reduction's update with itself and with its init (isl::drop_dependences). */
std::vector<std::pair<int, int>> reduction_pairs(const Kernel& k) {
  std::vector<std::pair<int, int>> out;
  int n = static_cast<int>(k.statements.size());
  for (int u = 0; u < n; ++u) {
    if (k.statements[u].kind != Statement::Kind::reduce_update) continue;
    out.push_back({u, u});
    for (int i = 0; i < u; ++i)
      if (k.statements[i].kind == Statement::Kind::reduce_init &&
          k.statements[i].buffer == k.statements[u].buffer)
        out.push_back({i, u});
  }
  return out;
}

/** Runs the loop-IR steps of `list` on `nest`. */
void apply_loop_steps(const KernelPlan& plan, const Kernel& k, LoopNest& nest,
                      const std::vector<Transform>& list) {
  for (const Transform& t : list) {
    switch (t.kind) {
      case Transform::Kind::tile:
        break;
      case Transform::Kind::sink:
        sink_below_reductions(plan, k, nest, t.packed);
        break;
      case Transform::Kind::register_tile:
        register_tile(plan, k, nest, t.micro);
        break;
      case Transform::Kind::promote_accumulators:
        promote_accumulators(plan, k, nest, t.half, t.sum_block);
        break;
      case Transform::Kind::carry_scans:
        carry_scans(plan, k, nest, t.split);
        break;
      case Transform::Kind::gpu_tile:
        gpu_tile(plan, k, nest, t.gpu);
        break;
      case Transform::Kind::map_parallel:
        map_parallel(nest, t.max_collapse, t.keep_vector_loops ? &plan : nullptr,
                     t.keep_vector_loops ? &k : nullptr);
        break;
      case Transform::Kind::map_simd:
        map_simd(plan, k, nest, t.vector_bytes);
        break;
      case Transform::Kind::distribute_reductions:
        distribute_reductions(k, nest);
        break;
      case Transform::Kind::map_gpu:
        map_gpu(k, nest, t.row_lanes);
        break;
      case Transform::Kind::group_rows:
        group_rows(plan, k, nest);
        break;
      case Transform::Kind::stream_stores:
        stream_stores(plan, k, nest, t.stream_bytes);
        break;
      case Transform::Kind::prefetch_rows:
        prefetch_rows(plan, k, nest);
        break;
      case Transform::Kind::online_softmax:
        break;  // the nest itself (schedule_kernel)
    }
  }
}

}  // namespace

std::vector<Transform> transform_list(const ScheduleOptions& opt, const KernelPlan& plan,
                                      const Kernel& k) {
  std::vector<Transform> list;
  if (opt.backend_gpu && opt.gpu_fused_attention && opt.gpu_tile.rows > 0 &&
      is_softmax_contraction_kernel(plan, k)) {
    Transform t{Transform::Kind::online_softmax};
    t.softmax = softmax_tile_shape(plan, k);
    if (opt.attention_lanes > 0) t.softmax.lanes = opt.attention_lanes;
    if (opt.attention_variant >= 0)
      t.softmax = softmax_variant_shape(plan, k, t.softmax,
                                        softmax_lane_variants().at(opt.attention_variant));
    t.softmax.warpgroup = opt.gpu_tile.wgmma && opt.gpu_tile.wgmma_rows > 0;
    t.softmax.tma = t.softmax.warpgroup && opt.gpu_tile.tma;
    list.push_back(t);
    return list;
  }
  bool cpu_sink = opt.sink && !opt.backend_gpu;
  bool micro =
      cpu_sink && opt.micro.rows > 0 &&
      has_register_tile_candidate(plan, k, opt.micro.amx_bf16 || opt.micro.bf16_dot_bytes > 0,
                                  opt.micro.amx_int8 || opt.micro.dot_bytes > 0);
  bool block_tile = opt.backend_gpu && opt.gpu_tile.rows > 0 && has_gpu_tile_candidate(plan, k);
  if (opt.tile && !micro && !block_tile && gains_from_tiles(k)) {
    Transform t{Transform::Kind::tile};
    t.tile = {opt.tile_sizes, tile_depth(k, opt)};
    list.push_back(t);
  }
  if (cpu_sink) {
    Transform t{Transform::Kind::sink};
    t.packed = micro;
    list.push_back(t);
  }
  if (micro) {
    Transform t{Transform::Kind::register_tile};
    t.micro = opt.micro;
    list.push_back(t);
  }
  // A GPU block's row of two or more sums: one statement a loop, so that each runs across the
  // block's threads (the CPU keeps its one pass over the row).
  if (opt.backend_gpu) list.push_back({Transform::Kind::distribute_reductions});
  Transform promote{Transform::Kind::promote_accumulators};
  promote.half = opt.backend_gpu;
  // CPU sums in blocks (a GPU's sums are split across threads already, map_gpu.h).
  if (!opt.backend_gpu) promote.sum_block = kSumBlock;
  list.push_back(promote);
  if (block_tile) {
    Transform t{Transform::Kind::gpu_tile};
    t.gpu = opt.gpu_tile;
    // What the target lacks is not chosen: SIMT cores for every update, one shared buffer.
    t.gpu.mma &= opt.gpu_tensor_cores;
    t.gpu.wgmma &= opt.gpu_tensor_cores && opt.gpu_async_copy;
    if (!opt.gpu_async_copy) t.gpu.mma_stages = 1;
    list.push_back(t);
  }
  if (opt.backend_gpu) {
    list.push_back({Transform::Kind::map_gpu});
    list.back().row_lanes = opt.gpu_row_groups;
  }
  if (opt.backend_gpu && opt.gpu_row_groups) list.push_back({Transform::Kind::group_rows});
  if (opt.parallel && opt.backend_threads) {
    Transform t{Transform::Kind::map_parallel};
    t.max_collapse = opt.max_collapse;
    t.keep_vector_loops = opt.vectorize && opt.backend_simd;
    list.push_back(t);
  }
  if (opt.vectorize && opt.backend_simd) {
    // Where the target runs wider vectors than the C compiler prefers at Kiln's flags (32
    // bytes), float loops take them: a 16-lane libmvec exp2f is 1.5x the 8-lane one's speed
    // (docs/decisions.md, "Vector loops at the target's full width").
    Transform t{Transform::Kind::map_simd};
    if (opt.simd_bytes > 32) t.vector_bytes = opt.simd_bytes;
    list.push_back(t);
  }
  // After the mappings: a carried loop is serial, and map_gpu spreads the loops of a promoted
  // accumulator over a block's threads.
  if (has_scan(plan, k)) {
    Transform t{Transform::Kind::carry_scans};
    t.split = opt.parallel && opt.backend_threads;
    list.push_back(t);
  }
  if (!opt.backend_gpu && opt.stream_bytes > 0) {
    Transform t{Transform::Kind::stream_stores};
    t.stream_bytes = opt.stream_bytes;
    list.push_back(t);
  }
  if (!opt.backend_gpu && opt.prefetch_rows) list.push_back({Transform::Kind::prefetch_rows});
  return list;
}

ScheduledKernel schedule_kernel(const KernelPlan& plan, const Kernel& k,
                                const ScheduleOptions& opt) {
  auto start = std::chrono::steady_clock::now();
  PhaseTimer timer(opt.debug_isl);
  ScheduledKernel result;
  result.transforms = transform_list(opt, plan, k);
  if (k.statements.empty()) {
    result.nest.root = std::make_shared<LoopNode>();
    return result;
  }
  if (!result.transforms.empty() && result.transforms[0].kind == Transform::Kind::online_softmax) {
    result.nest = softmax_contraction_nest(plan, k, result.transforms[0].softmax);
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
    result.milliseconds = ms.count();
    return result;
  }
  IslTextRenderer renderer(plan.size_vars);
  KernelText text = kernel_text(renderer, plan, k);
  std::string params = renderer.params();

  // Shifts by the size parameters keep bands permutable for tiling, which only kernels with a
  // contraction get; elsewhere they only offset loops by N (softmax's three row loops became
  // one band over [0, 3N)), which costs isl's AST and the C compiler time (docs/decisions.md).
  isl::Ctx ctx(has_contraction(k));
  isl::UnionSet domain = parse_sets(ctx, params, text.domains);
  isl::UnionMap writes = isl::intersect_domain(parse_maps(ctx, params, text.writes), domain);
  isl::UnionMap reads = isl::intersect_domain(parse_maps(ctx, params, text.reads), domain);
  isl::UnionMap order = isl::intersect_domain(parse_maps(ctx, params, text.order), domain);
  isl::Set context = isl::read_set(ctx, renderer.context());

  // Each statement's domain alone, for the program-order fallback: parsed before the bound.
  std::vector<isl::UnionSet> domains;
  for (const std::string& d : text.domains)
    domains.push_back(parse_sets(ctx, params, {d}));
  timer.lap("domains and accesses");
  ctx.limit_operations(opt.max_operations);
  ctx.limit_time(opt.max_milliseconds);
  try {
    isl::UnionMap deps = isl::compute_dependences(reads, writes, order);
    timer.lap("dependences");
    isl::Schedule schedule = schedule_segments(ctx, params, text, k, domain, deps, context);
    timer.lap("schedule");
    isl::UnionMap other_deps = isl::drop_dependences(deps, reduction_pairs(k));
    schedule = apply_tree_steps(std::move(schedule), result.transforms, other_deps);
    timer.lap("tiling and annotation");
    if (opt.debug_isl) {
      std::cerr << "domain: " << isl::to_str(domain) << "\nwrites: " << isl::to_str(writes)
                << "\nreads: " << isl::to_str(reads) << "\ndependences: " << isl::to_str(deps)
                << "\n";
      result.schedule_text = isl::to_str(schedule);
    }
    result.nest = isl::convert_ast(isl::build_ast(schedule, context, &deps, &other_deps),
                                   renderer.substitutions());
  } catch (const isl::OperationLimit&) {
    // Program order needs no dependences and no scheduling ILP; it is legal by construction.
    ctx.limit_operations(opt.max_operations);
    ctx.limit_time(opt.max_milliseconds);
    try {
      isl::Schedule schedule = isl::sequential_schedule(domains);
      if (opt.debug_isl) result.schedule_text = isl::to_str(schedule);
      result.nest = isl::convert_ast(isl::build_ast(schedule, context), renderer.substitutions());
      result.nest.program_order = true;
    } catch (const isl::OperationLimit&) {
      throw std::runtime_error("scheduling kernel '" + k.name +
                               "' exceeded the isl operation limit of " +
                               std::to_string(opt.max_operations) + " or the time limit of " +
                               std::to_string(opt.max_milliseconds) +
                               " ms even in program order (--config ISL_OPS=N and ISL_MS=N "
                               "raise them)");
    }
  }
  ctx.limit_time(0);
  timer.lap("AST");
  if (!result.nest.program_order) {
    apply_loop_steps(plan, k, result.nest, result.transforms);
  } else if (opt.backend_gpu) {
    map_gpu(k, result.nest);  // without marks: one block, statements on one thread
  }
  std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
  result.milliseconds = elapsed.count();
  return result;
}

std::string check_isl_build() {
  std::string found = isl::version();
  if (found.find("GMP") != std::string::npos) return "";
  return "the process calls an isl that is not the GMP build Kiln linked (isl_version() = \"" +
         found + "\"); libLLVM's isl probably came first on the link line: link isl before LLVM";
}

}  // namespace kiln
