#include "scheduler/schedule_cache.h"

#include <vector>

#include "scheduler/gpu_tile.h"
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
    std::string out = "B" + std::to_string(it->second);
    if (fresh) {
      out += "<" + std::string(dtype_name(plan_.buffers[b].dtype)) + ":";
      for (const IntExpr& d : plan_.buffers[b].shape)
        out += d.key() + ",";
      out += ">";
    }
    return out;
  }

 private:
  const KernelPlan& plan_;
  std::map<int, int> number_;
};

std::string index_text(const std::vector<IntExpr>& index) {
  std::string out = "[";
  for (const IntExpr& i : index)
    out += i.key() + ",";
  return out + "]";
}

}  // namespace

std::string kernel_shape_key(const KernelPlan& plan, const Kernel& k) {
  Renumber names(plan);
  std::string key;
  for (const Statement& s : k.statements) {
    key += std::to_string(static_cast<int>(s.kind)) + " " + index_text(s.extents) + " ";
    key += names.buffer(s.buffer) + index_text(s.index) + index_text(s.domain);
    // Register tiling depends on the reduction and on what the value computes along each
    // iterator (scheduler/register_tile.h).
    if (s.kind == Statement::Kind::reduce_update) {
      key += " r" + std::to_string(static_cast<int>(s.reduce)) + ":";
      for (size_t a = 0; a < s.extents.size(); ++a)
        key += tileable_statement(plan, s, {iterator_name(static_cast<int>(a))}) ? "t" : "-";
      key += gpu_contraction_statement(s) ? "g" : "-";  // scheduler/gpu_tile.h
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
  return key;
}

ScheduledKernel ScheduleCache::schedule(const KernelPlan& plan, const Kernel& k) {
  std::string key = kernel_shape_key(plan, k);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    ++hits_;
    ScheduledKernel reused = it->second;
    reused.milliseconds = 0;
    // Which loops stream depends on what this kernel writes (an output or a temporary).
    if (!opt_.backend_gpu) stream_stores(plan, k, reused.nest, opt_.stream_bytes);
    return reused;
  }
  ScheduledKernel fresh = schedule_kernel(plan, k, opt_);
  by_key_.emplace(std::move(key), fresh);
  return fresh;
}

}  // namespace kiln
