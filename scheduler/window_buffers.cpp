#include "scheduler/window_buffers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace kiln {

namespace {

using Prefix = std::vector<int64_t>;

/** The constant leading indices of one access. */
Prefix constant_prefix(const std::vector<IntExpr>& index) {
  Prefix p;
  for (const IntExpr& e : index) {
    std::optional<int64_t> c = e.as_constant();
    if (!c) break;
    p.push_back(*c);
  }
  return p;
}

/** What the accesses of one kernel to each buffer agree on: the common constant prefix, or
 *  nothing (an access with none, or a call statement's whole buffer). */
class Agreement {
 public:
  void access(int buffer, const std::vector<IntExpr>& index) {
    auto [it, fresh] = prefix_.try_emplace(buffer, constant_prefix(index));
    if (fresh) return;
    Prefix p = constant_prefix(index);
    Prefix& have = it->second;
    size_t n = 0;
    while (n < have.size() && n < p.size() && have[n] == p[n])
      ++n;
    have.resize(n);
  }
  void whole(int buffer) { prefix_[buffer].clear(); }
  const std::map<int, Prefix>& prefixes() const { return prefix_; }

 private:
  std::map<int, Prefix> prefix_;
};

void collect(const ScalarExpr& e, Agreement& a) {
  std::vector<const ScalarExpr*> loads;
  collect_loads(e, loads);
  for (const ScalarExpr* l : loads)
    a.access(l->buffer, l->index);
}

/** `e` with every load of a buffer in `to` reading its window: the index's leading dimensions
 *  dropped. Shared subexpressions stay shared. */
ScalarExprPtr rewrite(const ScalarExprPtr& e, const std::map<int, std::pair<int, size_t>>& to,
                      std::map<const ScalarExpr*, ScalarExprPtr>& memo) {
  if (!e) return e;
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  bool changed = false;
  std::vector<ScalarExprPtr> args;
  for (const ScalarExprPtr& a : e->args) {
    args.push_back(rewrite(a, to, memo));
    changed = changed || args.back() != a;
  }
  auto w = e->kind == ScalarExpr::Kind::load ? to.find(e->buffer) : to.end();
  ScalarExprPtr out = e;
  if (changed || w != to.end()) {
    auto copy = std::make_shared<ScalarExpr>(*e);
    copy->args = std::move(args);
    if (w != to.end()) {
      copy->buffer = w->second.first;
      copy->index.erase(copy->index.begin(),
                        copy->index.begin() + static_cast<std::ptrdiff_t>(w->second.second));
    }
    out = copy;
  }
  memo.emplace(e.get(), out);
  return out;
}

}  // namespace

int window_buffers(KernelPlan& plan) {
  int rewritten = 0;
  std::map<std::pair<int, Prefix>, int> windows;  // (buffer, prefix) -> its window
  for (Kernel& k : plan.kernels) {
    Agreement agree;
    for (const Statement& s : k.statements) {
      if (s.kind == Statement::Kind::call) {
        agree.whole(s.buffer);
        for (int b : s.args)
          agree.whole(b);
        continue;
      }
      agree.access(s.buffer, s.index);
      if (s.value) collect(*s.value, agree);
    }
    std::map<int, std::pair<int, size_t>> to;  // buffer -> (window, dimensions dropped)
    for (const auto& [b, prefix] : agree.prefixes()) {
      const Buffer& base = plan.buffers[b];
      if (!is_argument(base) || prefix.empty()) continue;
      Prefix p = prefix;
      if (p.size() >= base.shape.size()) p.resize(base.shape.size() - 1);
      if (p.empty()) continue;
      auto [it, fresh] = windows.try_emplace({b, p}, static_cast<int>(plan.buffers.size()));
      if (fresh) {
        Buffer w = base;
        for (int64_t i : p)
          w.name += "_" + std::to_string(i);
        w.shape.assign(base.shape.begin() + static_cast<std::ptrdiff_t>(p.size()),
                       base.shape.end());
        IntExpr offset = 0;
        for (size_t d = 0; d < p.size(); ++d) {
          IntExpr stride = 1;
          for (size_t e = d + 1; e < base.shape.size(); ++e)
            stride = stride * base.shape[e];
          offset = offset + IntExpr(p[d]) * stride;
        }
        w.window_of = b;
        w.window_offset = offset;
        plan.buffers.push_back(std::move(w));
      }
      to[b] = {it->second, p.size()};
    }
    if (to.empty()) continue;
    std::map<const ScalarExpr*, ScalarExprPtr> memo;
    for (Statement& s : k.statements) {
      if (auto w = to.find(s.buffer); w != to.end()) {
        s.buffer = w->second.first;
        s.index.erase(s.index.begin(),
                      s.index.begin() + static_cast<std::ptrdiff_t>(w->second.second));
      }
      if (s.value) s.value = rewrite(s.value, to, memo);
    }
    for (int& b : k.buffers)
      if (auto w = to.find(b); w != to.end()) b = w->second.first;
    std::sort(k.buffers.begin(), k.buffers.end());
    rewritten += static_cast<int>(to.size());
  }
  return rewritten;
}

}  // namespace kiln
