#include "scheduler/split_column_sums.h"

#include <set>
#include <vector>

namespace kiln {

namespace {

/** The buffers statement `s` reads: its loads and a call's arguments. */
std::set<int> reads(const Statement& s) {
  std::set<int> out(s.args.begin(), s.args.end());
  std::vector<const ScalarExpr*> loads;
  if (s.value) collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    out.insert(l->buffer);
  return out;
}

/** Whether `s` writes with its first iterator in its index: an element per row. */
bool writes_along_first(const Statement& s) {
  if (s.extents.empty()) return false;
  std::set<std::string> vars;
  for (const IntExpr& e : s.index)
    e.collect_vars(vars);
  return vars.count(iterator_name(0)) > 0;
}

/** Whether `s` is an update that reduces along its first iterator: it reads along it and its
 *  index does not use it. */
bool column_update(const Statement& s) {
  if (s.kind != Statement::Kind::reduce_update || s.extents.empty() || !s.value) return false;
  return !writes_along_first(s) && uses_vars(*s.value, {iterator_name(0)});
}

/** The statements of `k` that move for buffer `r`, or nothing where the conditions fail: those
 *  that write it (its init and updates), and after them those that read what moving statements
 *  write without writing an element per row themselves (a mean's division of the sum, a
 *  loss's scale: they move along, so that nothing left behind reads the sums). */
std::vector<size_t> movable(const Kernel& k, int r) {
  std::vector<size_t> group;
  std::set<int> written = {r};
  for (size_t p = 0; p < k.statements.size(); ++p) {
    const Statement& s = k.statements[p];
    bool writes = s.buffer == r;
    std::set<int> read = reads(s);
    bool reads_moved = false;
    for (int b : written)
      reads_moved = reads_moved || read.count(b) > 0;
    if (writes) {
      if (s.kind != Statement::Kind::reduce_init && s.kind != Statement::Kind::reduce_update)
        return {};
    } else if (reads_moved) {
      if (writes_along_first(s) || s.kind == Statement::Kind::call) return {};
      written.insert(s.buffer);
    } else {
      continue;
    }
    group.push_back(p);
  }
  std::set<size_t> in(group.begin(), group.end());
  for (size_t p : group) {
    std::set<int> read = reads(k.statements[p]);
    for (size_t q = p + 1; q < k.statements.size(); ++q)
      if (!in.count(q) &&
          (read.count(k.statements[q].buffer) || k.statements[q].buffer == k.statements[p].buffer))
        return {};
  }
  return group;
}

/** The buffers the statements of `k` touch, for Kernel::buffers. */
std::vector<int> used_buffers(const Kernel& k) {
  std::set<int> used;
  for (const Statement& s : k.statements) {
    used.insert(s.buffer);
    std::set<int> r = reads(s);
    used.insert(r.begin(), r.end());
  }
  return {used.begin(), used.end()};
}

}  // namespace

int split_column_sums(KernelPlan& plan) {
  int moved = 0;
  std::vector<Kernel> out;
  for (Kernel& k : plan.kernels) {
    std::set<size_t> take;
    std::set<int> seen;
    int here = 0;
    for (const Statement& s : k.statements) {
      if (!column_update(s) || !seen.insert(s.buffer).second) continue;
      std::vector<size_t> group = movable(k, s.buffer);
      if (group.empty()) continue;
      take.insert(group.begin(), group.end());
      ++here;
    }
    bool rows_stay = false;
    for (size_t p = 0; p < k.statements.size(); ++p)
      rows_stay = rows_stay || (!take.count(p) && writes_along_first(k.statements[p]));
    if (take.empty() || !rows_stay) {
      out.push_back(std::move(k));
      continue;
    }
    moved += here;
    Kernel rest, columns;
    rest.name = columns.name = k.name;
    for (size_t p = 0; p < k.statements.size(); ++p)
      (take.count(p) ? columns : rest).statements.push_back(std::move(k.statements[p]));
    for (Kernel* part : {&rest, &columns}) {
      for (size_t s = 0; s < part->statements.size(); ++s)
        part->statements[s].name = "S" + std::to_string(s);
      part->buffers = used_buffers(*part);
      out.push_back(std::move(*part));
    }
  }
  plan.kernels = std::move(out);
  return moved;
}

}  // namespace kiln
