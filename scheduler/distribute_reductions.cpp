#include "scheduler/distribute_reductions.h"

#include <map>
#include <set>
#include <vector>

#include "scheduler/map_loops.h"

namespace kiln {

namespace {

/** The iterators of statement `s` that `index` uses. */
std::set<std::string> index_vars(const std::vector<IntExpr>& index) {
  std::set<std::string> vars;
  for (const IntExpr& e : index)
    e.collect_vars(vars);
  return vars;
}

bool meets(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& v : a)
    if (b.count(v)) return true;
  return false;
}

/** Whether stmt nodes `a` and `b` run their statements at the same point of each iteration. */
bool same_args(const LoopNode& a, const LoopNode& b) {
  if (a.args.size() != b.args.size()) return false;
  for (size_t d = 0; d < a.args.size(); ++d)
    if ((a.args[d] == nullptr) != (b.args[d] == nullptr) ||
        (a.args[d] && !same_expr(*a.args[d], *b.args[d])))
      return false;
  return true;
}

/** The reduce_init statement node guarded in `n` (isl's `if (j == 0) init` fused into the first
 *  iteration of the loop that updates it, promote_accumulators.h), or null. */
const LoopNode* guarded_init(const Kernel& k, const LoopNode& n) {
  if (n.kind != LoopNode::Kind::guard || n.body.size() != 1 ||
      n.body[0]->kind != LoopNode::Kind::stmt)
    return nullptr;
  const LoopNode* s = n.body[0].get();
  return k.statements.at(s->statement).kind == Statement::Kind::reduce_init ? s : nullptr;
}

/** The statements of loop `l`, one a loop (a reduction's guarded init in its update's), when
 *  they may run one after the other (see the header); empty otherwise. */
std::vector<LoopNodePtr> distributed(const Kernel& k, const LoopNode& l) {
  if (l.kind != LoopNode::Kind::loop || l.mapping != Mapping::serial || l.coincident ||
      !canonical_loop(l))
    return {};
  std::vector<LoopNodePtr> items;
  flatten_blocks(l.body, items);
  std::vector<LoopNodePtr> body;                  // the statements, in order
  std::map<int, std::vector<LoopNodePtr>> inits;  // by buffer: guarded inits not yet updated
  std::vector<std::vector<LoopNodePtr>> parts;
  int reductions = 0;
  for (const LoopNodePtr& n : items) {
    if (const LoopNode* init = guarded_init(k, *n)) {
      inits[k.statements.at(init->statement).buffer].push_back(n);
      continue;
    }
    if (n->kind != LoopNode::Kind::stmt) return {};
    const Statement& s = k.statements.at(n->statement);
    bool moves = meets(index_vars(s.index), driven_iterators(*n, l.iter));
    if (s.kind == Statement::Kind::reduce_update) {
      if (moves) return {};
      ++reductions;
      parts.push_back(inits[s.buffer]);
      inits.erase(s.buffer);
    } else if (s.kind != Statement::Kind::assign || !moves) {
      return {};
    } else {
      parts.emplace_back();
    }
    parts.back().push_back(n);
    body.push_back(n);
  }
  for (const auto& [buffer, pending] : inits)
    if (!pending.empty()) return {};  // an init whose update is elsewhere
  if (reductions < 2) return {};
  for (size_t b = 0; b < body.size(); ++b) {
    const Statement& sb = k.statements.at(body[b]->statement);
    std::vector<const ScalarExpr*> loads;
    if (sb.value) collect_loads(*sb.value, loads);
    for (const ScalarExpr* load : loads) {
      if (load->buffer == sb.buffer) return {};  // an update reads its element through its kind
      for (size_t a = 0; a < body.size(); ++a) {
        if (a == b) continue;
        const Statement& sa = k.statements.at(body[a]->statement);
        if (load->buffer != sa.buffer) continue;
        // A later statement's writes, or an earlier one's at another element or iteration.
        if (a > b || sa.kind != Statement::Kind::assign || load->index != sa.index ||
            !same_args(*body[a], *body[b]))
          return {};
      }
    }
    for (size_t a = 0; a < body.size(); ++a)
      if (a != b && k.statements.at(body[a]->statement).buffer == sb.buffer) return {};
  }
  std::vector<LoopNodePtr> out;
  for (std::vector<LoopNodePtr>& part : parts) {
    auto copy = std::make_shared<LoopNode>(l);
    copy->coincident = k.statements.at(part.back()->statement).kind == Statement::Kind::assign;
    copy->body = std::move(part);
    out.push_back(copy);
  }
  return out;
}

class Distributor {
 public:
  explicit Distributor(const Kernel& k) : kernel_(k) {}
  int count = 0;

  LoopNodePtr visit(const LoopNodePtr& n) {
    if (std::vector<LoopNodePtr> parts = distributed(kernel_, *n); !parts.empty()) {
      ++count;
      auto block = std::make_shared<LoopNode>();
      block->kind = LoopNode::Kind::block;
      block->body = std::move(parts);
      return block;
    }
    std::vector<LoopNodePtr> body;
    bool changed = false;
    for (const LoopNodePtr& c : n->body) {
      body.push_back(visit(c));
      changed |= body.back() != c;
    }
    if (!changed) return n;
    auto copy = std::make_shared<LoopNode>(*n);
    copy->body = std::move(body);
    return copy;
  }

 private:
  const Kernel& kernel_;
};

}  // namespace

int distribute_reductions(const Kernel& k, LoopNest& nest) {
  if (!nest.root) return 0;
  Distributor d(k);
  nest.root = d.visit(nest.root);
  return d.count;
}

}  // namespace kiln
