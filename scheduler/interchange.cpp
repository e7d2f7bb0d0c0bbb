#include "scheduler/interchange.h"

#include <set>

#include "scheduler/carry_scans.h"
#include "scheduler/map_loops.h"

namespace kiln {

namespace {

/** The statements at the bottom of `n`, a nest of loops (and blocks) with one child each down to
 *  a body of statements only, some in guards whose conditions do not use iterator `outer` (a
 *  reduction's init in its loop's first iteration); `loops` gets the nest's loops. Empty when
 *  `n` is not such a nest. */
std::vector<const LoopNode*> nest_statements(const LoopNode& n, std::vector<const LoopNode*>& loops,
                                             const std::string& outer) {
  if (const LoopNode* stmt = perfect_nest(n, loops)) return {stmt};
  loops.clear();
  const LoopNode* at = &n;
  while (at->kind == LoopNode::Kind::loop || at->kind == LoopNode::Kind::block) {
    if (at->kind == LoopNode::Kind::loop) loops.push_back(at);
    if (at->body.size() != 1) break;
    at = at->body[0].get();
  }
  std::vector<LoopNodePtr> flat;
  flatten_blocks(at->body, flat);
  std::vector<const LoopNode*> stmts;
  for (const LoopNodePtr& c : flat) {
    std::vector<LoopNodePtr> guarded;
    if (c->kind == LoopNode::Kind::guard && !uses_iterator(*c->cond, outer))
      flatten_blocks(c->body, guarded);
    else
      guarded = {c};
    for (const LoopNodePtr& g : guarded) {
      if (g->kind != LoopNode::Kind::stmt || g->statement < 0) return {};
      stmts.push_back(g.get());
    }
  }
  if (loops.empty()) return {};
  return stmts;
}

/** Whether statement node `stmt` writes an element that moves with loop `outer`. */
bool writes_along(const Kernel& k, const LoopNode& stmt, const LoopNode& outer) {
  std::set<std::string> written;
  for (const IntExpr& e : k.statements.at(stmt.statement).index)
    e.collect_vars(written);
  for (size_t a = 0; a < stmt.args.size(); ++a)
    if (uses_iterator(*stmt.args[a], outer.iter) &&
        written.count(iterator_name(static_cast<int>(a))))
      return true;
  return false;
}

/** Whether `child` is a reduction nest that loop `outer` may sink into: a nest of canonical,
 *  non-coincident loops whose bounds do not use `outer`'s iterator, ending in a reduction update
 *  that writes along `outer` and reads unit-stride or invariantly in it (or as a register tile
 *  reads, `packed`). The innermost loop may also hold assignments beside the update (a softmax
 *  over a middle axis stores `e = exp(x - m)` where it sums it) when every statement there
 *  writes along `outer` and accesses memory unit-stride or invariantly in it: `outer` carries no
 *  dependence, so it moves below the loops with the statements' order within it kept. */
bool sinkable(const KernelPlan& plan, const Kernel& k, const LoopNode& outer, const LoopNode& child,
              bool packed) {
  if (child.kind != LoopNode::Kind::loop || child.coincident) return false;
  std::vector<const LoopNode*> loops;
  std::vector<const LoopNode*> stmts = nest_statements(child, loops, outer.iter);
  if (stmts.empty()) return false;
  for (const LoopNode* l : loops)
    if (!canonical_loop(*l) || uses_iterator(*l->init, outer.iter) ||
        uses_iterator(*l->cond, outer.iter))
      return false;
  if (stmts.size() > 1) {
    bool update = false;
    for (const LoopNode* stmt : stmts) {
      const Statement& s = k.statements.at(stmt->statement);
      if (s.kind != Statement::Kind::reduce_update && s.kind != Statement::Kind::assign &&
          s.kind != Statement::Kind::reduce_init)
        return false;
      for (const LoopNode* l : loops)
        for (const std::string& it : driven_iterators(*stmt, l->iter))
          if (carried_load(plan, s, it)) return false;
      if (!unit_stride_statement(plan, k, *stmt, outer.iter) || !writes_along(k, *stmt, outer))
        return false;
      update |= s.kind == Statement::Kind::reduce_update;
    }
    return update;
  }
  const LoopNode* stmt = stmts[0];
  const Statement& s = k.statements.at(stmt->statement);
  // A scan along one of the nest's loops (carry_scans.h) sinks as a reduction does.
  bool scan = false;
  for (const LoopNode* l : loops)
    for (const std::string& it : driven_iterators(*stmt, l->iter))
      scan |= carried_load(plan, s, it) != nullptr;
  if (s.kind != Statement::Kind::reduce_update && !scan) return false;
  // Under a register tile (`packed`) an operand may also be read at every second element, or
  // gathered by the pack of a one-loop reduction (register_tile.h).
  if (!unit_stride_statement(plan, k, *stmt, outer.iter) &&
      !(packed && !scan && loops.size() == 1 && packable_statement(plan, k, *stmt, outer.iter)) &&
      !(packed && !scan && stride2_statement(plan, k, *stmt, outer.iter)))
    return false;
  // The element written moves with `outer`: the reduction is over the inner loops only.
  return writes_along(k, *stmt, outer);
}

/** Whether coincident loop `outer` may sink below `child` so that its statement's accesses run
 *  unit-stride: `child` is a perfect nest of canonical coincident loops whose bounds do not use
 *  `outer`'s iterator around a statement that is not a reduction's, and that statement accesses
 *  memory unit-stride or invariantly in `outer` but not in the nest's innermost loop
 *  (`for j for i y[i, j] = x[i, j] - mean[j]`, which walks y and x by columns). */
bool interchangeable(const KernelPlan& plan, const Kernel& k, const LoopNode& outer,
                     const LoopNode& child) {
  if (child.kind != LoopNode::Kind::loop || !child.coincident) return false;
  std::vector<const LoopNode*> loops;
  const LoopNode* stmt = perfect_nest(child, loops);
  if (!stmt || stmt->statement < 0) return false;
  for (const LoopNode* l : loops)
    if (!l->coincident || !canonical_loop(*l) || uses_iterator(*l->init, outer.iter) ||
        uses_iterator(*l->cond, outer.iter))
      return false;
  const Statement& s = k.statements.at(stmt->statement);
  if (s.kind != Statement::Kind::assign) return false;
  for (const LoopNode* l : loops)
    for (const std::string& it : driven_iterators(*stmt, l->iter))
      if (carried_load(plan, s, it)) return false;
  return unit_stride_statement(plan, k, *stmt, outer.iter) &&
         !unit_stride_statement(plan, k, *stmt, loops.back()->iter);
}

/** `loop` with `body` as its body. */
LoopNodePtr with_body(const LoopNode& loop, std::vector<LoopNodePtr> body) {
  auto copy = std::make_shared<LoopNode>(loop);
  copy->body = std::move(body);
  return copy;
}

/** The nest `n` (nest_statements) with `outer` wrapped around its statements. */
LoopNodePtr wrap_innermost(const LoopNodePtr& n, const LoopNode& outer) {
  if (n->kind == LoopNode::Kind::stmt) return with_body(outer, {n});
  auto copy = std::make_shared<LoopNode>(*n);
  if (n->body.size() == 1) {
    copy->body = {wrap_innermost(n->body[0], outer)};
  } else {
    std::vector<LoopNodePtr> stmts;
    flatten_blocks(n->body, stmts);
    copy->body = {with_body(outer, std::move(stmts))};
  }
  return copy;
}

LoopNodePtr sink(const KernelPlan& plan, const Kernel& k, const LoopNodePtr& n, bool packed,
                 int& count) {
  if (n->kind == LoopNode::Kind::stmt) return n;
  auto copy = std::make_shared<LoopNode>(*n);
  bool changed = false;
  for (LoopNodePtr& c : copy->body) {
    LoopNodePtr m = sink(plan, k, c, packed, count);
    changed |= m != c;
    c = m;
  }
  const LoopNodePtr& self = changed ? LoopNodePtr(copy) : n;
  if (n->kind != LoopNode::Kind::loop || !n->coincident || !canonical_loop(*n)) return self;
  std::vector<LoopNodePtr> children;
  flatten_blocks(self->body, children);

  bool any = false, strided = false;
  for (const LoopNodePtr& c : children) {
    any |= sinkable(plan, k, *self, *c, packed);
    strided |= interchangeable(plan, k, *self, *c);
  }
  if (!any && strided) {
    // Distributed into runs of the other children, which keep one copy of the loop between them
    // (a reduction's init and update stay together for promote_accumulators), and the strided
    // nests, below which it sinks.
    ++count;
    auto seq = std::make_shared<LoopNode>();
    seq->kind = LoopNode::Kind::block;
    std::vector<LoopNodePtr> run;
    auto close_run = [&] {
      if (!run.empty()) seq->body.push_back(with_body(*self, std::move(run)));
      run.clear();
    };
    for (const LoopNodePtr& c : children) {
      if (!interchangeable(plan, k, *self, *c)) {
        run.push_back(c);
        continue;
      }
      close_run();
      seq->body.push_back(wrap_innermost(c, *with_body(*self, {})));
    }
    close_run();
    return seq;
  }
  if (!any) return self;
  // Distributed over the children; below the reduction loops where it can go.
  ++count;
  auto seq = std::make_shared<LoopNode>();
  seq->kind = LoopNode::Kind::block;
  for (const LoopNodePtr& c : children)
    seq->body.push_back(sinkable(plan, k, *self, *c, packed) || interchangeable(plan, k, *self, *c)
                            ? wrap_innermost(c, *with_body(*self, {}))
                            : with_body(*self, {c}));
  return seq;
}

}  // namespace

int sink_below_reductions(const KernelPlan& plan, const Kernel& k, LoopNest& nest, bool packed) {
  int count = 0;
  if (nest.root) nest.root = sink(plan, k, nest.root, packed, count);
  return count;
}

}  // namespace kiln
