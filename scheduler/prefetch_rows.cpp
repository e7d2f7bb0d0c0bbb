#include "scheduler/prefetch_rows.h"

#include <algorithm>

#include "scheduler/map_loops.h"

namespace kiln {

namespace {

constexpr int64_t kLineBytes = 64;
/** Lines a strip prefetches: a strip of one line would be shorter than the vectorised loop's
 *  body (16 lanes interleaved 4 times: 64 f32), which then never runs. */
constexpr int64_t kStripLines = 4;

/** The statement instances of pass `n` (a loop whose body, blocks flattened, is statement
 *  instances only), or none where `n` is not one. */
std::vector<LoopNodePtr> pass_statements(const LoopNode& n) {
  std::vector<LoopNodePtr> body;
  if (n.kind != LoopNode::Kind::loop) return body;
  flatten_blocks(n.body, body);
  bool all = std::all_of(body.begin(), body.end(),
                         [](const LoopNodePtr& c) { return c->kind == LoopNode::Kind::stmt; });
  return all ? body : std::vector<LoopNodePtr>{};
}

bool is_pass(const LoopNode& n) {
  return !pass_statements(n).empty();
}

/** Whether some argument of statement node `s` uses iterator `iter`. */
bool uses(const LoopNode& s, const std::string& iter) {
  return std::any_of(s.args.begin(), s.args.end(),
                     [&](const AstExprPtr& a) { return a && uses_iterator(*a, iter); });
}

/** Whether `e` computes an exponential, logarithm or sine: a pass of those is bound by its
 *  arithmetic long enough to hide the next row's fetch (a variance's pass is not: strips there
 *  cost layernorm 12 %). Each shared subexpression is visited once (`seen`): a backward graph's
 *  value is a DAG whose tree is exponentially large. */
bool transcendental(const ScalarExpr& e, std::set<const ScalarExpr*>& seen) {
  if (!seen.insert(&e).second) return false;
  if (e.kind == ScalarExpr::Kind::op && (e.op == Op::exp2 || e.op == Op::log2 || e.op == Op::sin))
    return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [&](const ScalarExprPtr& a) { return a && transcendental(*a, seen); });
}

class Prefetcher {
 public:
  Prefetcher(const KernelPlan& plan, const Kernel& k) : plan_(plan), kernel_(k) {}

  LoopNodePtr visit(const LoopNodePtr& n) {
    if (n->kind == LoopNode::Kind::stmt || n->kind == LoopNode::Kind::prefetch) return n;
    if (row_loop(*n)) {
      std::vector<const LoopNode*> passes;
      if (collect(*n, n->iter, passes) && passes.size() >= 3) {
        std::map<const LoopNode*, LoopNodePtr> strips;
        for (size_t p = 1; p + 1 < passes.size(); ++p)
          if (LoopNodePtr s = strip(*n, *passes[p])) strips[passes[p]] = s;
        if (!strips.empty()) {
          count_ += static_cast<int>(strips.size());
          return replace(n, strips);
        }
      }
    }
    bool changed = false;
    std::vector<LoopNodePtr> body;
    for (const LoopNodePtr& c : n->body) {
      body.push_back(visit(c));
      changed |= body.back() != c;
    }
    if (!changed) return n;
    auto copy = std::make_shared<LoopNode>(*n);
    copy->body = std::move(body);
    return copy;
  }

  int count() const { return count_; }

 private:
  static bool row_loop(const LoopNode& n) {
    return n.kind == LoopNode::Kind::loop && !n.tile && n.step > 0 && canonical_loop(n) &&
           (n.mapping == Mapping::serial || n.mapping == Mapping::parallel) && !is_pass(n);
  }

  /** The passes below `n` in order, through blocks, plain allocs, guards free of `row` and loops
   *  holding one pass; false where anything else lies there (the row loop is then another). */
  static bool collect(const LoopNode& n, const std::string& row,
                      std::vector<const LoopNode*>& passes) {
    for (const LoopNodePtr& c : n.body) {
      switch (c->kind) {
        case LoopNode::Kind::stmt:
          continue;
        case LoopNode::Kind::loop: {
          if (std::vector<LoopNodePtr> body = pass_statements(*c); !body.empty()) {
            if (std::any_of(body.begin(), body.end(),
                            [&](const LoopNodePtr& s) { return uses(*s, row); }))
              passes.push_back(c.get());
            continue;
          }
          std::vector<const LoopNode*> inner;
          if (c->tile || !collect(*c, row, inner) || inner.size() > 1) return false;
          passes.insert(passes.end(), inner.begin(), inner.end());
          continue;
        }
        case LoopNode::Kind::alloc:
          if (c->space != MemorySpace::local || c->tile_rows > 0 || c->pack_depth > 0 ||
              c->matrix || c->k_lanes > 0 || c->carried || !collect(*c, row, passes))
            return false;
          continue;
        case LoopNode::Kind::guard:
          if (uses_iterator(*c->cond, row) || !collect(*c, row, passes)) return false;
          continue;
        case LoopNode::Kind::block:
          if (!collect(*c, row, passes)) return false;
          continue;
        default:
          return false;
      }
    }
    return true;
  }

  /** Pass `p` of row loop `r` in strips of kStripLines lines, each prefetching the next row's,
   *  or null. */
  LoopNodePtr strip(const LoopNode& r, const LoopNode& p) const {
    if (p.step != 1 || !canonical_loop(p) || p.stream_bytes > 0 || p.tile ||
        (p.mapping != Mapping::serial && p.mapping != Mapping::simd))
      return nullptr;
    std::set<int> covered;
    std::vector<const LoopNode*> picked;
    int64_t widest = 1;
    for (const LoopNodePtr& s : pass_statements(p)) {
      if (!uses(*s, r.iter) || driven_iterators(*s, p.iter).empty() ||
          !unit_stride_statement(plan_, kernel_, *s, p.iter))
        continue;
      const Statement& st = kernel_.statements.at(s->statement);
      if (st.kind == Statement::Kind::call || st.kind == Statement::Kind::scatter) continue;
      // A reduction's element stays in its register (promote_accumulators): its loads count.
      std::set<int> buffers;
      if (st.kind == Statement::Kind::assign) buffers.insert(st.buffer);
      std::vector<const ScalarExpr*> loads;
      if (st.value) collect_loads(*st.value, loads);
      for (const ScalarExpr* l : loads)
        if (l->mask.empty() && !is_gather(*l)) buffers.insert(l->buffer);
      bool adds = false;
      for (int b : buffers) {
        adds |= covered.insert(b).second;
        widest = std::max<int64_t>(widest, dtype_bits(plan_.buffers.at(b).dtype) / 8);
      }
      if (adds) picked.push_back(s.get());
    }
    bool heavy = false;
    std::set<const ScalarExpr*> seen;
    for (const LoopNodePtr& s : pass_statements(p))
      if (const Statement& st = kernel_.statements.at(s->statement); st.value)
        heavy = heavy || transcendental(*st.value, seen);
    if (picked.empty() || !heavy) return nullptr;
    const int64_t per_line = std::max<int64_t>(1, kLineBytes / widest);
    const int64_t lines = per_line * kStripLines;
    const std::string outer = p.iter + "p";
    auto at = ast_iter(outer);
    auto next = ast_op("add", {ast_iter(r.iter), ast_int(r.step)});
    auto fetch = std::make_shared<LoopNode>();
    fetch->kind = LoopNode::Kind::guard;
    fetch->cond = substitute(r.cond, r.iter, next);
    for (int64_t line = 0; line < kStripLines; ++line) {
      auto along = line ? ast_op("add", {at, ast_int(line * per_line)}) : at;
      for (const LoopNode* s : picked) {
        auto f = std::make_shared<LoopNode>();
        f->kind = LoopNode::Kind::prefetch;
        f->statement = s->statement;
        for (const AstExprPtr& a : s->args)
          f->args.push_back(a ? substitute(substitute(a, r.iter, next), p.iter, along) : a);
        fetch->body.push_back(f);
      }
    }
    auto inner = std::make_shared<LoopNode>(p);
    inner->init = at;
    const AstExpr& c = *p.cond;
    int64_t last = c.op == "le" ? lines - 1 : lines;
    inner->cond =
        ast_op(c.op, {c.args[0], ast_op("min", {ast_op("add", {at, ast_int(last)}), c.args[1]})});
    auto s = std::make_shared<LoopNode>(p);
    s->iter = outer;
    s->cond = substitute(p.cond, p.iter, at);
    s->step = lines;
    s->mapping = Mapping::serial;
    s->simd_lanes = 0;
    s->body = {fetch, inner};
    return s;
  }

  static LoopNodePtr replace(const LoopNodePtr& n,
                             const std::map<const LoopNode*, LoopNodePtr>& strips) {
    if (auto it = strips.find(n.get()); it != strips.end()) return it->second;
    if (n->kind == LoopNode::Kind::stmt) return n;
    bool changed = false;
    std::vector<LoopNodePtr> body;
    for (const LoopNodePtr& c : n->body) {
      body.push_back(replace(c, strips));
      changed |= body.back() != c;
    }
    if (!changed) return n;
    auto copy = std::make_shared<LoopNode>(*n);
    copy->body = std::move(body);
    return copy;
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  int count_ = 0;
};

}  // namespace

int prefetch_rows(const KernelPlan& plan, const Kernel& k, LoopNest& nest) {
  if (!nest.root) return 0;
  Prefetcher p(plan, k);
  nest.root = p.visit(nest.root);
  return p.count();
}

}  // namespace kiln
