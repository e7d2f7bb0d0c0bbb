#include "scheduler/map_gpu.h"

#include <set>

#include "scheduler/map_loops.h"

namespace kiln {

namespace {

bool mappable(const LoopNode& n) {
  return n.kind == LoopNode::Kind::loop && n.coincident && canonical_loop(n);
}

bool has_loop(const LoopNode& n) {
  if (n.kind == LoopNode::Kind::loop) return true;
  for (const LoopNodePtr& c : n.body)
    if (has_loop(*c)) return true;
  return false;
}

LoopNodePtr with_mapping(const LoopNodePtr& loop, Mapping m) {
  auto copy = std::make_shared<LoopNode>(*loop);
  copy->mapping = m;
  return copy;
}

LoopNodePtr node_of(LoopNode::Kind kind, std::vector<LoopNodePtr> body) {
  auto n = std::make_shared<LoopNode>();
  n->kind = kind;
  n->body = std::move(body);
  return n;
}

/** The buffers the statements below `n` write and read. */
void buffers_of(const Kernel& k, const LoopNode& n, std::set<int>& writes, std::set<int>& reads) {
  if (n.kind == LoopNode::Kind::stmt) {
    const Statement& s = k.statements.at(n.statement);
    writes.insert(s.buffer);
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      reads.insert(l->buffer);
    for (int b : s.args)
      reads.insert(b);
    if (s.kind == Statement::Kind::reduce_update) reads.insert(s.buffer);
  }
  for (const LoopNodePtr& c : n.body)
    buffers_of(k, *c, writes, reads);
}

/** Whether no child of `children` writes a buffer another one reads or writes: they may run at
 *  once, each across the whole grid, with no barrier between them. */
bool independent(const Kernel& k, const std::vector<LoopNodePtr>& children) {
  std::vector<std::set<int>> writes(children.size()), reads(children.size());
  for (size_t a = 0; a < children.size(); ++a)
    buffers_of(k, *children[a], writes[a], reads[a]);
  for (size_t a = 0; a < children.size(); ++a)
    for (size_t b = 0; b < children.size(); ++b)
      if (a != b)
        for (int w : writes[a])
          if (reads[b].count(w) || writes[b].count(w)) return false;
  return true;
}

class GpuMapper {
 public:
  explicit GpuMapper(const Kernel& k) : kernel_(k) {}
  int count() const { return count_; }

  /** Set when the kernel became one block body, which runs on block 0. */
  bool one_block = false;

  LoopNodePtr root(const LoopNodePtr& n) {
    // A block tile's loop (gpu_tile.h) is mapped already.
    if (n->kind == LoopNode::Kind::loop && n->mapping != Mapping::serial) {
      ++count_;
      return n;
    }
    // A sequence of independent nests: each across the whole grid, one after the other.
    if (n->kind == LoopNode::Kind::block && n->body.size() > 1 && independent(kernel_, n->body)) {
      GpuMapper each(kernel_);
      auto copy = std::make_shared<LoopNode>(*n);
      for (LoopNodePtr& c : copy->body)
        c = each.root(c);
      if (!each.one_block) {
        count_ += each.count();
        return copy;
      }
    }
    // Down single-child blocks and guards: their conditions use sizes only, the same for all.
    if ((n->kind == LoopNode::Kind::block && n->body.size() == 1) ||
        n->kind == LoopNode::Kind::guard) {
      if (n->kind == LoopNode::Kind::guard && n->body.size() != 1) return single_block(n);
      LoopNodePtr c = root(n->body[0]);
      if (c == n->body[0]) return n;
      auto copy = std::make_shared<LoopNode>(*n);
      copy->body = {c};
      return copy;
    }
    if (!mappable(*n)) return single_block(n);
    ++count_;
    auto top = std::make_shared<LoopNode>(*n);
    if (!has_loop(*node_of(LoopNode::Kind::block, n->body))) {
      top->mapping = Mapping::thread_x;
      return top;
    }
    top->mapping = Mapping::block_x;
    if (LoopNodePtr inner = threads_below(n); inner) {
      top->body = {inner};
      return top;
    }
    top->body = block_body(n->body);
    return top;
  }

 private:
  /** `n`'s body with its only loop (below single-child blocks and guards) mapped to threads,
   *  when that loop is mappable; else null. */
  LoopNodePtr threads_below(const LoopNodePtr& n) {
    if (n->body.size() != 1) return nullptr;
    const LoopNodePtr& c = n->body[0];
    if (c->kind == LoopNode::Kind::block || c->kind == LoopNode::Kind::guard) {
      LoopNodePtr inner = threads_below(c);
      if (!inner) return nullptr;
      auto copy = std::make_shared<LoopNode>(*c);
      copy->body = {inner};
      return copy;
    }
    if (!mappable(*c)) return nullptr;
    ++count_;
    return with_mapping(c, Mapping::thread_x);
  }

  /** The whole kernel as one block body, which runs on block 0. */
  LoopNodePtr single_block(const LoopNodePtr& n) {
    one_block = true;
    return node_of(LoopNode::Kind::block, block_body({n}));
  }

  /** A promoted accumulator whose outermost loop strides over the threads, or null. */
  LoopNodePtr block_reduction(const LoopNodePtr& alloc) {
    std::vector<const LoopNode*> loops;
    if (alloc->body.size() != 1 || !perfect_nest(*alloc->body[0], loops) || loops.empty() ||
        !canonical_loop(*loops[0]))
      return nullptr;
    ++count_;
    auto copy = std::make_shared<LoopNode>(*alloc);
    copy->body = {map_first_loop(alloc->body[0])};
    return copy;
  }

  static LoopNodePtr map_first_loop(const LoopNodePtr& n) {
    if (n->kind == LoopNode::Kind::loop) return with_mapping(n, Mapping::thread_x);
    auto copy = std::make_shared<LoopNode>(*n);
    copy->body = {map_first_loop(n->body[0])};
    return copy;
  }

  /** `children` as a block body: thread loops, block reductions and single-thread runs, each
   *  followed by a barrier. */
  std::vector<LoopNodePtr> block_body(const std::vector<LoopNodePtr>& children) {
    std::vector<LoopNodePtr> out;
    std::vector<LoopNodePtr> run;  // consecutive children for one thread
    auto flush = [&] {
      if (run.empty()) return;
      out.push_back(node_of(LoopNode::Kind::single, std::move(run)));
      out.push_back(node_of(LoopNode::Kind::barrier, {}));
      run.clear();
    };
    for (const LoopNodePtr& c : children) {
      LoopNodePtr mapped;
      switch (c->kind) {
        case LoopNode::Kind::loop:
          if (c->mapping != Mapping::serial) {
            mapped = c;  // a block tile's loop (gpu_tile.h): every thread of the block runs it
          } else if (mappable(*c)) {
            ++count_;
            mapped = with_mapping(c, Mapping::thread_x);
          }
          break;
        case LoopNode::Kind::alloc:
          mapped = block_reduction(c);
          break;
        case LoopNode::Kind::block:
        case LoopNode::Kind::guard: {
          // A guard's condition uses sizes and block iterators only: the same for all threads.
          auto copy = std::make_shared<LoopNode>(*c);
          copy->body = block_body(c->body);
          flush();
          out.push_back(copy);
          continue;
        }
        case LoopNode::Kind::barrier:
          flush();
          continue;
        default:
          break;
      }
      if (!mapped) {
        run.push_back(c);
        continue;
      }
      flush();
      out.push_back(mapped);
      out.push_back(node_of(LoopNode::Kind::barrier, {}));
    }
    flush();
    return out;
  }

  const Kernel& kernel_;
  int count_ = 0;
};

}  // namespace

int map_gpu(const Kernel& k, LoopNest& nest) {
  if (!nest.root) return 0;
  GpuMapper m(k);
  nest.root = m.root(nest.root);
  nest.one_block = m.one_block;
  return m.count();
}

}  // namespace kiln
