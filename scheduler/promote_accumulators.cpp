#include "scheduler/promote_accumulators.h"

#include <set>

#include "scheduler/map_loops.h"

namespace kiln {

namespace {

class Promoter {
 public:
  Promoter(const KernelPlan& plan, const Kernel& k, bool half, int64_t sum_block)
      : plan_(plan), kernel_(k), half_(half), sum_block_(sum_block) {}

  LoopNodePtr visit(const LoopNodePtr& n) {
    if (n->kind == LoopNode::Kind::alloc) return n;  // a register tile (register_tile.h)
    if (n->kind == LoopNode::Kind::loop) {
      if (LoopNodePtr alloc = try_promote(*n)) return alloc;
      if (LoopNodePtr hoisted = hoist_inits(n)) return visit(hoisted);
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
  /** The alloc node that promotes the accumulator of the reduction below `top`, or null. */
  LoopNodePtr try_promote(const LoopNode& top) {
    std::vector<const LoopNode*> loops;
    const LoopNode* stmt = perfect_nest(top, loops);
    if (!stmt) stmt = reduction_beside_stores(top, loops);
    if (!stmt || stmt->statement < 0) return nullptr;
    const Statement& s = kernel_.statements.at(stmt->statement);
    if (s.kind != Statement::Kind::reduce_update) return nullptr;
    DType t = plan_.buffers.at(s.buffer).dtype;
    if (!half_ && (t == DType::f16 || t == DType::bf16)) return nullptr;
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      if (l->buffer == s.buffer) return nullptr;
    // Rectangular: no loop's bounds use an iterator of the nest.
    for (size_t a = 0; a < loops.size(); ++a)
      for (size_t b = 0; b < a; ++b)
        if (uses_iterator(*loops[a]->init, loops[b]->iter) ||
            uses_iterator(*loops[a]->cond, loops[b]->iter))
          return nullptr;
    // The element written must not move inside the nest.
    std::set<std::string> used;
    for (const IntExpr& e : s.index)
      e.collect_vars(used);
    auto promoted = std::make_shared<LoopNode>();
    promoted->kind = LoopNode::Kind::alloc;
    promoted->space = MemorySpace::local;
    promoted->statement = stmt->statement;
    promoted->args.resize(stmt->args.size());
    for (size_t k = 0; k < stmt->args.size(); ++k) {
      if (!used.count(iterator_name(static_cast<int>(k)))) continue;
      for (const LoopNode* l : loops)
        if (uses_iterator(*stmt->args[k], l->iter)) return nullptr;
      promoted->args[k] = stmt->args[k];
    }
    promoted->name = "acc" + std::to_string(count_++);
    promoted->body.push_back(mark_reduction(top));
    if (loops.size() == 1 && s.reduce == ReduceKind::sum && is_float(t) && long_loop(top))
      return in_blocks(top, promoted);
    return promoted;
  }

  /** Whether loop `l` is canonical, steps by 1 and may run more than sum_block_ iterations. */
  bool long_loop(const LoopNode& l) const {
    if (sum_block_ <= 0 || l.step != 1 || !canonical_loop(l)) return false;
    const AstExpr &lo = *l.init, &hi = *l.cond->args[1];
    if (lo.kind != AstExpr::Kind::integer || hi.kind != AstExpr::Kind::integer) return true;
    return hi.value - lo.value + (l.cond->op == "le" ? 1 : 0) > sum_block_;
  }

  /** `alloc` (promoting the sum along loop `top`) as partial sums of blocks of sum_block_
   *  iterations: `for (b = init; b < end; b += block) alloc partial { for (i = b; i < min(b +
   *  block, end); ...) }`, the block loop carrying the sum through the element. */
  LoopNodePtr in_blocks(const LoopNode& top, const LoopNodePtr& alloc) const {
    auto blocks = std::make_shared<LoopNode>(top);
    blocks->iter = top.iter + "b";
    blocks->step = sum_block_;
    blocks->coincident = blocks->only_reductions = blocks->reduction = false;
    blocks->cond = substitute(top.cond, top.iter, ast_iter(blocks->iter));
    auto inner = std::make_shared<LoopNode>(*alloc->body[0]);
    inner->init = ast_iter(blocks->iter);
    AstExprPtr end = top.cond->args[1];
    if (top.cond->op == "le") end = ast_op("add", {end, ast_int(1)});
    inner->cond = ast_op(
        "lt", {ast_iter(top.iter),
               ast_op("min", {ast_op("add", {ast_iter(blocks->iter), ast_int(sum_block_)}), end})});
    auto partial = std::make_shared<LoopNode>(*alloc);
    partial->partial = true;
    partial->body = {inner};
    blocks->body = {partial};
    return blocks;
  }

  /** The reduction of a nest of loops below `top` whose innermost body is several statements,
   *  one of them a reduction whose buffer the others neither read nor write (a softmax's sum
   *  beside the store of its exponentials, scheduler/store_shared.h; on the GPU the loop then
   *  runs across a block's threads, scheduler/map_gpu.h); its loops in `loops`. Null
   *  otherwise. */
  const LoopNode* reduction_beside_stores(const LoopNode& top,
                                          std::vector<const LoopNode*>& loops) const {
    loops.clear();
    const LoopNode* n = &top;
    std::vector<LoopNodePtr> body;
    for (;;) {
      if (n->kind == LoopNode::Kind::loop) loops.push_back(n);
      body.clear();
      flatten_blocks(n->body, body);
      if (n->kind != LoopNode::Kind::loop || body.size() != 1) break;
      n = body[0].get();
    }
    if (loops.empty() || body.size() < 2) return nullptr;
    const LoopNode* found = nullptr;
    for (const LoopNodePtr& c : body) {
      if (c->kind != LoopNode::Kind::stmt) return nullptr;
      const Statement& s = kernel_.statements.at(c->statement);
      if (s.kind == Statement::Kind::reduce_update) {
        if (found) return nullptr;
        found = c.get();
      }
    }
    if (!found) return nullptr;
    int acc = kernel_.statements.at(found->statement).buffer;
    for (const LoopNodePtr& c : body) {
      if (c.get() == found) continue;
      const Statement& s = kernel_.statements.at(c->statement);
      std::vector<const ScalarExpr*> loads;
      if (s.value) collect_loads(*s.value, loads);
      if (s.buffer == acc || s.kind == Statement::Kind::call) return nullptr;
      for (const ScalarExpr* l : loads)
        if (l->buffer == acc) return nullptr;
    }
    return found;
  }

  /** The statements below `n` (stmt nodes, in loops and guards too). */
  static void statements_below(const LoopNode& n, std::vector<const LoopNode*>& out) {
    if (n.kind == LoopNode::Kind::stmt) out.push_back(&n);
    for (const LoopNodePtr& c : n.body)
      statements_below(*c, out);
  }

  /** Whether statement node `n` reads or writes buffer `b`. */
  bool touches(const LoopNode& n, int b) const {
    const Statement& s = kernel_.statements.at(n.statement);
    if (s.buffer == b) return true;
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      if (l->buffer == b) return true;
    return false;
  }

  /** Loop `n` with the reduction inits that run in its first iteration, under a guard
   *  `iter == init` (isl fuses an init into the loop of its update), moved before it, in a
   *  guard that the loop runs at all: a block, or null when there are none or a statement
   *  before the guard in that iteration reads or writes what an init writes. */
  LoopNodePtr hoist_inits(const LoopNodePtr& n) const {
    std::vector<LoopNodePtr> body;
    flatten_blocks(n->body, body);
    std::vector<LoopNodePtr> kept, inits;
    std::vector<const LoopNode*> before;
    for (const LoopNodePtr& c : body) {
      bool first = c->kind == LoopNode::Kind::guard && c->cond &&
                   c->cond->kind == AstExpr::Kind::op && c->cond->op == "eq" &&
                   c->cond->args.size() == 2 && !c->body.empty();
      if (first) {
        const AstExpr& a = *c->cond->args[0];
        const AstExpr& b = *c->cond->args[1];
        AstExpr iter;
        iter.kind = AstExpr::Kind::iterator;
        iter.name = n->iter;
        first = (same_expr(a, iter) && same_expr(b, *n->init)) ||
                (same_expr(b, iter) && same_expr(a, *n->init));
      }
      for (const LoopNodePtr& s : first ? c->body : std::vector<LoopNodePtr>{})
        first = first && s->kind == LoopNode::Kind::stmt &&
                kernel_.statements.at(s->statement).kind == Statement::Kind::reduce_init;
      for (const LoopNodePtr& s : first ? c->body : std::vector<LoopNodePtr>{})
        for (const LoopNode* b : before)
          first = first && !touches(*b, kernel_.statements.at(s->statement).buffer);
      if (first) {
        for (const LoopNodePtr& s : c->body) {
          auto moved = std::make_shared<LoopNode>(*s);
          for (AstExprPtr& a : moved->args)
            a = substitute(a, n->iter, n->init);
          inits.push_back(moved);
        }
        continue;
      }
      statements_below(*c, before);
      kept.push_back(c);
    }
    if (inits.empty()) return nullptr;
    auto runs = std::make_shared<LoopNode>();
    runs->kind = LoopNode::Kind::guard;
    runs->cond = substitute(n->cond, n->iter, n->init);
    runs->body = std::move(inits);
    auto loop = std::make_shared<LoopNode>(*n);
    loop->body = std::move(kept);
    auto block = std::make_shared<LoopNode>();
    block->body = {runs, loop};
    return block;
  }

  /** A copy of the perfect nest below `n` with its loops marked as reduction loops. */
  static LoopNodePtr mark_reduction(const LoopNode& n) {
    auto copy = std::make_shared<LoopNode>(n);
    if (copy->kind == LoopNode::Kind::loop) copy->reduction = true;
    for (LoopNodePtr& c : copy->body)
      c = mark_reduction(*c);
    return copy;
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  bool half_;
  int64_t sum_block_;
  int count_ = 0;
};

}  // namespace

int promote_accumulators(const KernelPlan& plan, const Kernel& k, LoopNest& nest, bool half,
                         int64_t sum_block) {
  if (!nest.root) return 0;
  Promoter p(plan, k, half, sum_block);
  nest.root = p.visit(nest.root);
  return p.count();
}

}  // namespace kiln
