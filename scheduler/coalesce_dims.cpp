#include "scheduler/coalesce_dims.h"

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace kiln {

namespace {

using Index = std::vector<IntExpr>;
using Edge = std::pair<int, int>;  ///< (statement, dimension d: d and d+1 merge) or
                                   ///< (form, position p: p and p+1 merge)

IntExpr iter(size_t d) {
  return IntExpr::var(iterator_name(static_cast<int>(d)));
}

/** How a statement's old iterators map to its new ones: `single` sends an iterator to 0 or to
 *  a new iterator; `runs` maps the first iterator of a merged run to (length, new iterator),
 *  and an access walking the run is addressed `[0, ..., 0, new]`. */
struct Rewrite {
  std::map<std::string, IntExpr> single;
  std::map<std::string, std::pair<size_t, size_t>> runs;
};

Index rewrite_index(const Index& index, const Rewrite& r) {
  Index out = index;
  for (size_t p = 0; p < index.size(); ++p) {
    std::optional<std::string> v = index[p].as_var();
    auto run = v ? r.runs.find(*v) : r.runs.end();
    if (run == r.runs.end()) {
      out[p] = index[p].substitute(r.single);
      continue;
    }
    // The run's iterators in order, with only size-1 positions indexed 0 between them.
    auto [length, j] = run->second;
    size_t first = std::stoul(v->substr(1));
    IntExpr last = iter(first + length - 1);
    size_t q = p;
    while (index[q] != last)
      ++q;
    for (size_t k = p; k < q; ++k)
      out[k] = 0;
    out[q] = iter(j);
    p = q;
  }
  return out;
}

ScalarExprPtr rewrite_value(const ScalarExprPtr& e, const Rewrite& r,
                            std::map<const ScalarExpr*, ScalarExprPtr>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  auto out = std::make_shared<ScalarExpr>(*e);
  if (out->kind == ScalarExpr::Kind::load) out->index = rewrite_index(out->index, r);
  if (out->kind == ScalarExpr::Kind::iterator)
    for (IntExpr& i : out->index)
      i = i.substitute(r.single);
  for (MaskBound& m : out->mask)
    m = {m.expr.substitute(r.single), m.bound.substitute(r.single)};
  for (ScalarExprPtr& a : out->args)
    a = rewrite_value(a, r, memo);
  memo[e.get()] = out;
  return out;
}

void apply(Statement& s, const Rewrite& r, Shape extents) {
  std::map<const ScalarExpr*, ScalarExprPtr> memo;
  if (s.value) s.value = rewrite_value(s.value, r, memo);
  s.index = rewrite_index(s.index, r);
  for (IntExpr& e : s.domain)
    e = e.substitute(r.single);
  for (IntExpr& e : s.needed)
    e = e.substitute(r.single);
  s.extents = std::move(extents);
}

/** Drops the dimensions of constant extent 1; returns how many. */
int drop_unit_dims(Statement& s) {
  Rewrite r;
  Shape kept;
  for (size_t d = 0; d < s.extents.size(); ++d) {
    if (s.extents[d].as_constant() == std::optional<int64_t>(1)) {
      r.single[iterator_name(static_cast<int>(d))] = 0;
    } else {
      r.single[iterator_name(static_cast<int>(d))] = iter(kept.size());
      kept.push_back(s.extents[d]);
    }
  }
  int dropped = static_cast<int>(s.extents.size() - kept.size());
  if (dropped > 0) apply(s, r, std::move(kept));
  return dropped;
}

/** One access of a statement, seen without its buffer's unit positions (below): the index
 *  there and the positions of it that use each variable. */
struct Access {
  int buffer;
  Index index;
  std::map<std::string, std::vector<size_t>> positions;
};

/** What a statement touches: its write, its loads, and the iterators that masks and iterator
 *  values use, which never merge. */
struct Uses {
  std::vector<Access> accesses;
  std::set<std::string> pinned;
};

void collect_nodes(const ScalarExpr& e, std::set<const ScalarExpr*>& seen,
                   std::vector<const ScalarExpr*>& out) {
  if (!seen.insert(&e).second) return;
  out.push_back(&e);
  for (const ScalarExprPtr& a : e.args)
    collect_nodes(*a, seen, out);
}

/** Every access (buffer, index) of a statement, and its pinned iterators. */
void raw_accesses(const Statement& s, std::vector<std::pair<int, const Index*>>& out,
                  std::set<std::string>& pinned) {
  out.push_back({s.buffer, &s.index});
  for (const IntExpr& e : s.domain)
    e.collect_vars(pinned);
  for (const IntExpr& e : s.needed)
    e.collect_vars(pinned);
  if (!s.value) return;
  std::set<const ScalarExpr*> seen;
  std::vector<const ScalarExpr*> nodes;
  collect_nodes(*s.value, seen, nodes);
  for (const ScalarExpr* n : nodes) {
    if (n->kind == ScalarExpr::Kind::load) out.push_back({n->buffer, &n->index});
    if (n->kind == ScalarExpr::Kind::iterator)
      for (const IntExpr& i : n->index)
        i.collect_vars(pinned);
    for (const MaskBound& m : n->mask) {
      m.expr.collect_vars(pinned);
      m.bound.collect_vars(pinned);
    }
  }
}

/** Everything the fixpoint needs about a plan's statements and buffers. A buffer's unit
 *  positions — of extent 1, indexed 0 by every access — are left out of its accesses and
 *  shape here, so that dimensions on either side of one can merge. */
struct PlanUses {
  std::vector<Statement*> statements;     ///< every statement of every kernel
  std::vector<int> kernel;                ///< per statement, its kernel's number
  std::vector<Uses> uses;                 ///< per statement
  std::set<std::pair<int, int>> written;  ///< (kernel, buffer) where the kernel writes it
  int buffers = 0;                        ///< how many buffers the plan has
  std::set<int> blocked;                  ///< buffers of extern calls
  std::map<int, Shape> shapes;            ///< per buffer accessed, without its unit positions
};

/** Fills pu.uses and pu.shapes from pu.statements. */
void find_uses(const KernelPlan& plan, PlanUses& pu) {
  std::vector<std::vector<std::pair<int, const Index*>>> raw(pu.statements.size());
  std::vector<std::set<std::string>> pinned(pu.statements.size());
  std::map<int, std::vector<bool>> unit;
  for (size_t si = 0; si < pu.statements.size(); ++si) {
    if (pu.statements[si]->kind == Statement::Kind::call) continue;
    raw_accesses(*pu.statements[si], raw[si], pinned[si]);
    for (auto [b, index] : raw[si]) {
      const Shape& shape = plan.buffers[b].shape;
      auto [it, fresh] = unit.try_emplace(b, shape.size(), !pu.blocked.count(b));
      for (size_t p = 0; p < shape.size(); ++p)
        if (shape[p] != IntExpr(1) || (*index)[p] != IntExpr(0)) it->second[p] = false;
    }
  }
  for (const auto& [b, units] : unit) {
    Shape& shape = pu.shapes[b];
    for (size_t p = 0; p < units.size(); ++p)
      if (!units[p]) shape.push_back(plan.buffers[b].shape[p]);
  }
  for (size_t si = 0; si < pu.statements.size(); ++si) {
    Uses u;
    u.pinned = std::move(pinned[si]);
    for (auto [b, index] : raw[si]) {
      Access a{b, {}, {}};
      for (size_t p = 0; p < index->size(); ++p) {
        if (unit.at(b)[p]) continue;
        std::set<std::string> vars;
        (*index)[p].collect_vars(vars);
        for (const std::string& v : vars)
          a.positions[v].push_back(a.index.size());
        a.index.push_back((*index)[p]);
      }
      u.accesses.push_back(std::move(a));
    }
    pu.uses.push_back(std::move(u));
  }
}

/** The key of the one form in which `kernel` addresses the written `buffer`: isl sees each
 *  kernel alone, so another kernel may address the same buffer in another form (both render to
 *  the same row-major offsets). */
int form(const PlanUses& pu, int kernel, int buffer) {
  return kernel * pu.buffers + buffer;
}

/** Whether iterators d and d+1 of statement `si` may merge as far as the statement alone can
 *  tell; adds to `needs` the positions of written buffers that must merge with them. */
bool dims_mergeable(const PlanUses& pu, size_t si, size_t d, std::vector<Edge>& needs) {
  const Statement& s = *pu.statements[si];
  const Uses& u = pu.uses[si];
  std::string a = iterator_name(static_cast<int>(d)), b = iterator_name(static_cast<int>(d + 1));
  if (u.pinned.count(a) || u.pinned.count(b)) return false;
  for (const Access& acc : u.accesses) {
    auto pa = acc.positions.find(a), pb = acc.positions.find(b);
    if (pa == acc.positions.end() && pb == acc.positions.end()) continue;  // a broadcast
    if (pa == acc.positions.end() || pb == acc.positions.end()) return false;
    if (pa->second.size() != 1 || pb->second.size() != 1) return false;
    size_t p = pa->second[0];
    const Index& index = acc.index;
    const Shape& shape = pu.shapes.at(acc.buffer);
    if (pb->second[0] != p + 1 || index[p] != iter(d) || index[p + 1] != iter(d + 1) ||
        shape[p] != s.extents[d] || shape[p + 1] != s.extents[d + 1] ||
        pu.blocked.count(acc.buffer))
      return false;
    int k = pu.kernel[si];
    if (pu.written.count({k, acc.buffer}))
      needs.push_back({form(pu, k, acc.buffer), static_cast<int>(p)});
  }
  return true;
}

/** The d of an iterator name "i<d>", or nullopt. */
std::optional<size_t> iterator_number(const IntExpr& e) {
  std::optional<std::string> v = e.as_var();
  if (!v || v->size() < 2 || (*v)[0] != 'i') return std::nullopt;
  for (size_t k = 1; k < v->size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>((*v)[k]))) return std::nullopt;
  return std::stoul(v->substr(1));
}

/** Whether positions p and p+1 of `buffer`, which `kernel` writes, may merge there: every
 *  access to them in that kernel reads (0, 0) or walks two adjacent iterators, whose merge it
 *  adds to `needs`. */
bool positions_mergeable(const PlanUses& pu, int kernel, int buffer, size_t p,
                         std::vector<Edge>& needs) {
  if (pu.blocked.count(buffer)) return false;
  for (size_t si = 0; si < pu.statements.size(); ++si) {
    if (pu.kernel[si] != kernel) continue;
    for (const Access& acc : pu.uses[si].accesses) {
      if (acc.buffer != buffer) continue;
      const Index& index = acc.index;
      if (index[p] == IntExpr(0) && index[p + 1] == IntExpr(0)) continue;
      std::optional<size_t> d = iterator_number(index[p]), d1 = iterator_number(index[p + 1]);
      if (!d || !d1 || *d1 != *d + 1) return false;
      needs.push_back({static_cast<int>(si), static_cast<int>(*d)});
    }
  }
  return true;
}

/** Removes every edge that needs an edge missing from `other`; true when one was removed. */
bool prune(std::map<Edge, std::vector<Edge>>& edges,
           const std::map<Edge, std::vector<Edge>>& other) {
  bool changed = false;
  for (auto it = edges.begin(); it != edges.end();) {
    bool ok = true;
    for (const Edge& e : it->second)
      ok = ok && other.count(e);
    if (ok) {
      ++it;
    } else {
      it = edges.erase(it);
      changed = true;
    }
  }
  return changed;
}

/** Merges the runs of dimension pairs of statement s listed in `merge`; returns how many
 *  dimensions disappeared. */
int merge_dims(Statement& s, const std::set<size_t>& merge) {
  if (merge.empty()) return 0;
  Rewrite r;
  Shape extents;
  for (size_t d = 0; d < s.extents.size();) {
    size_t length = 1;
    IntExpr extent = s.extents[d];
    while (merge.count(d + length - 1)) {
      extent = extent * s.extents[d + length];
      ++length;
    }
    if (length == 1)
      r.single[iterator_name(static_cast<int>(d))] = iter(extents.size());
    else
      r.runs[iterator_name(static_cast<int>(d))] = {length, extents.size()};
    extents.push_back(extent);
    d += length;
  }
  int merged = static_cast<int>(s.extents.size() - extents.size());
  apply(s, r, std::move(extents));
  return merged;
}

}  // namespace

CoalesceCount coalesce_dims(KernelPlan& plan) {
  CoalesceCount count;
  PlanUses pu;
  pu.buffers = static_cast<int>(plan.buffers.size());
  for (size_t ki = 0; ki < plan.kernels.size(); ++ki) {
    for (Statement& s : plan.kernels[ki].statements) {
      pu.statements.push_back(&s);
      pu.kernel.push_back(static_cast<int>(ki));
      pu.written.insert({static_cast<int>(ki), s.buffer});
      if (s.kind != Statement::Kind::call) continue;
      pu.blocked.insert(s.buffer);
      pu.blocked.insert(s.args.begin(), s.args.end());
    }
  }
  for (Statement* s : pu.statements)
    if (s->kind != Statement::Kind::call) count.dropped += drop_unit_dims(*s);
  find_uses(plan, pu);

  // The greatest set of merges whose needs all hold: start from every locally possible one and
  // drop those that need a dropped one until nothing changes.
  std::map<Edge, std::vector<Edge>> dims, positions;
  for (size_t si = 0; si < pu.statements.size(); ++si) {
    const Statement& s = *pu.statements[si];
    if (s.kind == Statement::Kind::call) continue;
    for (size_t d = 0; d + 1 < s.extents.size(); ++d) {
      std::vector<Edge> needs;
      if (dims_mergeable(pu, si, d, needs))
        dims[{static_cast<int>(si), static_cast<int>(d)}] = std::move(needs);
    }
  }
  for (auto [k, b] : pu.written) {
    if (!pu.shapes.count(b)) continue;  // written by calls only
    for (size_t p = 0; p + 1 < pu.shapes.at(b).size(); ++p) {
      std::vector<Edge> needs;
      if (positions_mergeable(pu, k, b, p, needs))
        positions[{form(pu, k, b), static_cast<int>(p)}] = std::move(needs);
    }
  }
  while (prune(dims, positions) | prune(positions, dims)) {
  }

  std::vector<std::set<size_t>> merge(pu.statements.size());
  for (const auto& [edge, needs] : dims)
    merge[edge.first].insert(static_cast<size_t>(edge.second));
  for (size_t si = 0; si < pu.statements.size(); ++si)
    count.merged += merge_dims(*pu.statements[si], merge[si]);
  return count;
}

}  // namespace kiln
