/** \file
 * The Backend interface: everything the driver needs to know about the language a runtime's
 * descriptor names (`backend = "c"`): which loop mappings the scheduler may use, how the
 * scheduled plan renders to source, where buffers live and each kernel's launch geometry.
 * The driver looks a backend up by name and knows no backend; adding one means a class here
 * and one line in backends/backend.cpp's registry (docs/plugins.md).
 */
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/c_style.h"
#include "ir/kernel_ir.h"
#include "ir/launch_geometry.h"
#include "ir/loop_ir.h"
#include "scheduler/build_statements.h"
#include "scheduler/cut_kernels.h"
#include "scheduler/schedule_kernel.h"

namespace kiln {

/** Where a runtime's buffers live. */
enum class MemoryKind {
  host,    ///< host memory: callers' arrays go to kernels as they are
  device,  ///< device memory: inputs are copied in and outputs back
};

/** One target language. */
class Backend {
 public:
  virtual ~Backend() = default;
  /** The name descriptors use. */
  virtual std::string name() const = 0;
  /** Sets what the scheduler may map loops to (ScheduleOptions::backend_threads, ...). */
  virtual void configure(ScheduleOptions& opt) const = 0;
  /** Sets where the plan must be cut into kernels (scheduler/cut_kernels.h): a GPU backend
   *  cuts after reductions, whose results every later thread may read; CPU backends fuse
   *  across them and keep the defaults. */
  virtual void configure_cuts(CutOptions&) const {}
  /** Sets how the graph is lowered to statements (scheduler/build_statements.h); the defaults
   *  copy what a GPU tile needs copied. */
  virtual void configure_build(BuildOptions&) const {}
  /** The renderer that turns the scheduled plan into one translation unit. */
  virtual const CStyleRenderer& renderer() const = 0;
  /** Where buffers live. */
  virtual MemoryKind memory() const { return MemoryKind::host; }
  /** The launch geometry of kernel `k` for the bound sizes (in KernelPlan::size_vars order);
   *  1x1x1 by default, as every CPU backend launches. */
  virtual LaunchGeometry geometry(const KernelPlan& plan, const Kernel& k,
                                  const int64_t* sizes) const;
};

/** The backend named `name`; throws std::invalid_argument listing the known ones. */
const Backend& backend_for(const std::string& name);

/** Every backend's name, sorted. */
std::vector<std::string> backend_names();

}  // namespace kiln
