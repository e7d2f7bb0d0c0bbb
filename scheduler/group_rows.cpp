#include "scheduler/group_rows.h"

#include <algorithm>

#include "scheduler/loop_algebra.h"

namespace kiln {

namespace {

/** Whether `n`, a node of a block body, runs within the threads of one row: no block tile,
 *  shared buffer, packed panel, register tile or scan carried across threads below it, and
 *  no loop mapped to blocks. Appends the thread loops it holds to `threads`. */
bool within_a_row(const LoopNode& n, std::vector<const LoopNode*>& threads) {
  switch (n.kind) {
    case LoopNode::Kind::loop:
      if (n.mapping == Mapping::thread_x)
        threads.push_back(&n);
      else if (n.mapping != Mapping::serial && n.mapping != Mapping::unroll)
        return false;
      if (n.stream_bytes > 0) return false;
      break;
    case LoopNode::Kind::alloc:
      if (n.space != MemorySpace::local || n.tile_rows > 0 || n.pack_depth > 0 || n.k_lanes > 0 ||
          (n.carried && n.mapping == Mapping::parallel))
        return false;
      break;
    default:
      break;
  }
  for (const LoopNodePtr& c : n.body)
    if (!within_a_row(*c, threads)) return false;
  return true;
}

/** `e` with its subexpressions of integers alone evaluated (a loop's extent comes as
 *  `max((1534 + 1) - 767, 0)`). */
AstExprPtr fold(const AstExprPtr& e) {
  if (e->kind != AstExpr::Kind::op) return e;
  std::vector<AstExprPtr> args;
  std::vector<int64_t> v;
  for (const AstExprPtr& a : e->args) {
    args.push_back(fold(a));
    if (args.back()->kind == AstExpr::Kind::integer) v.push_back(args.back()->value);
  }
  if (v.size() == args.size()) {
    const std::string& op = e->op;
    if (op == "minus" && v.size() == 1) return ast_int(-v[0]);
    if (op == "select" && v.size() == 3) return ast_int(v[0] ? v[1] : v[2]);
    if (op == "max" || op == "min") {
      int64_t r = v[0];
      for (int64_t x : v)
        r = op == "max" ? std::max(r, x) : std::min(r, x);
      return ast_int(r);
    }
    if (v.size() == 2) {
      const int64_t a = v[0], b = v[1];
      if (op == "add") return ast_int(a + b);
      if (op == "sub") return ast_int(a - b);
      if (op == "mul") return ast_int(a * b);
      if (op == "gt") return ast_int(a > b);
      if (op == "ge") return ast_int(a >= b);
      if (op == "lt") return ast_int(a < b);
      if (op == "le") return ast_int(a <= b);
      if (op == "eq") return ast_int(a == b);
    }
  }
  auto copy = std::make_shared<AstExpr>(*e);
  copy->args = std::move(args);
  return copy;
}

/** The threads per row of `loop`, a `block.x` loop with a block body: a constant, or an
 *  expression of the sizes; null when the body cannot be grouped or T is the whole block. */
AstExprPtr threads_per_row(const LoopNode& loop, int64_t bytes) {
  std::vector<const LoopNode*> threads;
  for (const LoopNodePtr& c : loop.body)
    if (!within_a_row(*c, threads)) return nullptr;
  if (threads.empty()) return nullptr;
  std::vector<AstExprPtr> extents;
  int64_t longest = 0;
  for (const LoopNode* t : threads) {
    if (!rectangular(*t)) return nullptr;
    AstExprPtr e = fold(extent(*t));
    if (e->kind == AstExpr::Kind::integer)
      longest = std::max(longest, e->value);
    else if (std::none_of(extents.begin(), extents.end(),
                          [&](const AstExprPtr& x) { return same_expr(*x, *e); }))
      extents.push_back(e);
  }
  if (extents.empty()) {
    int64_t t = row_group_threads(longest, bytes);
    return t >= 256 ? nullptr : ast_int(t);
  }
  if (longest > 0) extents.push_back(ast_int(longest));
  AstExprPtr row = extents.size() == 1 ? extents[0] : ast_op("max", extents);
  // The same choice as row_group_threads, at run time.
  const int64_t most = 32 * kRowVectorsPerThread * (16 / bytes);
  return ast_op("select", {ast_op("le", {row, ast_int(most)}), ast_int(32), ast_int(256)});
}

/** The lanes a row of `loop` (a `block.x` loop with lanes_apart, its rows' groups interleaved)
 *  takes, an expression of the sizes: a power of two up to 16, each lane summing at least 8 of
 *  its row's terms, and more lanes only while the rows' threads stay under 2^19 (an H200 holds
 *  270 336 at once), so that few long rows (a mean pool's 16 384 channels of 3136 pixels, a
 *  norm's column sums over 4096 rows) fill the device while many short ones keep a thread each
 *  and no combine. Null when the body cannot be grouped. */
AstExprPtr lanes_per_row(const LoopNode& loop) {
  std::vector<const LoopNode*> threads;
  for (const LoopNodePtr& c : loop.body)
    if (!within_a_row(*c, threads)) return nullptr;
  if (threads.empty() || !rectangular(loop)) return nullptr;
  std::vector<AstExprPtr> extents;
  for (const LoopNode* t : threads) {
    if (!rectangular(*t)) return nullptr;
    extents.push_back(fold(extent(*t)));
  }
  AstExprPtr row = extents.size() == 1 ? extents[0] : ast_op("max", extents);
  AstExprPtr rows = fold(extent(loop));
  AstExprPtr lanes = ast_int(1);
  for (int64_t k = 2; k <= kMaxRowLanes; k *= 2) {
    AstExprPtr enough = ast_op("le", {ast_int(8 * k), row});
    AstExprPtr few = ast_op("le", {ast_op("mul", {rows, ast_int(k)}), ast_int(int64_t{1} << 19)});
    lanes = ast_op("select", {ast_op("and", {enough, few}), ast_int(k), lanes});
  }
  return lanes;
}

class Grouper {
 public:
  explicit Grouper(int64_t bytes) : bytes_(bytes) {}
  int count = 0;

  LoopNodePtr visit(const LoopNodePtr& n) {
    if (n->kind == LoopNode::Kind::loop && n->mapping == Mapping::block_x) {
      AstExprPtr t = n->lanes_apart ? lanes_per_row(*n) : threads_per_row(*n, bytes_);
      if (!t && !n->group_threads) return n;
      auto copy = std::make_shared<LoopNode>(*n);
      copy->group_threads = t;
      count += t ? 1 : 0;
      return copy;
    }
    if (n->kind == LoopNode::Kind::loop && n->mapping != Mapping::serial) return n;
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
  int64_t bytes_;
};

}  // namespace

bool groupable_lanes(const LoopNode& loop) {
  return lanes_per_row(loop) != nullptr;
}

int64_t row_group_threads(int64_t length, int64_t bytes) {
  return length <= 32 * kRowVectorsPerThread * (16 / std::clamp<int64_t>(bytes, 1, 16)) ? 32 : 256;
}

int64_t narrowest_element(const KernelPlan& plan, const Kernel& k) {
  int64_t bytes = 16;
  auto note = [&](int buffer) {
    bytes = std::min<int64_t>(bytes, std::max(dtype_bits(plan.buffers.at(buffer).dtype) / 8, 1));
  };
  for (const Statement& s : k.statements) {
    if (s.buffer >= 0) note(s.buffer);
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* l : loads)
      note(l->buffer);
  }
  return bytes;
}

int group_rows(const KernelPlan& plan, const Kernel& k, LoopNest& nest) {
  if (!nest.root || nest.one_block) return 0;
  Grouper g(narrowest_element(plan, k));
  nest.root = g.visit(nest.root);
  return g.count;
}

}  // namespace kiln
