#include "scheduler/map_gpu.h"

#include <cctype>
#include <set>

#include "scheduler/group_rows.h"
#include "scheduler/loop_algebra.h"
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

/** The loops of the perfect nest from `n` down whose iterations may all run at once:
 *  coincident, canonical, unmapped and rectangular, each the only child of the one before
 *  (through single-child blocks). */
std::vector<LoopNodePtr> coincident_chain(const LoopNodePtr& n) {
  std::vector<LoopNodePtr> chain;
  LoopNodePtr cur = n;
  while (cur->kind == LoopNode::Kind::loop && mappable(*cur) && rectangular(*cur) &&
         cur->mapping == Mapping::serial) {
    chain.push_back(cur);
    const std::vector<LoopNodePtr>* body = &cur->body;
    while (body->size() == 1 && (*body)[0]->kind == LoopNode::Kind::block)
      body = &(*body)[0]->body;
    if (body->size() != 1) break;
    cur = (*body)[0];
  }
  return chain;
}

/** Loops chain[0..count) as one loop `iter` over the product of their trip counts, mapped to
 *  `m`, around `body` with each of their iterators replaced by its value (the first loop the
 *  slowest). A chain of one loop is that loop. */
LoopNodePtr collapse(const std::vector<LoopNodePtr>& chain, size_t count,
                     std::vector<LoopNodePtr> body, Mapping m) {
  if (count == 1) {
    auto copy = std::make_shared<LoopNode>(*chain[0]);
    copy->mapping = m;
    copy->body = std::move(body);
    return copy;
  }
  std::string iter = "g";
  for (size_t c = 0; c < count; ++c)
    iter += "_" + chain[c]->iter;
  AstExprPtr q = ast_iter(iter), total;
  for (size_t o = count; o-- > 0;) {
    AstExprPtr ext = extent(*chain[o]);
    AstExprPtr value = o == 0 ? q : ast_op("pdiv_r", {q, ext});
    if (o > 0) q = ast_op("pdiv_q", {q, ext});
    total = total ? ast_op("mul", {ext, total}) : ext;
    for (LoopNodePtr& c : body)
      c = substitute_node(c, chain[o]->iter, add(chain[o]->init, value));
  }
  auto loop = std::make_shared<LoopNode>(*chain[0]);
  loop->iter = iter;
  loop->init = ast_int(0);
  loop->cond = ast_op("lt", {ast_iter(iter), total});
  loop->step = 1;
  loop->band = -1;
  loop->member = -1;
  loop->mapping = m;
  loop->body = std::move(body);
  return loop;
}

/** The last index of an access that moves through memory: its last component that is not a
 *  literal (a kept size-1 dimension is indexed by 0); null for a scalar. */
const IntExpr* moving_index(const std::vector<IntExpr>& index) {
  for (size_t d = index.size(); d-- > 0;)
    if (!index[d].is_constant()) return &index[d];
  return nullptr;
}

/** Whether index `last` moves to a neighbouring element as one of the iterators `its` steps by
 *  one: its step is ±1 (`g * P + i` moves with g by whole rows of P), or varies with an iterator
 *  (`i % P`, taken to move by one). */
bool moves_by_one(const IntExpr& last, const std::set<std::string>& its) {
  std::set<std::string> vars;
  last.collect_vars(vars);
  for (const std::string& v : vars) {
    if (!its.count(v)) continue;
    IntExpr step = last.substitute({{v, IntExpr::var(v) + 1}}) - last;
    if (std::optional<int64_t> c = step.as_constant()) {
      if (*c == 1 || *c == -1) return true;
      continue;
    }
    std::set<std::string> in_step;
    step.collect_vars(in_step);
    for (const std::string& w : in_step)  // a step that varies with an iterator
      if (w.size() > 1 && w[0] == 'i' && std::isdigit(static_cast<unsigned char>(w[1])))
        return true;
  }
  return false;
}

/** Whether a statement inside a loop below `n` reads or writes memory along that loop, at
 *  elements of its own point of the loops `points` (around `n`): the contiguous index of one of
 *  its accesses moves by one with the loop and depends on the point (a row's sum; a flattened
 *  tensor's slices, `(4096 · s + j) % N`; not a row's statistic that every point reads alike). */
bool walks_along_loops(const Kernel& k, const LoopNode& n, const std::vector<LoopNodePtr>& points) {
  for (const LoopNode* l : loops_of(n))
    for (const LoopNode* st : nodes_of(*l, LoopNode::Kind::stmt)) {
      const Statement& s = k.statements.at(st->statement);
      std::set<std::string> along = driven_iterators(*st, l->iter), own;
      for (const LoopNodePtr& p : points)
        for (const std::string& v : driven_iterators(*st, p->iter))
          own.insert(v);
      std::vector<const std::vector<IntExpr>*> accesses;
      if (s.kind != Statement::Kind::reduce_update) accesses.push_back(&s.index);
      std::vector<const ScalarExpr*> loads;
      if (s.value) collect_loads(*s.value, loads);
      for (const ScalarExpr* ld : loads)
        accesses.push_back(&ld->index);
      for (const std::vector<IntExpr>* a : accesses) {
        std::set<std::string> vars;
        for (const IntExpr& x : *a)
          x.collect_vars(vars);
        bool per_point = false;
        for (const std::string& v : vars)
          per_point = per_point || own.count(v) > 0;
        if (const IntExpr* last = moving_index(*a); last && per_point && moves_by_one(*last, along))
          return true;
      }
    }
  return false;
}

/** Votes of the accesses of statements inside loops below `t` that move with those loops:
 *  `across` counts those whose contiguous index moves with `t` (consecutive threads on `t`
 *  touch neighbouring elements), `along` those whose contiguous index moves with an inner loop
 *  instead (a thread on `t` walks a row that its neighbours walk too, `t`'s stride apart). */
void access_votes(const Kernel& k, const LoopNode& n, const std::string& t, int& across,
                  int& along) {
  if (n.kind != LoopNode::Kind::loop) {
    for (const LoopNodePtr& c : n.body)
      access_votes(k, *c, t, across, along);
    return;
  }
  std::vector<const LoopNode*> inner = loops_of(n);
  for (const LoopNode* st : nodes_of(n, LoopNode::Kind::stmt)) {
    std::set<std::string> mine = driven_iterators(*st, t), theirs;
    for (const LoopNode* l : inner)
      for (const std::string& v : driven_iterators(*st, l->iter))
        theirs.insert(v);
    const Statement& s = k.statements.at(st->statement);
    std::vector<const std::vector<IntExpr>*> accesses;
    if (s.kind != Statement::Kind::reduce_update) accesses.push_back(&s.index);
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      accesses.push_back(&l->index);
    for (const std::vector<IntExpr>* a : accesses) {
      const IntExpr* last = moving_index(*a);
      if (!last) continue;
      std::set<std::string> vars, all;
      last->collect_vars(vars);
      for (const IntExpr& x : *a)
        x.collect_vars(all);
      auto meets = [](const std::set<std::string>& used, const std::set<std::string>& its) {
        for (const std::string& v : used)
          if (its.count(v)) return true;
        return false;
      };
      // An access that stays put while the loops inside run (a row's mean, a channel's
      // weight) is read once per point of `t` however the threads take it: no vote.
      if (!meets(all, theirs)) continue;
      if (moves_by_one(*last, mine))
        ++across;
      else if (moves_by_one(*last, theirs))
        ++along;
    }
  }
}

/** Whether threads on loop `t`, each running `t`'s body alone, read and write memory at least
 *  as contiguously across the threads as the loops inside walk it (the naive matmul: b[k, j]
 *  across threads on j, a[i, k] along k); false when most accesses inside loops run along
 *  them (a row reduction: each thread would walk a row, rows apart). */
bool threads_coalesce(const Kernel& k, const LoopNode& t) {
  int across = 0, along = 0;
  for (const LoopNodePtr& c : t.body)
    access_votes(k, *c, t.iter, across, along);
  return across >= along;
}

/** Whether every thread of a block reaches each barrier below `n` (a block body's) as often as
 *  the others when the block's rows differ per group: no guard whose condition uses an
 *  iterator, no loop mapped to the block, and a loop that holds a barrier, a thread loop or a
 *  promoted accumulator runs from and to bounds of the sizes alone. */
bool uniform_body(const LoopNode& n) {
  for (const LoopNodePtr& c : n.body) {
    if (c->kind == LoopNode::Kind::guard && has_iterator(*c->cond)) return false;
    if (c->kind == LoopNode::Kind::loop && c->mapping != Mapping::serial &&
        c->mapping != Mapping::thread_x)
      return false;
    if (c->kind == LoopNode::Kind::loop && c->mapping == Mapping::serial && !rectangular(*c) &&
        (!nodes_of(*c, LoopNode::Kind::barrier).empty() ||
         !nodes_of(*c, LoopNode::Kind::alloc).empty()))
      return false;
    if (!uniform_body(*c)) return false;
  }
  return true;
}

/** Whether block body `body` holds a block reduction: a promoted accumulator whose loop runs
 *  across the threads. */
bool holds_block_reduction(const std::vector<LoopNodePtr>& body) {
  for (const LoopNodePtr& c : body) {
    if (c->kind == LoopNode::Kind::alloc && c->body.size() == 1 &&
        c->body[0]->mapping == Mapping::thread_x)
      return true;
    if ((c->kind == LoopNode::Kind::block || c->kind == LoopNode::Kind::guard) &&
        holds_block_reduction(c->body))
      return true;
  }
  return false;
}

class GpuMapper {
 public:
  GpuMapper(const Kernel& k, bool lanes) : kernel_(k), lanes_(lanes) {}
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
      GpuMapper each(kernel_, lanes_);
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
    std::vector<LoopNodePtr> chain = coincident_chain(n);
    if (chain.size() >= 2) return chain_root(chain);
    ++count_;
    auto top = std::make_shared<LoopNode>(*n);
    if (!has_loop(*node_of(LoopNode::Kind::block, n->body))) {
      top->mapping = Mapping::thread_x;
      return top;
    }
    if (LoopNodePtr lanes = row_lanes({n}); lanes) return lanes;
    top->mapping = Mapping::block_x;
    if (LoopNodePtr inner = threads_below(n); inner) {
      top->body = {inner};
      return top;
    }
    top->body = block_body(n->body);
    return top;
  }

 private:
  /** A nest whose outer loops `chain` (two or more, coincident and rectangular) may all run at
   *  once:
   *  - loops inside that walk memory along themselves (threads_coalesce false: a row
   *    reduction, a row's exponentials): the chain collapsed into one `block.x` loop, one block
   *    per point of it, and its body a block body (the row across the block's threads);
   *  - otherwise (elementwise work, a naive matmul's k loop): all but the last loop collapsed
   *    into `block.x`, the last `thread.x`, what it holds serial on each thread. A block's point
   *    is recovered by one division per point of the block loop, not one per element (64-bit
   *    division is dozens of instructions on a GPU). */
  LoopNodePtr chain_root(const std::vector<LoopNodePtr>& chain) {
    const std::vector<LoopNodePtr>& body = chain.back()->body;
    ++count_;
    bool loops_inside = has_loop(*node_of(LoopNode::Kind::block, body));
    if (loops_inside && !threads_coalesce(kernel_, *chain.back()))
      return collapse(chain, chain.size(), block_body(body), Mapping::block_x);
    // Loops inside that walk memory across the threads (a sum over a middle axis, one column
    // of [B, C, P] a thread): the whole chain across the grid's threads, a thread a point, its
    // division paid once before the loops. Blocks over the outer loops alone would leave the
    // grid as small as B (32 blocks of a 132-multiprocessor GPU, each thread walking tens of
    // columns in turn).
    if (loops_inside) {
      if (LoopNodePtr lanes = row_lanes(chain); lanes) {
        --count_;
        return lanes;
      }
      return collapse(chain, chain.size(), body, Mapping::thread_x);
    }
    ++count_;
    auto last = std::make_shared<LoopNode>(*chain.back());
    last->mapping = Mapping::thread_x;
    return collapse(chain, chain.size() - 1, {last}, Mapping::block_x);
  }

  /** The rows of the coincident loops `chain` (collapsed into one `block.x` loop) as
   *  interleaved groups of lanes (LoopNode::lanes_apart), where the loops inside walk memory
   *  across the rows and hold a reduction: a column sum `y[b, c] = sum(x[b, p, c], p)`, one
   *  thread a point, left B · C threads each summing P terms in order (16 384 threads of
   *  3136 terms under-fill an H200 tenfold); a warp's threads take consecutive points still, and
   *  each point's sum is split among lanes a warp or more apart (group_rows.h chooses how many
   *  at run time, one where the points alone fill the device). Null otherwise: the body is no
   *  groupable block body, or its barriers would not be reached alike by rows that differ. */
  LoopNodePtr row_lanes(const std::vector<LoopNodePtr>& chain) {
    if (!lanes_ || !threads_coalesce(kernel_, *chain.back())) return nullptr;
    const std::vector<LoopNodePtr>& body = chain.back()->body;
    if (!has_loop(*node_of(LoopNode::Kind::block, body)) ||
        walks_along_loops(kernel_, *node_of(LoopNode::Kind::block, body), chain))
      return nullptr;
    GpuMapper inner(kernel_, lanes_);
    auto loop = std::make_shared<LoopNode>(
        *collapse(chain, chain.size(), inner.block_body(body), Mapping::block_x));
    loop->lanes_apart = true;
    if (!holds_block_reduction(loop->body) || !uniform_body(*loop) || !groupable_lanes(*loop))
      return nullptr;
    count_ += inner.count() + 1;
    return loop;
  }

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

  /** A promoted accumulator whose outermost loop strides over the threads, or null. Its loops
   *  end in the reduction alone, or in the reduction beside statements that store elementwise
   *  (scheduler/promote_accumulators.h), when that loop carries nothing but the reduction. */
  LoopNodePtr block_reduction(const LoopNodePtr& alloc) {
    std::vector<const LoopNode*> loops;
    if (alloc->body.size() != 1 || alloc->body[0]->kind != LoopNode::Kind::loop ||
        !canonical_loop(*alloc->body[0]))
      return nullptr;
    if (!perfect_nest(*alloc->body[0], loops) && !alloc->body[0]->only_reductions) return nullptr;
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

  /** Whether coincident loop `n` is better run an iteration at a time by the whole block than
   *  a thread an iteration: its body holds a promoted accumulator that a block can reduce across
   *  its threads (block_reduction), its bounds use no iterator (the same trip count on every
   *  thread, so the barriers inside are reached by all), and threads on it would each walk a
   *  row of their own: the reductions' accesses move along their loops, not across `n`
   *  (`for g { sum over the group's elements }`). */
  bool rows_of_reductions(const LoopNode& n) const {
    if (!rectangular(n)) return false;
    std::vector<LoopNodePtr> body;
    flatten_blocks(n.body, body);
    int across = 0, along = 0;
    for (const LoopNodePtr& c : body) {
      if (c->kind != LoopNode::Kind::alloc || c->body.size() != 1 ||
          c->body[0]->kind != LoopNode::Kind::loop || !canonical_loop(*c->body[0]))
        continue;
      std::vector<const LoopNode*> loops;
      if (perfect_nest(*c->body[0], loops) || c->body[0]->only_reductions)
        access_votes(kernel_, *c->body[0], n.iter, across, along);
    }
    return along > across;
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
          } else if (mappable(*c) && rows_of_reductions(*c)) {
            // Each iteration a row the block reduces across its threads (a group norm's
            // groups): the loop runs on every thread alike, its body a block body.
            auto copy = std::make_shared<LoopNode>(*c);
            copy->body = block_body(c->body);
            flush();
            out.push_back(copy);
            continue;
          } else if (mappable(*c) && rectangular(*c) && !threads_coalesce(kernel_, *c)) {
            // Threads on it would each walk a row (`for c for p y[b, c, p]`): the loop inside,
            // when it is one, goes to the threads, and this one runs alike on all of them.
            auto copy = std::make_shared<LoopNode>(*c);
            copy->body = {threads_below(c)};
            if (copy->body[0]) {
              mapped = copy;
            } else {
              ++count_;
              mapped = with_mapping(c, Mapping::thread_x);
            }
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
  bool lanes_;
  int count_ = 0;
};

}  // namespace

int map_gpu(const Kernel& k, LoopNest& nest, bool row_lanes) {
  if (!nest.root) return 0;
  GpuMapper m(k, row_lanes);
  nest.root = m.root(nest.root);
  nest.one_block = m.one_block;
  return m.count();
}

}  // namespace kiln
