#include "scheduler/schedule_cache.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include "scheduler/gpu_tile.h"
#include "scheduler/group_rows.h"
#include "scheduler/online_softmax.h"
#include "scheduler/register_tile.h"
#include "scheduler/stream_stores.h"

namespace kiln {

namespace {

/** Numbers buffers by first appearance and writes the shape of each when first seen. */
class Renumber {
 public:
  explicit Renumber(const KernelPlan& plan) : plan_(plan) {}

  std::string buffer(int b) {
    auto [it, fresh] = number_.try_emplace(b, static_cast<int>(number_.size()));
    if (fresh) order_.push_back(b);
    std::string out = "B" + std::to_string(it->second);
    if (fresh) {
      out += "<" + std::string(dtype_name(plan_.buffers[b].dtype)) + ":";
      for (const IntExpr& d : plan_.buffers[b].shape)
        out += d.key() + ",";
      out += ">";
    }
    return out;
  }

  /** The buffers in the order they were numbered. */
  const std::vector<int>& order() const { return order_; }

 private:
  const KernelPlan& plan_;
  std::map<int, int> number_;
  std::vector<int> order_;
};

std::string index_text(const std::vector<IntExpr>& index) {
  std::string out = "[";
  for (const IntExpr& i : index)
    out += i.key() + ",";
  return out + "]";
}

/** The tree of `e` without its leaves' buffers and indices: which subexpressions a GPU block
 *  tile stages, and whether its update is a product of two loads (scheduler/gpu_tile.h). */
std::string value_shape(const ScalarExpr& e) {
  std::string out = e.mask.empty() ? "" : "?";
  switch (e.kind) {
    case ScalarExpr::Kind::load:
      return out + "L";
    case ScalarExpr::Kind::iterator:
      return out + "I";
    case ScalarExpr::Kind::constant:
      return out + "C";
    case ScalarExpr::Kind::op:
      break;
  }
  out += std::string(op_name(e.op)) + ":" + std::string(dtype_name(e.dtype)) + "(";
  for (const ScalarExprPtr& a : e.args)
    out += value_shape(*a) + ",";
  return out + ")";
}

/** `n` with the buffers of its TMA copies (StagedOperand::tma_buffer) renamed by `to`: a
 *  schedule reused for another kernel reads that kernel's buffers. Nodes are shared, so the
 *  path to each renamed tile is copied. */
LoopNodePtr rename_tensor_maps(const LoopNodePtr& n, const std::map<int, int>& to) {
  std::shared_ptr<LoopNode> copy;
  auto own = [&] {
    if (!copy) copy = std::make_shared<LoopNode>(*n);
    return copy.get();
  };
  for (size_t i = 0; i < n->staged.size(); ++i)
    if (auto it = to.find(n->staged[i].tma_buffer);
        n->staged[i].tma_buffer >= 0 && it != to.end() && it->second != it->first)
      own()->staged[i].tma_buffer = it->second;
  for (size_t i = 0; i < n->body.size(); ++i)
    if (LoopNodePtr c = rename_tensor_maps(n->body[i], to); c != n->body[i]) own()->body[i] = c;
  return copy ? copy : n;
}

}  // namespace

std::string kernel_shape_key(const KernelPlan& plan, const Kernel& k) {
  return kernel_shape_key(plan, k, nullptr);
}

std::string kernel_shape_key(const KernelPlan& plan, const Kernel& k, std::vector<int>* buffers) {
  Renumber names(plan);
  std::string key;
  for (const Statement& s : k.statements) {
    key += std::to_string(static_cast<int>(s.kind)) + " " + index_text(s.extents) + " ";
    key +=
        names.buffer(s.buffer) + index_text(s.index) + index_text(s.domain) + index_text(s.needed);
    // Register tiling depends on the reduction and on what the value computes along each
    // iterator (scheduler/register_tile.h).
    if (s.kind == Statement::Kind::reduce_update) {
      key += " r" + std::to_string(static_cast<int>(s.reduce)) + ":";
      for (size_t a = 0; a < s.extents.size(); ++a)
        key += tileable_statement(plan, s, {iterator_name(static_cast<int>(a))}) ? "t" : "-";
      key += gpu_contraction_statement(s) ? "g" : "-";  // scheduler/gpu_tile.h
      // A block tile keeps the result of a temporary no other kernel accesses in registers.
      key += private_temporary(plan, s.buffer) ? "p" : "-";
      if (s.value) key += " " + value_shape(*s.value);
      // The matrix unit takes products of bf16 or 8-bit loads only, the operands' types.
      key += matrix_statement(plan, s, true, true) ? "m" : "-";
    }
    if (s.kind == Statement::Kind::call) {
      key += " " + s.routine;
      for (int b : s.args)
        key += " " + names.buffer(b);
    }
    std::vector<const ScalarExpr*> loads;
    if (s.value) collect_loads(*s.value, loads);
    for (const ScalarExpr* load : loads)
      key += " " + names.buffer(load->buffer) + index_text(load->index);
    key += "\n";
  }
  if (is_softmax_contraction_kernel(plan, k)) key += "online softmax\n";  // online_softmax.h
  if (buffers) *buffers = names.order();
  return key;
}

ScheduledKernel ScheduleCache::reuse(const KernelPlan& plan, const Kernel& k,
                                     const Entry& earlier) {
  ++hits_;
  ScheduledKernel reused = earlier.schedule;
  reused.milliseconds = 0;
  // The nest names the earlier kernel's buffers where its tiles copy through tensor maps.
  std::vector<int> mine;
  kernel_shape_key(plan, k, &mine);
  std::map<int, int> to;
  for (size_t i = 0; i < mine.size() && i < earlier.buffers.size(); ++i)
    to[earlier.buffers[i]] = mine[i];
  if (reused.nest.root) reused.nest.root = rename_tensor_maps(reused.nest.root, to);
  // Which loops stream depends on what this kernel writes (an output or a temporary).
  if (!opt_.backend_gpu) stream_stores(plan, k, reused.nest, opt_.stream_bytes);
  // The threads per row depend on the narrowest element this kernel moves.
  if (opt_.backend_gpu && opt_.gpu_row_groups) group_rows(plan, k, reused.nest);
  return reused;
}

ScheduledKernel ScheduleCache::schedule(const KernelPlan& plan, const Kernel& k) {
  Entry fresh;
  std::string key = kernel_shape_key(plan, k, &fresh.buffers);
  if (auto it = by_key_.find(key); it != by_key_.end()) return reuse(plan, k, it->second);
  fresh.schedule = schedule_kernel(plan, k, opt_);
  return by_key_.emplace(std::move(key), std::move(fresh)).first->second.schedule;
}

std::vector<ScheduledKernel> ScheduleCache::schedule_all(const KernelPlan& plan, unsigned threads) {
  const size_t n = plan.kernels.size();
  std::vector<std::string> keys(n);
  std::vector<std::vector<int>> buffers(n);
  std::vector<size_t> fresh;  // the kernels whose key this cache has not seen, first of each
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = kernel_shape_key(plan, plan.kernels[i], &buffers[i]);
    if (!by_key_.count(keys[i]) && first.emplace(keys[i], i).second) fresh.push_back(i);
  }

  std::vector<ScheduledKernel> computed(fresh.size());
  std::vector<std::exception_ptr> errors(fresh.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j = next++; j < fresh.size(); j = next++) {
      try {
        computed[j] = schedule_kernel(plan, plan.kernels[fresh[j]], opt_);
      } catch (...) {
        errors[j] = std::current_exception();
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t helpers = std::min<size_t>(threads, fresh.size()) - (fresh.empty() ? 0 : 1);
  std::vector<std::thread> pool;
  for (size_t t = 0; t < helpers; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool)
    t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);

  for (size_t j = 0; j < fresh.size(); ++j)
    by_key_.emplace(keys[fresh[j]], Entry{std::move(computed[j]), buffers[fresh[j]]});
  std::vector<ScheduledKernel> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Entry& e = by_key_.at(keys[i]);
    auto it = first.find(keys[i]);
    out.push_back(it != first.end() && it->second == i ? e.schedule
                                                       : reuse(plan, plan.kernels[i], e));
  }
  return out;
}

}  // namespace kiln
