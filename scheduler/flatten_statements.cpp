#include "scheduler/flatten_statements.h"

#include <map>
#include <set>

namespace kiln {

namespace {

bool walks_domain(const std::vector<IntExpr>& index, const Shape& buffer, const Statement& s) {
  if (index.size() != s.extents.size() || !same_shape(buffer, s.extents)) return false;
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d] != IntExpr::var(iterator_name(static_cast<int>(d)))) return false;
  return true;
}

/** True when every node of the value is a row-major load of the domain, a constant or an op,
 *  and nothing carries a mask or reads an iterator. Adds the buffers read to `reads`. */
bool contiguous_value(const KernelPlan& plan, const Statement& s, const ScalarExpr& e,
                      std::set<const ScalarExpr*>& seen, std::set<int>& reads) {
  if (!seen.insert(&e).second) return true;
  if (!e.mask.empty() || e.kind == ScalarExpr::Kind::iterator) return false;
  if (e.kind == ScalarExpr::Kind::load) {
    reads.insert(e.buffer);
    return walks_domain(e.index, plan.buffers[e.buffer].shape, s);
  }
  for (const ScalarExprPtr& a : e.args)
    if (!contiguous_value(plan, s, *a, seen, reads)) return false;
  return true;
}

std::vector<IntExpr> flat_index(size_t rank) {
  std::vector<IntExpr> index(rank, IntExpr(0));
  index.back() = IntExpr::var(iterator_name(0));
  return index;
}

ScalarExprPtr flatten_value(const ScalarExprPtr& e,
                            std::map<const ScalarExpr*, ScalarExprPtr>& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  auto out = std::make_shared<ScalarExpr>(*e);
  if (out->kind == ScalarExpr::Kind::load) out->index = flat_index(out->index.size());
  for (ScalarExprPtr& a : out->args)
    a = flatten_value(a, memo);
  memo[e.get()] = out;
  return out;
}

/** The buffers each statement of `k` writes and reads. */
void accesses(const Kernel& k, std::vector<std::set<int>>& writes,
              std::vector<std::set<int>>& reads) {
  for (const Statement& s : k.statements) {
    std::set<int> w{s.buffer}, r(s.args.begin(), s.args.end());
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      r.insert(l->buffer);
    if (s.kind == Statement::Kind::reduce_update) r.insert(s.buffer);
    writes.push_back(w);
    reads.push_back(r);
  }
}

bool qualifies(const KernelPlan& plan, const Kernel& k, size_t at,
               const std::vector<std::set<int>>& writes, const std::vector<std::set<int>>& reads) {
  const Statement& s = k.statements[at];
  if (s.kind != Statement::Kind::assign || s.extents.size() < 2 || !s.value || !s.domain.empty() ||
      !s.needed.empty())
    return false;
  if (!walks_domain(s.index, plan.buffers[s.buffer].shape, s)) return false;
  std::set<const ScalarExpr*> seen;
  std::set<int> read;
  if (!contiguous_value(plan, s, *s.value, seen, read)) return false;
  if (read.count(s.buffer)) return false;
  for (size_t other = 0; other < k.statements.size(); ++other) {
    if (other == at) continue;
    if (writes[other].count(s.buffer) || reads[other].count(s.buffer)) return false;
    for (int b : read)
      if (writes[other].count(b)) return false;
  }
  return true;
}

}  // namespace

int flatten_statements(KernelPlan& plan) {
  int count = 0;
  for (Kernel& k : plan.kernels) {
    std::vector<std::set<int>> writes, reads;
    accesses(k, writes, reads);
    for (size_t at = 0; at < k.statements.size(); ++at) {
      if (!qualifies(plan, k, at, writes, reads)) continue;
      Statement& s = k.statements[at];
      IntExpr total(1);
      for (const IntExpr& e : s.extents)
        total = total * e;
      std::map<const ScalarExpr*, ScalarExprPtr> memo;
      s.value = flatten_value(s.value, memo);
      s.index = flat_index(s.index.size());
      s.extents = {total};
      ++count;
    }
  }
  return count;
}

}  // namespace kiln
