#include "scheduler/tile_bounded.h"

#include <set>

#include "scheduler/demanded_domains.h"
#include "scheduler/gpu_tile.h"
#include "scheduler/online_softmax.h"
#include "scheduler/register_tile.h"

namespace kiln {

namespace {

ScalarExprPtr op(Op o, DType t, std::vector<ScalarExprPtr> args) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::op;
  e->op = o;
  e->dtype = t;
  e->args = std::move(args);
  return e;
}

ScalarExprPtr integer(int64_t v) {
  auto e = std::make_shared<ScalarExpr>();
  e->dtype = DType::i64;
  e->int_value = v;
  return e;
}

ScalarExprPtr zero_of(DType t) {
  auto e = std::make_shared<ScalarExpr>();
  e->dtype = t;
  return e;
}

/** Whether every bound holds: `-1 < e` for each bound `e >= 0`, and-ed. */
ScalarExprPtr inside(const std::vector<IntExpr>& domain) {
  ScalarExprPtr all;
  for (const IntExpr& bound : domain) {
    auto at = std::make_shared<ScalarExpr>();
    at->kind = ScalarExpr::Kind::iterator;
    at->dtype = DType::i64;
    at->index = {bound};
    ScalarExprPtr holds = op(Op::cmplt, DType::boolean, {integer(-1), at});
    all = all ? op(Op::bit_and, DType::boolean, {all, holds}) : holds;
  }
  return all;
}

/** The iterators statement `s` writes along: those of its index. */
std::set<std::string> kept_iterators(const Statement& s) {
  std::set<std::string> kept;
  for (const IntExpr& i : s.index)
    i.collect_vars(kept);
  return kept;
}

/** Whether `tiles` would tile `s`: gpu_tile's block tile (has_gpu_tile_candidate), or a CPU
 *  register tile whose lanes are the iterator of s's last index dimension that has one (a
 *  reduction's kept dimension of extent 1 comes after). */
bool tiled(const KernelPlan& plan, const Statement& s, BoundedTiles tiles) {
  if (tiles == BoundedTiles::cpu_registers) {
    if (s.extents.size() < 3) return false;
    std::set<std::string> lanes;
    for (size_t d = s.index.size(); d-- > 0 && lanes.empty();)
      s.index[d].collect_vars(lanes);
    return lanes.size() == 1 && tileable_statement(plan, s, lanes);
  }
  Kernel alone;
  alone.statements = {s};
  return has_gpu_tile_candidate(plan, alone);
}

/** Whether two lists of bounds are the same bounds, in any order. */
bool same_bounds(const std::vector<IntExpr>& a, const std::vector<IntExpr>& b) {
  return std::set<IntExpr>(a.begin(), a.end()) == std::set<IntExpr>(b.begin(), b.end());
}

/** The statements of `k` inside a softmax-weighted contraction, which keep their bounds. */
std::set<int> fused_statements(const KernelPlan& plan, const Kernel& k) {
  std::set<int> fused;
  for (int p = 0; p < static_cast<int>(k.statements.size()); ++p)
    if (std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, p)) {
      for (int q = p; q < f->end; ++q)
        fused.insert(q);
      p = f->end - 1;
    }
  return fused;
}

}  // namespace

int tile_bounded_contractions(KernelPlan& plan, BoundedTiles tiles) {
  int count = 0;
  for (Kernel& k : plan.kernels) {
    const std::set<int> fused = fused_statements(plan, k);
    std::vector<Statement> out;
    for (int p = 0; p < static_cast<int>(k.statements.size()); ++p) {
      const Statement& s = k.statements[p];
      if (s.kind != Statement::Kind::reduce_update || s.reduce != ReduceKind::sum ||
          s.domain.empty() || fused.count(p)) {
        out.push_back(s);
        continue;
      }
      std::set<std::string> used;
      for (const IntExpr& bound : s.domain)
        bound.collect_vars(used);
      const std::set<std::string> kept = kept_iterators(s);
      bool element_only = true;
      for (int d = 0; d < static_cast<int>(s.extents.size()); ++d)
        if (used.count(iterator_name(d)) && !kept.count(iterator_name(d))) element_only = false;
      // The init, whose element domain the epilogue takes.
      const Statement* init = nullptr;
      for (const Statement& o : out)
        if (o.kind == Statement::Kind::reduce_init && o.buffer == s.buffer) init = &o;
      if (element_only && (!init || init->index != s.index)) {
        out.push_back(s);
        continue;
      }
      Statement box = s;
      box.domain.clear();
      if (!element_only)
        box.value =
            op(Op::where, s.value->dtype, {inside(s.domain), s.value, zero_of(s.value->dtype)});
      if (!tiled(plan, box, tiles)) {
        out.push_back(s);
        continue;
      }
      // Where every reader reads the sum inside its bounds only (the scores of causal attention,
      // whose max and exponentials take the same bounds, demanded_domains.h), the points
      // outside them need no identity: they are never read, and the tiles may skip them.
      if (element_only) {
        std::optional<std::vector<IntExpr>> read = read_bounds(plan, s.buffer, s);
        if (read && same_bounds(*read, s.domain)) {
          box.needed = s.domain;
          out.push_back(box);
          ++count;
          continue;
        }
      }
      // The epilogue over the init's domain, whose iterators the bounds use (the index is the
      // same).
      Statement fix;
      fix.kind = Statement::Kind::assign;
      if (element_only) {
        fix.buffer = s.buffer;
        fix.index = s.index;
        fix.extents = init->extents;
      }
      out.push_back(box);
      ++count;
      if (!element_only) continue;
      auto element = std::make_shared<ScalarExpr>();
      element->kind = ScalarExpr::Kind::load;
      element->dtype = plan.buffers[s.buffer].dtype;
      element->buffer = s.buffer;
      element->index = s.index;
      fix.value =
          op(Op::where, element->dtype, {inside(s.domain), element, zero_of(element->dtype)});
      out.push_back(fix);
    }
    k.statements = std::move(out);
    for (size_t i = 0; i < k.statements.size(); ++i)
      k.statements[i].name = "S" + std::to_string(i);
  }
  return count;
}

}  // namespace kiln
