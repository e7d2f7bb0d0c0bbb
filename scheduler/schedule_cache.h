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
 *
 * schedule_all schedules a program's distinct kernels on threads: each schedule_kernel call owns
 * its isl context and reads the plan only, so kernels are independent (docs/decisions.md,
 * "Scheduling kernels on threads").
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "scheduler/schedule_kernel.h"

namespace kiln {

/** The canonical text of kernel `k` of `plan` that two kernels with one schedule share. */
std::string kernel_shape_key(const KernelPlan& plan, const Kernel& k);

/** The same, and into `buffers` the kernel's buffers in the order the key numbers them: where
 *  two kernels with one key read and write. */
std::string kernel_shape_key(const KernelPlan& plan, const Kernel& k, std::vector<int>* buffers);

/** schedule_kernel behind a memo of kernel shapes. */
class ScheduleCache {
 public:
  explicit ScheduleCache(const ScheduleOptions& opt) : opt_(opt) {}

  /** The schedule of `k`: an earlier kernel's when their keys are equal, else a fresh one. */
  ScheduledKernel schedule(const KernelPlan& plan, const Kernel& k);

  /** The schedules of every kernel of `plan` in order, the distinct ones computed on up to
   *  `threads` threads (0: one per core). The first error of any kernel, in kernel order, is
   *  rethrown after every thread has finished. */
  std::vector<ScheduledKernel> schedule_all(const KernelPlan& plan, unsigned threads);

  int hits() const { return hits_; }
  int misses() const { return static_cast<int>(by_key_.size()); }

 private:
  /** A schedule and the buffers of the kernel it was computed for (kernel_shape_key order). */
  struct Entry {
    ScheduledKernel schedule;
    std::vector<int> buffers;
  };

  /** An earlier kernel's schedule for `k`: its tensor maps on `k`'s buffers, its streamed
   *  stores and row groups chosen for `k`. */
  ScheduledKernel reuse(const KernelPlan& plan, const Kernel& k, const Entry& earlier);

  ScheduleOptions opt_;
  std::map<std::string, Entry> by_key_;
  int hits_ = 0;
};

}  // namespace kiln
