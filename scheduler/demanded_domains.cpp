#include "scheduler/demanded_domains.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace kiln {

namespace {

/** Buffer dimension -> the iterator that alone moves it (dimensions with a constant index are
 *  left out); nullopt unless each dimension is a constant or one iterator with coefficient 1 and
 *  no iterator moves two dimensions. */
std::optional<std::map<int, std::string>> plain_index(const std::vector<IntExpr>& index,
                                                      const std::set<std::string>& iterators) {
  std::map<int, std::string> out;
  std::set<std::string> seen;
  for (size_t d = 0; d < index.size(); ++d) {
    std::set<std::string> vars;
    index[d].collect_vars(vars);
    bool moves = false;
    for (const std::string& v : vars)
      if (iterators.count(v)) moves = true;
    if (!moves) {
      if (!vars.empty()) return std::nullopt;  // a size: not a constant dimension we can match
      continue;
    }
    std::optional<std::string> v = index[d].as_var();
    if (!v || !seen.insert(*v).second) return std::nullopt;
    out[static_cast<int>(d)] = *v;
  }
  return out;
}

std::set<std::string> iterators_of(const Statement& s) {
  std::set<std::string> out;
  for (size_t a = 0; a < s.extents.size(); ++a)
    out.insert(iterator_name(static_cast<int>(a)));
  return out;
}

/** The name standing for buffer dimension `d` in bounds on a buffer (no spec name has an `@`). */
std::string dim_var(int d) {
  return "@d" + std::to_string(d);
}

/** The bounds `r` puts on the buffer it reads at `index`, in terms of dim_var(k) (buffer
 *  dimension k); nullopt where a bound uses an iterator that does not index the buffer. */
std::optional<std::vector<IntExpr>> bounds_on_buffer(const Statement& r,
                                                     const std::vector<IntExpr>& index) {
  std::set<std::string> its = iterators_of(r);
  std::optional<std::map<int, std::string>> dims = plain_index(index, its);
  if (!dims) return std::nullopt;
  std::map<std::string, IntExpr> to_dim;
  for (const auto& [d, v] : *dims)
    to_dim[v] = IntExpr::var(dim_var(d));
  std::vector<IntExpr> out;
  for (const IntExpr& b : r.domain) {
    std::set<std::string> vars;
    b.collect_vars(vars);
    for (const std::string& v : vars)
      if (its.count(v) && !to_dim.count(v)) return std::nullopt;
    out.push_back(b.substitute(to_dim));
  }
  return out;
}

std::string key(const std::vector<IntExpr>& bounds) {
  std::set<std::string> parts;
  for (const IntExpr& b : bounds)
    parts.insert(b.str());
  std::string out;
  for (const std::string& p : parts)
    out += p + ";";
  return out;
}

/** Every read of buffer `b` in `plan`: (statement, load); false if some read is gathered. */
bool reads_of(const KernelPlan& plan, int b,
              std::vector<std::pair<const Statement*, const ScalarExpr*>>& out) {
  for (const Kernel& k : plan.kernels)
    for (const Statement& s : k.statements) {
      if (s.kind == Statement::Kind::call) {
        for (int a : s.args)
          if (a == b) return false;
        continue;
      }
      if (!s.value) continue;
      std::vector<const ScalarExpr*> loads;
      collect_loads(*s.value, loads);
      for (const ScalarExpr* l : loads) {
        if (l->buffer != b) continue;
        if (!l->args.empty() || !l->mask.empty()) return false;
        out.push_back({&s, l});
      }
    }
  return true;
}

}  // namespace

std::optional<std::vector<IntExpr>> read_bounds(const KernelPlan& plan, int b,
                                                const Statement& writer) {
  std::optional<std::map<int, std::string>> dims = plain_index(writer.index, iterators_of(writer));
  if (!dims) return std::nullopt;
  std::vector<std::pair<const Statement*, const ScalarExpr*>> reads;
  if (!reads_of(plan, b, reads) || reads.empty()) return std::nullopt;
  std::optional<std::vector<IntExpr>> bounds;
  for (const auto& [r, load] : reads) {
    std::optional<std::vector<IntExpr>> on = bounds_on_buffer(*r, load->index);
    if (!on || on->empty() || (bounds && key(*bounds) != key(*on))) return std::nullopt;
    bounds = on;
  }
  std::map<std::string, IntExpr> to_iterator;
  for (const auto& [d, v] : *dims)
    to_iterator[dim_var(d)] = IntExpr::var(v);
  std::vector<IntExpr> out;
  for (const IntExpr& e : *bounds) {
    // A bound on a dimension the writer holds constant says nothing of its iterators.
    std::set<std::string> vars;
    e.collect_vars(vars);
    for (const std::string& v : vars)
      if (v.rfind("@d", 0) == 0 && !to_iterator.count(v)) return std::nullopt;
    out.push_back(e.substitute(to_iterator));
  }
  return out;
}

int restrict_demanded_domains(KernelPlan& plan) {
  // The one statement writing each temporary, or null where several (or a reduction) do.
  std::map<int, Statement*> writer;
  std::set<int> shared;
  for (Kernel& k : plan.kernels)
    for (Statement& s : k.statements) {
      if (s.buffer < 0) continue;
      if (writer.count(s.buffer) || s.kind != Statement::Kind::assign) shared.insert(s.buffer);
      writer[s.buffer] = &s;
    }
  int count = 0;
  for (auto& [b, w] : writer) {
    if (shared.count(b) || plan.buffers[b].kind != BufferKind::temp || !w->domain.empty()) continue;
    std::optional<std::map<int, std::string>> dims = plain_index(w->index, iterators_of(*w));
    if (!dims || dims->size() != w->extents.size()) continue;
    std::optional<std::vector<IntExpr>> bounds = read_bounds(plan, b, *w);
    if (!bounds) continue;
    w->domain = *bounds;
    ++count;
  }
  return count;
}

}  // namespace kiln
