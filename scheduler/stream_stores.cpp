#include "scheduler/stream_stores.h"

#include "scheduler/map_loops.h"

namespace kiln {

namespace {

/** Whether some statement of `k` reads `buffer`. */
bool read_in_kernel(const Kernel& k, int buffer) {
  for (const Statement& s : k.statements) {
    if (!s.value) continue;
    std::vector<const ScalarExpr*> loads;
    collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      if (l->buffer == buffer) return true;
  }
  return false;
}

class Marker {
 public:
  Marker(const KernelPlan& plan, const Kernel& k, int64_t bytes)
      : plan_(plan), kernel_(k), bytes_(bytes) {}

  LoopNodePtr visit(const LoopNodePtr& n) {
    // Inside the blocks of a register-tiled reduction the loops are a tile's epilogue, a few
    // vectors per row: a peel, a tail and a fence around them cost more than they save, and
    // the extra code beside the tile's accumulators made the convolution slower.
    if (n->kind == LoopNode::Kind::loop && n->tile) return n;
    if (n->kind == LoopNode::Kind::loop) {
      int64_t bytes = bytes_ > 0 && streams(*n) ? bytes_ : 0;
      count_ += bytes > 0;
      // A marked loop holds one statement: marking it, or clearing another kernel's mark, is
      // all there is to do.
      if (bytes != n->stream_bytes) {
        auto copy = std::make_shared<LoopNode>(*n);
        copy->stream_bytes = bytes;
        return copy;
      }
      if (bytes > 0) return n;
    }
    if (n->kind == LoopNode::Kind::stmt) return n;
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
  bool streams(const LoopNode& l) const {
    if (l.body.size() != 1 || l.body[0]->kind != LoopNode::Kind::stmt || l.step != 1 ||
        !l.coincident || !canonical_loop(l) || l.mapping == Mapping::parallel)
      return false;
    const LoopNode& stmt = *l.body[0];
    const Statement& s = kernel_.statements.at(stmt.statement);
    if (s.kind != Statement::Kind::assign || !s.value) return false;
    const Buffer& b = plan_.buffers.at(s.buffer);
    if (b.kind != BufferKind::output || (b.dtype != DType::f32 && b.dtype != DType::f64) ||
        s.value->dtype != b.dtype)
      return false;
    std::set<std::string> lanes = driven_iterators(stmt, l.iter);
    if (lanes.size() != 1 || !unit_stride_statement(plan_, kernel_, stmt, l.iter)) return false;
    // The written element moves along the lanes (a store of one element per lane).
    const std::string& lane = *lanes.begin();
    bool moves = false;
    for (const IntExpr& e : s.index)
      moves |= affine_coefficient(e, lane).value_or(0) != 0;
    return moves && lane_value(plan_, *s.value, lanes, b.dtype) &&
           !read_in_kernel(kernel_, s.buffer);
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  int64_t bytes_;
  int count_ = 0;
};

}  // namespace

int stream_stores(const KernelPlan& plan, const Kernel& k, LoopNest& nest, int64_t bytes) {
  if (!nest.root) return 0;
  Marker m(plan, k, bytes);
  nest.root = m.visit(nest.root);
  return m.count();
}

}  // namespace kiln
