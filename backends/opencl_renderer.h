/** \file
 * OpenCL C: the CUDA renderer's GPU code in another syntax. The schedule is CUDA's, read from the
 * same loop IR (scheduler/map_gpu.h, scheduler/gpu_tile.h): a `block.x` loop strides over the
 * work-groups, a `thread.x` loop over the work-items of a group or of the grid, `single` nodes
 * run on work-item 0, barriers fence local and global memory, block reductions combine
 * through local memory. This class overrides only what the language spells differently
 * (docs/plugins.md, "The renderer seam"):
 * - the kernel: `__kernel` with a required work-group size of kCudaBlockThreads, one parameter
 *   per buffer (`__global`) then one `long` per size, since OpenCL passes no struct of pointers;
 *   it declares a `__local` scratch (only a kernel may) and hands it to the loop function;
 * - the indices (`get_group_id(0)`, `get_num_groups(0)`, `get_local_id(0)`, `get_local_size(0)`),
 *   the barrier, `__global` buffer pointers, `as_type` bit casts, the overloaded math builtins;
 * - the prelude: OpenCL's fixed-width types, the shared C functions, block reductions in local
 *   memory; f16 and bf16 stored as 16-bit integers and computed in float, as in C and CUDA;
 * - a contraction's SIMT block tile (scheduler/gpu_tile.h) is CUDA's code, its shared arrays
 *   carved out of the kernel's `__local` scratch, whose size the module's kernel
 *   `<symbol>_shared_bytes` tells the plugin;
 * - thread loops stay scalar (CUDA's 16-byte vector loops are declined), and there are no
 *   bounds checks (CHECK=1) and no extern calls.
 * What CUDA has and OpenCL lacks (tensor cores, cp.async, the fused attention kernel) the
 * scheduler never chooses for it: ScheduleOptions::gpu_tensor_cores and its siblings, which
 * the opencl backend clears (backends/backend.cpp).
 */
#pragma once

#include "backends/cuda_renderer.h"

namespace kiln {

class OpenCLRenderer : public CudaRenderer {
 protected:
  std::string prelude() const override;
  std::string signature(const std::string& symbol) const override;
  std::string bounds_check_helpers() const override;
  std::string bitcast(const std::string& from, const std::string& to,
                      const std::string& x) const override;
  std::string plan_declarations(const KernelPlan& plan,
                                const RenderOptions& options) const override;
  std::string loops_qualifier() const override;
  std::string buffer_space() const override;
  std::pair<std::string, std::string> kernel_scope_param(
      const RenderOptions& options) const override;
  std::string entry(const KernelPlan& plan, const LoopNest& nest, const std::string& symbol,
                    const std::string& call) const override;
  std::string loop_annotation(const LoopNode& loop, const LoopSite& site) const override;
  std::string barrier(const Context& c) const override;
  std::string math_call(const std::string& fn, DType t, const std::string& a) const override;
  std::string render_vector_loop(const Context& c, const LoopNode& n, int depth) const override;
  std::string gpu_id(GpuId id) const override;
  std::string block_reduce(const std::string& type, const std::string& value,
                           const std::string& identity, const std::string& op) const override;
  /** CUDA's SIMT block tile (scheduler/gpu_tile.h, backends/cuda_tile.cpp) as it is; refuses a
   *  tile on tensor cores, of several stages or of online softmax, which the scheduler never
   *  chooses for OpenCL. */
  std::string render_block_tile(const Context& c, const LoopNode& n, int depth) const override;
  /** The tile's arrays live in the kernel's `__local` scratch past the reductions' part (a
   *  `__local` array only a kernel may declare, and PoCL 3.1 shares kernel-scope ones between
   *  work-groups running at once: docs/decisions.md): a pointer to rows of `cols`. */
  std::string shared_array(const std::string& type, const std::string& name, int64_t rows,
                           int64_t cols, int64_t offset) const override;
  std::string shared_barrier() const override;
};

}  // namespace kiln
