#include "scheduler/carry_scans.h"

#include <map>
#include <set>

#include "scheduler/map_loops.h"

namespace kiln {

const ScalarExpr* carried_load(const KernelPlan& plan, const Statement& s,
                               const std::string& along) {
  if (s.kind != Statement::Kind::assign || !s.value) return nullptr;
  std::vector<const ScalarExpr*> loads;
  collect_loads(*s.value, loads);
  const ScalarExpr* self = nullptr;
  for (const ScalarExpr* l : loads)
    if (l->buffer == s.buffer) {
      if (self || is_gather(*l)) return nullptr;
      self = l;
    }
  if (!self || self->index.size() != s.index.size()) return nullptr;
  // The element read is the one written at the previous value of `along`.
  std::map<std::string, IntExpr> before{{along, IntExpr::var(along) - 1}};
  for (size_t p = 0; p < s.index.size(); ++p)
    if (!(self->index[p] == s.index[p].substitute(before))) return nullptr;
  // Its mask only keeps the element inside the buffer, which an element written always is.
  const Shape& shape = plan.buffers.at(s.buffer).shape;
  for (const MaskBound& m : self->mask) {
    bool inside = false;
    for (size_t p = 0; p < shape.size(); ++p)
      inside |= m.expr == self->index[p] && m.bound == shape[p];
    if (!inside) return nullptr;
  }
  return self;
}

const ScalarExpr* carried_combine(const ScalarExpr& value, const ScalarExpr* before) {
  if (value.kind == ScalarExpr::Kind::op && value.args.size() == 2 && value.args[0].get() == before)
    return &value;
  for (const ScalarExprPtr& a : value.args)
    if (const ScalarExpr* found = carried_combine(*a, before)) return found;
  return nullptr;
}

bool has_scan(const KernelPlan& plan, const Kernel& k) {
  for (const Statement& s : k.statements)
    for (size_t a = 0; a < s.extents.size(); ++a)
      if (carried_load(plan, s, iterator_name(static_cast<int>(a)))) return true;
  return false;
}

namespace {

class Carrier {
 public:
  Carrier(const KernelPlan& plan, const Kernel& k, bool split)
      : plan_(plan), kernel_(k), split_(split) {}

  LoopNodePtr visit(const LoopNodePtr& n) {
    if (n->kind == LoopNode::Kind::stmt) return n;
    if (n->kind == LoopNode::Kind::alloc && n->space != MemorySpace::local) return n;
    if (n->kind == LoopNode::Kind::loop)
      if (LoopNodePtr carried = try_carry(n)) return carried;
    bool loop = n->kind == LoopNode::Kind::loop;
    if (loop) outer_.push_back(n->iter);
    bool changed = false;
    std::vector<LoopNodePtr> body;
    for (const LoopNodePtr& c : n->body) {
      body.push_back(visit(c));
      changed |= body.back() != c;
    }
    if (loop) outer_.pop_back();
    if (!changed) return n;
    auto copy = std::make_shared<LoopNode>(*n);
    copy->body = std::move(body);
    return copy;
  }

  int count() const { return count_; }

 private:
  /** `loop` wrapped in a carried alloc node per scan along it, or null when it has none. */
  LoopNodePtr try_carry(const LoopNodePtr& loop) {
    std::vector<LoopNodePtr> body;
    flatten_blocks(loop->body, body);
    if (loop->step != 1 || loop->mapping != Mapping::serial || !canonical_loop(*loop))
      return nullptr;
    for (const LoopNodePtr& b : body)
      if (b->kind != LoopNode::Kind::stmt || !same_args(*b, *body[0])) return nullptr;
    std::vector<size_t> carried;
    for (size_t p = 0; p < body.size(); ++p)
      if (carries(body, p, loop->iter)) carried.push_back(p);
    if (carried.empty()) return nullptr;
    // Split where the row's length is the same for every row (the loops around may then run
    // the rows one after another, each split: backends/openmp_renderer.h).
    bool split = split_ && splittable(body, carried);
    for (const std::string& it : outer_)
      split &= !uses_iterator(*loop->init, it) && !uses_iterator(*loop->cond, it);
    LoopNodePtr node = loop;
    for (auto p = carried.rbegin(); p != carried.rend(); ++p) {
      const LoopNode& stmt = *body[*p];
      auto alloc = std::make_shared<LoopNode>();
      alloc->kind = LoopNode::Kind::alloc;
      alloc->space = MemorySpace::local;
      alloc->carried = true;
      alloc->mapping = split ? Mapping::parallel : Mapping::serial;
      alloc->statement = stmt.statement;
      // The statement's iterators at the loop's first iteration, where the register is loaded.
      for (const AstExprPtr& arg : stmt.args)
        alloc->args.push_back(substitute(arg, loop->iter, loop->init));
      alloc->name = "carry" + std::to_string(count_++);
      alloc->body = {node};
      node = alloc;
    }
    return node;
  }

  /** Whether stmt nodes `a` and `b` bind their statements' iterators alike. */
  static bool same_args(const LoopNode& a, const LoopNode& b) {
    if (a.args.size() != b.args.size()) return false;
    for (size_t k = 0; k < a.args.size(); ++k)
      if (!same_expr(*a.args[k], *b.args[k])) return false;
    return true;
  }

  const Statement& statement(const LoopNodePtr& n) const {
    return kernel_.statements.at(n->statement);
  }

  static std::vector<const ScalarExpr*> loads_of(const Statement& s) {
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    return loads;
  }

  /** Whether body[p] is a scan along `iter` whose buffer a register may stand for in the whole
   *  body: no other statement writes it, those before it read the element before (the value
   *  the register holds then), those after it the element it writes. */
  bool carries(const std::vector<LoopNodePtr>& body, size_t p, const std::string& iter) const {
    const LoopNode& stmt = *body[p];
    const Statement& s = statement(body[p]);
    std::set<std::string> driven = driven_iterators(stmt, iter);
    if (driven.size() != 1) return false;
    const std::string along = *driven.begin();
    size_t a = 0;
    while (a < stmt.args.size() && iterator_name(static_cast<int>(a)) != along)
      ++a;
    if (a == stmt.args.size() || !plus_iterator(*stmt.args[a], iter)) return false;
    const ScalarExpr* before = carried_load(plan_, s, along);
    if (!before) return false;
    for (size_t q = 0; q < body.size(); ++q) {
      if (q == p) continue;
      const Statement& o = statement(body[q]);
      if (o.buffer == s.buffer || o.kind == Statement::Kind::call) return false;
      for (const ScalarExpr* l : loads_of(o))
        if (l->buffer == s.buffer && !(l->index == (q < p ? before->index : s.index))) return false;
    }
    return true;
  }

  /** Whether the parts of the loop may run at once, its carried statements first on their own:
   *  they read nothing the body writes but their own element before, and every other read of
   *  an element the body writes is a carried one (a register) or one the same iteration wrote
   *  earlier. */
  bool splittable(const std::vector<LoopNodePtr>& body, const std::vector<size_t>& carried) const {
    std::map<int, size_t> writer;
    for (size_t q = 0; q < body.size(); ++q) {
      const Statement& s = statement(body[q]);
      if (s.kind != Statement::Kind::assign || !writer.emplace(s.buffer, q).second) return false;
    }
    std::set<int> registers;
    for (size_t p : carried)
      registers.insert(statement(body[p]).buffer);
    for (size_t q = 0; q < body.size(); ++q) {
      const Statement& s = statement(body[q]);
      bool is_carried = registers.count(s.buffer) > 0;
      for (const ScalarExpr* l : loads_of(s)) {
        auto w = writer.find(l->buffer);
        if (w == writer.end()) continue;
        if (is_carried ? l->buffer == s.buffer : registers.count(l->buffer) > 0) continue;
        if (is_carried || w->second >= q || !(l->index == statement(body[w->second]).index))
          return false;
      }
    }
    return true;
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  bool split_;
  std::vector<std::string> outer_;  // the iterators of the loops around the node visited
  int count_ = 0;
};

}  // namespace

int carry_scans(const KernelPlan& plan, const Kernel& k, LoopNest& nest, bool split) {
  if (!nest.root) return 0;
  Carrier c(plan, k, split);
  nest.root = c.visit(nest.root);
  return c.count();
}

}  // namespace kiln
