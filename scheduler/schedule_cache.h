/** \file
 * Schedules cached by kernel shape: kernels that pose isl the same problem get one schedule.
 * Repeated blocks of a composite (stacked layers cut into kernels by cut_kernels.h) then cost
 * one isl run, not one per block.
 *
 * The key of a kernel is a canonical text of what schedule_kernel hands isl: per statement in
 * order its kind, its domain (extents), the buffer and index it writes and every load's buffer
 * and index (in collect_loads order), a call's routine and argument buffers, and the shape of
 * every buffer named, with buffer numbers renumbered by first appearance. A loop nest refers to
 * statements by their index in the kernel and to buffers only through them, so a nest is valid
 * for every kernel with the same key: the statements correspond index by index. Keys are
 * compared as whole texts (std::map), never by hash alone.
 *
 * A cache lives for one compilation, under one ScheduleOptions, which the key therefore leaves
 * out: a cache shared between option sets would need them in the key.
 */
#pragma once

#include <map>
#include <string>

#include "scheduler/schedule_kernel.h"

namespace kiln {

/** The canonical text of kernel `k` of `plan` that two kernels with one schedule share. */
std::string kernel_shape_key(const KernelPlan& plan, const Kernel& k);

/** schedule_kernel behind a memo of kernel shapes. */
class ScheduleCache {
 public:
  explicit ScheduleCache(const ScheduleOptions& opt) : opt_(opt) {}

  /** The schedule of `k`: an earlier kernel's when their keys are equal, else a fresh one. */
  ScheduledKernel schedule(const KernelPlan& plan, const Kernel& k);

  int hits() const { return hits_; }
  int misses() const { return static_cast<int>(by_key_.size()); }

 private:
  ScheduleOptions opt_;
  std::map<std::string, ScheduledKernel> by_key_;
  int hits_ = 0;
};

}  // namespace kiln
