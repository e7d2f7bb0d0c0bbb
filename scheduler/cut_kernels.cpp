#include "scheduler/cut_kernels.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "scheduler/gpu_tile.h"
#include "scheduler/online_softmax.h"
#include "scheduler/plan_values.h"

namespace kiln {

namespace {

std::vector<IntExpr> iterators(size_t rank) {
  std::vector<IntExpr> out;
  for (size_t k = 0; k < rank; ++k)
    out.push_back(IntExpr::var(iterator_name(static_cast<int>(k))));
  return out;
}

std::string extents_key(const std::vector<IntExpr>& extents) {
  std::string key;
  for (const IntExpr& e : extents)
    key += e.key() + ";";
  return key;
}

/** Whether `e` reads every iterator of a domain of `extents` of more than one point: stored over
 *  the domain, a value that does not would be stored again and again along the others (a
 *  weighted sum's probabilities along the output's columns), so it stays inline. */
bool uses_every_iterator(const ScalarExpr& e, const std::vector<IntExpr>& extents) {
  for (size_t d = 0; d < extents.size(); ++d)
    if (extents[d] != IntExpr(1) && !uses_vars(e, {iterator_name(static_cast<int>(d))}))
      return false;
  return true;
}

/** Whether no load of `e` reads every iterator of a domain of `extents` (of more than one
 *  point): stored over the domain, `e` would take more memory than anything it reads (the
 *  outer product of a weighted sum's probabilities and values). */
bool expands(const ScalarExpr& e, const std::vector<IntExpr>& extents) {
  std::vector<const ScalarExpr*> loads;
  collect_loads(e, loads);
  for (const ScalarExpr* l : loads) {
    bool every = true;
    for (size_t d = 0; d < extents.size() && every; ++d)
      every = extents[d] == IntExpr(1) || uses_vars(*l, {iterator_name(static_cast<int>(d))});
    if (every) return false;
  }
  return true;
}

/** Whether `e` is the statement iterator i0 alone. */
bool is_first_iterator(const IntExpr& e) {
  return e.key() == IntExpr::var(iterator_name(0)).key();
}

/** Whether `e` is one cheap operation on loads and constants (a product of two loads):
 *  recomputing it costs less than storing it once and loading it back. */
bool cheaper_than_a_store(const ScalarExpr& e) {
  if (op_cost(e.op) >= kMemoryCost) return false;
  for (const ScalarExprPtr& a : e.args)
    if (a->kind == ScalarExpr::Kind::op) return false;
  return true;
}

/** Whether the first component of `index` that is not a literal (a kept size-1 dimension is
 *  indexed by 0) is the statement iterator i0 alone. */
bool rows_by_first_iterator(const std::vector<IntExpr>& index) {
  for (const IntExpr& e : index)
    if (!e.is_constant()) return is_first_iterator(e);
  return false;
}

/** The statement iterator that `e` is, or -1. */
int iterator_of(const IntExpr& e, size_t rank) {
  for (size_t k = 0; k < rank; ++k)
    if (e.key() == IntExpr::var(iterator_name(static_cast<int>(k))).key())
      return static_cast<int>(k);
  return -1;
}

/** Whether load `l` of `reader` reads, in a row, the element `writer` writes at iterators of
 *  its own: each of the writer's dimensions indexed by an iterator is read at an iterator of
 *  the reader over the same extent (a channels-first norm's statistics [B, 1, P] read at
 *  [b, 0, p]). A reader that reads a row's elements at other
 *  positions (a group norm's statistics, [B, G], read by channel at c / (C / G)) reads across
 *  the writer's threads: fused, the kernel would run one block a row and the writer's other
 *  dimensions in a loop inside it (32 blocks for a batch of 32). So does a reduction
 *  that sums over them (a batch norm's partial sums per (c, b), summed over b). */
bool same_element(const Statement& writer, const Statement& reader, const ScalarExpr& l) {
  if (l.index.size() != writer.index.size()) return false;
  for (size_t d = 0; d < writer.index.size(); ++d) {
    const IntExpr& w = writer.index[d];
    if (w.is_constant()) continue;
    int k = iterator_of(w, writer.extents.size());
    if (k >= 0 && writer.extents[k] == IntExpr(1)) continue;  // one point: a kept dimension
    if (k < 0) continue;  // a scatter's position, written where it falls: the row's to see
    int m = iterator_of(l.index[d], reader.extents.size());
    if (m < 0 || reader.extents[m].key() != writer.extents[k].key()) return false;
    // A reduction over a reduction's elements (partial sums summed again) reads across them.
    if (writer.kind == Statement::Kind::reduce_update &&
        reader.kind == Statement::Kind::reduce_update) {
      bool kept = false;
      for (const IntExpr& e : reader.index)
        kept = kept || iterator_of(e, reader.extents.size()) == m;
      if (!kept) return false;
    }
  }
  return true;
}

/** Whether statement `reader` reads what `writer` writes other than row by row: at another
 *  first index than its own first iterator, or with a writer that does not write row by row
 *  over the same first extent (CutOptions::cut_before_grid_barriers). */
bool reads_across_rows(const Statement& writer, const Statement& reader) {
  if (!reader.value) return false;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*reader.value, loads);
  bool row_writer = rows_by_first_iterator(writer.index) && !writer.extents.empty() &&
                    !reader.extents.empty() && writer.extents[0].key() == reader.extents[0].key();
  for (const ScalarExpr* l : loads)
    if (l->buffer == writer.buffer &&
        (!row_writer || !rows_by_first_iterator(l->index) ||
         (writer.kind != Statement::Kind::reduce_init && !same_element(writer, reader, *l))))
      return true;
  return false;
}

/** Whether statement `p` of `k` sums across rows: a reduction over two or more dimensions whose
 *  element does not move with i0 (a column sum: a layer norm's dgamma, a batch norm's mean), or
 *  the init of one. One block a row cannot run it beside statements that go row by row: mapped
 *  with them, the kernel's only parallel loop would be the row loop it sums over
 *  (CutOptions::cut_before_grid_barriers). */
bool sums_across_rows(const Kernel& k, int p) {
  const int n = static_cast<int>(k.statements.size());
  const Statement& s = k.statements[p];
  auto across = [&](const Statement& u) {
    if (u.kind != Statement::Kind::reduce_update || u.extents.size() < 2) return false;
    for (const IntExpr& e : u.index)
      if (affine_coefficient(e, iterator_name(0)) != std::optional<int64_t>(0)) return false;
    return true;
  };
  if (s.kind != Statement::Kind::reduce_init) return across(s);
  for (int q = p + 1; q < n; ++q)
    if (k.statements[q].buffer == s.buffer && k.statements[q].kind != Statement::Kind::reduce_init)
      return across(k.statements[q]);
  return false;
}

/** Whether `s` is a contraction a tile may block: a sum over a domain of rank 3 or more whose
 *  value is loads and constants; with `reuse`, one of them is reused along an iterator of the
 *  element it updates (a matmul's a along j), as a row sum's (softmax's, a layer norm's,
 *  batched) is not (CutOptions::contractions_reuse_an_operand). */
bool contraction(const Statement& s, bool reuse) {
  if (s.extents.size() < 3 || !gpu_contraction_statement(s)) return false;
  return !reuse || reuses_a_load(s);
}

/** Whether statement `reader` reads what contraction `writer` writes other than as an
 *  epilogue: an assignment over the writer's element domain reading the element it is at. The
 *  reader's trailing dimensions of one point (a sum kept as `[S, N, 1]`) do not count, and its
 *  iterators over them are 0. */
bool reads_beyond_element(const Statement& writer, const Statement& reader) {
  if (!reader.value) return false;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*reader.value, loads);
  size_t rank = reader.extents.size();
  std::map<std::string, IntExpr> unit;
  while (rank > 0 && reader.extents[rank - 1] == IntExpr(1))
    unit[iterator_name(static_cast<int>(--rank))] = IntExpr(0);
  bool epilogue =
      reader.kind == Statement::Kind::assign && rank < writer.extents.size() &&
      std::equal(reader.extents.begin(), reader.extents.begin() + rank, writer.extents.begin());
  for (const ScalarExpr* l : loads) {
    if (l->buffer != writer.buffer) continue;
    if (!epilogue || l->index.size() != writer.index.size()) return true;
    for (size_t d = 0; d < l->index.size(); ++d)
      if (l->index[d].substitute(unit) != writer.index[d]) return true;
  }
  return false;
}

/** Whether `s` is an epilogue of contraction `writer`: an assignment over its element domain
 *  that reads its result, at the element only (the bias and activation of a dense layer). */
bool epilogue_of(const Statement& writer, const Statement& s) {
  if (s.kind != Statement::Kind::assign || !s.value || reads_beyond_element(writer, s))
    return false;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  for (const ScalarExpr* l : loads)
    if (l->buffer == writer.buffer) return true;
  return false;
}

/** The first statement of every group: 0, then each cut, in order. */
std::vector<int> group_starts(const KernelPlan& plan, const Kernel& k,
                              const std::vector<int>& last_write, const CutOptions& opt) {
  int n = static_cast<int>(k.statements.size());
  // clean[p]: every buffer written by statements before p is complete at p.
  std::vector<bool> clean(n + 1, false);
  int written_until = -1;
  for (int p = 1; p <= n; ++p) {
    written_until = std::max(written_until, last_write[k.statements[p - 1].buffer]);
    clean[p] = written_until < p;
  }
  // Softmax-weighted contractions: a kernel each, [first, end).
  std::vector<int> fused_end(n + 1, -1);  // at a fused group's first statement: its end
  std::vector<bool> inside(n + 1, false);
  if (opt.fuse_softmax_contractions)
    for (int p = 0; p < n; ++p)
      if (std::optional<SoftmaxContraction> f = find_softmax_contraction(plan, k, p);
          f && (p == 0 || clean[p]) && clean[f->end]) {
        fused_end[p] = f->end;
        for (int q = p + 1; q < f->end; ++q)
          inside[q] = true;
        p = f->end - 1;
      }
  std::vector<int> starts = {0};
  for (int p = 1; p < n; ++p) {
    const Statement& before = k.statements[p - 1];
    if (inside[p]) continue;
    if (fused_end[p] >= 0 || inside[p - 1]) {
      starts.push_back(p);
      continue;
    }
    if (opt.cut_after_reductions && before.kind == Statement::Kind::reduce_update && clean[p]) {
      starts.push_back(p);
      continue;
    }
    if (opt.cut_around_contractions && clean[p]) {
      bool cut = false;
      const Statement& next = k.statements[p];
      for (int q = p + 1; q < n && !cut && next.kind == Statement::Kind::reduce_init; ++q)
        cut = k.statements[q].buffer == next.buffer &&
              contraction(k.statements[q], opt.contractions_reuse_an_operand);
      for (int w = starts.back(); w < p && !cut; ++w)
        if (contraction(k.statements[w], opt.contractions_reuse_an_operand)) {
          // After its epilogue: a statement that is not one starts the next kernel.
          cut = !epilogue_of(k.statements[w], k.statements[p]);
          for (int r = p; r < n && !cut; ++r)
            cut = reads_beyond_element(k.statements[w], k.statements[r]);
        }
      if (cut) {
        starts.push_back(p);
        continue;
      }
    }
    if (opt.cut_before_grid_barriers && clean[p]) {
      // A statement that reads across rows what the group wrote is cut from it at the latest
      // clean point before it: the statements between stay with the writer (a group norm's
      // variance with its mean, cut from the normalisation that reads both by channel).
      int next_clean = p + 1;
      while (next_clean < n && !clean[next_clean])
        ++next_clean;
      bool across = false;
      for (int w = starts.back(); w < p && !across; ++w)
        for (int r = p; r < next_clean && !across; ++r)
          across = reads_across_rows(k.statements[w], k.statements[r]);
      // Sums across rows and statements row by row take kernels of their own.
      const bool next_sums = sums_across_rows(k, p);
      for (int w = starts.back(); w < p && !across; ++w)
        across = sums_across_rows(k, w) != next_sums;
      if (across) {
        starts.push_back(p);
        continue;
      }
    }
    if (opt.max_statements <= 0 || p - starts.back() < opt.max_statements) continue;
    int at = p;
    for (int c = p; c > starts.back(); --c)
      if (clean[c]) {
        at = c;
        break;
      }
    starts.push_back(at);
  }
  return starts;
}

/** Cuts one kernel; see the rule in cut_kernels.h. */
class Cutter {
 public:
  Cutter(KernelPlan& plan, const Kernel& in, const CutOptions& opt)
      : plan_(plan), in_(in), opt_(opt) {
    last_write_.assign(plan.buffers.size(), -1);
    for (int s = 0; s < static_cast<int>(in.statements.size()); ++s)
      last_write_[in.statements[s].buffer] = s;
    starts_ = group_starts(plan, in, last_write_, opt);
    std::set<const ScalarExpr*> seen;
    for (const Statement& st : in.statements)
      if (st.value) count_uses(st.value, seen);
  }

  /** The kernels, in order, and how many temps were added. */
  std::vector<Kernel> cut(int& materialized) {
    size_t groups = starts_.size();
    if (groups == 1) return {in_};
    std::vector<std::vector<Statement>> body(groups);
    extra_.assign(groups, {});
    after_.assign(groups, {});
    for (size_t g = 0; g < groups; ++g) {
      int end = g + 1 < groups ? starts_[g + 1] : static_cast<int>(in_.statements.size());
      for (int s = starts_[g]; s < end; ++s) {
        Statement st = in_.statements[s];
        if (st.value) {
          // A temp that is its whole value at its own element, over a box, is itself the store
          // a cut would add: the stored value goes straight into it and the statement goes.
          const bool plain = st.kind == Statement::Kind::assign && st.domain.empty() &&
                             plan_.buffers[st.buffer].kind == BufferKind::temp &&
                             st.index == iterators(st.extents.size());
          if (plain) target_ = {st.value.get(), st.buffer};
          st.value = rewrite(st.value, static_cast<int>(g), st.extents);
          target_ = {nullptr, -1};
          if (plain && st.value->kind == ScalarExpr::Kind::load && st.value->buffer == st.buffer)
            continue;
        }
        body[g].push_back(std::move(st));
      }
    }
    std::vector<Kernel> out;
    for (size_t g = 0; g < groups; ++g) {
      Kernel k;
      k.name = in_.name;
      k.statements = std::move(body[g]);
      for (Statement& st : extra_[g])
        k.statements.push_back(std::move(st));
      out.push_back(std::move(k));
      if (!after_[g].empty()) {
        Kernel a;
        a.name = in_.name;
        a.statements = std::move(after_[g]);
        out.push_back(std::move(a));
      }
    }
    for (Kernel& k : out) {
      std::set<int> used;
      for (size_t s = 0; s < k.statements.size(); ++s) {
        Statement& st = k.statements[s];
        st.name = "S" + std::to_string(s);
        used.insert(st.buffer);
        used.insert(st.args.begin(), st.args.end());
        std::vector<const ScalarExpr*> loads;
        if (st.value) collect_loads(*st.value, loads);
        for (const ScalarExpr* load : loads)
          used.insert(load->buffer);
      }
      k.buffers.assign(used.begin(), used.end());
    }
    materialized = materialized_;
    return out;
  }

 private:
  /** Of a value: its loads (counted along every path, up to 2: only "two or more" matters, and
   *  a DAG's path count grows exponentially) and the last statement writing one. */
  struct Info {
    int loads = 0;
    int last_write = -1;
  };

  /** Counts the uses of `e` and, the first time it is seen, of its operands: a value used
   *  once (a normalisation's output expression, read by no other statement) is not stored at
   *  a cut, which would only add a store and a load of it. */
  void count_uses(const ScalarExprPtr& e, std::set<const ScalarExpr*>& seen) {
    ++uses_[e.get()];
    if (!seen.insert(e.get()).second) return;
    std::set<const ScalarExpr*> args;  // a square's operand is one use: the code computes it once
    for (const ScalarExprPtr& a : e->args)
      if (args.insert(a.get()).second) count_uses(a, seen);
  }

  const Info& info(const ScalarExprPtr& e) {
    auto it = info_.find(e.get());
    if (it != info_.end()) return it->second;
    Info f;
    if (e->kind == ScalarExpr::Kind::load) {
      f.loads = 1;
      f.last_write = last_write_[e->buffer];
    }
    for (const ScalarExprPtr& a : e->args) {
      const Info& fa = info(a);
      f.loads = std::min(2, f.loads + fa.loads);
      f.last_write = std::max(f.last_write, fa.last_write);
    }
    return info_.emplace(e.get(), f).first->second;
  }

  /** `e` as group `g` evaluates it over `extents`: its largest subexpressions complete before
   *  the group's start replaced by loads of stored temps. */
  ScalarExprPtr rewrite(const ScalarExprPtr& e, int g, const std::vector<IntExpr>& extents) {
    if (g == 0) return e;
    auto key = std::make_tuple(e.get(), g, extents_key(extents));
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    ScalarExprPtr out = e;
    const Info& f = info(e);
    if (e->kind == ScalarExpr::Kind::op && f.loads >= 2 && f.last_write >= 0 &&
        f.last_write < starts_[g] && (uses_[e.get()] >= 2 || e.get() == target_.first) &&
        uses_every_iterator(*e, extents) && !expands(*e, extents) && !cheaper_than_a_store(*e)) {
      out = store(e, extents);
    } else if (e->kind == ScalarExpr::Kind::op && e->mask.empty() && e->op != Op::where) {
      auto copy = std::make_shared<ScalarExpr>(*e);
      bool changed = false;
      for (ScalarExprPtr& a : copy->args) {
        ScalarExprPtr r = rewrite(a, g, extents);
        changed |= r != a;
        a = r;
      }
      if (changed) out = copy;
    }
    memo_.emplace(key, out);
    return out;
  }

  /** A load of `e` stored over `extents` by a statement at the end of the earliest group that
   *  ends after every buffer `e` reads is complete. */
  ScalarExprPtr store(const ScalarExprPtr& e, const std::vector<IntExpr>& extents) {
    auto key = std::make_pair(e.get(), extents_key(extents));
    if (auto it = stored_.find(key); it != stored_.end()) return it->second;
    int after = static_cast<int>(
        std::upper_bound(starts_.begin(), starts_.end(), info(e).last_write) - starts_.begin());
    int group = after - 1;  // the group holding the last write
    int buffer = target_.second;
    if (e.get() != target_.first) {
      Buffer b;
      b.name = "cut" + std::to_string(plan_.buffers.size());
      b.dtype = e->dtype;
      b.shape = extents;
      b.kind = BufferKind::temp;
      plan_.buffers.push_back(b);
      buffer = static_cast<int>(plan_.buffers.size() - 1);
      last_write_.push_back(-1);  // loads of it are never rewritten again
    }
    Statement st;
    st.kind = Statement::Kind::assign;
    st.extents = extents;
    st.buffer = buffer;
    st.index = iterators(extents.size());
    st.value = rewrite(e, group, extents);
    (joins(group, st) ? extra_ : after_)[group].push_back(std::move(st));
    ++materialized_;
    auto load = std::make_shared<ScalarExpr>();
    load->kind = ScalarExpr::Kind::load;
    load->dtype = e->dtype;
    load->buffer = buffer;
    load->index = iterators(extents.size());
    stored_.emplace(key, load);
    return load;
  }

  /** Whether a statement storing a value may end group `g`: the cuts group_starts made for the
   *  backend would not have put it in a kernel of its own (a value read from a contraction's
   *  result at another element than the one updated, or read across rows where a GPU needs a
   *  grid barrier). Else it goes to a kernel of its own after the group. */
  bool joins(int g, const Statement& st) const {
    int end = g + 1 < static_cast<int>(starts_.size()) ? starts_[g + 1]
                                                       : static_cast<int>(in_.statements.size());
    for (int w = starts_[g]; w < end; ++w) {
      const Statement& writer = in_.statements[w];
      if (opt_.cut_around_contractions && contraction(writer, opt_.contractions_reuse_an_operand) &&
          !epilogue_of(writer, st))
        return false;
      if (opt_.cut_before_grid_barriers && reads_across_rows(writer, st)) return false;
    }
    return true;
  }

  KernelPlan& plan_;
  const Kernel& in_;
  const CutOptions& opt_;
  std::vector<int> last_write_;  ///< per buffer: the last statement of in_ writing it, or -1
  std::vector<int> starts_;
  std::vector<std::vector<Statement>> extra_;  ///< per group: statements storing values
  std::vector<std::vector<Statement>> after_;  ///< per group: the same, in a kernel after it
  /** While a plain temp's statement is rewritten: its whole value and the temp, which a store
   *  of that value writes instead of a buffer of its own. */
  std::pair<const ScalarExpr*, int> target_{nullptr, -1};
  std::unordered_map<const ScalarExpr*, Info> info_;
  std::unordered_map<const ScalarExpr*, int> uses_;  ///< statements' and values' uses of each
  std::map<std::tuple<const ScalarExpr*, int, std::string>, ScalarExprPtr> memo_;
  std::map<std::pair<const ScalarExpr*, std::string>, ScalarExprPtr> stored_;
  int materialized_ = 0;
};

}  // namespace

CutCount cut_kernels(KernelPlan& plan, const CutOptions& opt) {
  CutCount count;
  std::vector<Kernel> out;
  std::vector<Kernel> in = std::move(plan.kernels);
  for (Kernel& k : in) {
    int materialized = 0;
    if (opt.fuse_softmax_contractions) gather_softmax_contractions(plan, k);
    std::vector<Kernel> parts = Cutter(plan, k, opt).cut(materialized);
    count.materialized += materialized;
    for (Kernel& part : parts)
      out.push_back(std::move(part));
  }
  plan.kernels = std::move(out);
  count.kernels = static_cast<int>(plan.kernels.size());
  return count;
}

}  // namespace kiln
