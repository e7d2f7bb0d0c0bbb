#include "scheduler/plan_buffers.h"

#include <algorithm>

namespace kiln {

void plan_buffers(KernelPlan& plan) {
  struct Range {
    int buffer, first, last;
  };
  std::vector<Range> ranges;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (plan.buffers[b].kind != BufferKind::temp) continue;
    Range r{static_cast<int>(b), -1, -1};
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const auto& used = plan.kernels[k].buffers;
      if (std::find(used.begin(), used.end(), static_cast<int>(b)) == used.end()) continue;
      if (r.first < 0) r.first = static_cast<int>(k);
      r.last = static_cast<int>(k);
    }
    ranges.push_back(r);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.first < b.first; });
  std::vector<int> slot_free_after;  // last kernel using each slot
  for (const Range& r : ranges) {
    int slot = -1;
    for (size_t s = 0; s < slot_free_after.size(); ++s)
      if (slot_free_after[s] < r.first) {
        slot = static_cast<int>(s);
        break;
      }
    if (slot < 0) {
      slot = static_cast<int>(slot_free_after.size());
      slot_free_after.push_back(-1);
    }
    slot_free_after[slot] = r.last;
    plan.buffers[r.buffer].slot = slot;
  }
  plan.num_slots = static_cast<int>(slot_free_after.size());
}

}  // namespace kiln
