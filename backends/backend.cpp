#include "backends/backend.h"

#include <map>
#include <stdexcept>

#include "backends/c_renderer.h"
#include "backends/cuda_renderer.h"
#include "backends/opencl_renderer.h"
#include "backends/openmp_renderer.h"

namespace kiln {

namespace {

/** The CPU's cuts: a contraction takes a kernel of its own, so that each gets the register
 *  tile (scheduler/register_tile.h takes one per kernel) and the copies and stores the value
 *  planner adds around it do not share its schedule. */
void cpu_cuts(CutOptions& cut) {
  cut.cut_around_contractions = true;
  cut.contractions_reuse_an_operand = true;
  cut.tile_bounded_contractions = true;
  cut.tile_bounded_for_registers = true;
  cut.restrict_demanded = true;
}

/** The CPU's kernel IR: reductions read inputs through their views, and padding a contraction
 *  reads many times is stored once (BuildOptions). */
void cpu_build(BuildOptions& build) {
  build.copy_input_views = false;
  build.store_padding = true;
  build.narrow_contraction_operands = false;
  build.split_reduce_runs = false;
}

/** Plain C: one thread; the C compiler vectorises on its own. */
class CBackend : public Backend {
 public:
  std::string name() const override { return "c"; }
  void configure(ScheduleOptions& opt) const override {
    opt.backend_threads = false;
    opt.backend_simd = false;
  }
  void configure_cuts(CutOptions& cut) const override { cpu_cuts(cut); }
  void configure_build(BuildOptions& build) const override { cpu_build(build); }
  const CStyleRenderer& renderer() const override { return renderer_; }

 private:
  CRenderer renderer_;
};

/** OpenMP C: parallel loops across threads, simd loops across vector lanes. */
class OpenMPBackend : public Backend {
 public:
  std::string name() const override { return "openmp"; }
  void configure(ScheduleOptions& opt) const override {
    opt.backend_threads = true;
    opt.backend_simd = true;
  }
  void configure_cuts(CutOptions& cut) const override { cpu_cuts(cut); }
  void configure_build(BuildOptions& build) const override { cpu_build(build); }
  const CStyleRenderer& renderer() const override { return renderer_; }

 private:
  OpenMPRenderer renderer_;
};

/** CUDA C for NVRTC: loops across blocks and threads (scheduler/map_gpu.h), buffers in device
 *  memory. The CPU tiling pass is off: contractions get block tiles in shared memory from
 *  scheduler/gpu_tile.h instead. */
class CudaBackend : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  void configure(ScheduleOptions& opt) const override {
    opt.backend_threads = false;
    opt.backend_simd = false;
    opt.backend_gpu = true;
    opt.tile = false;
  }
  /** A block sees its own row after a barrier; other rows only after the kernel ends. A row
   *  sum (batched or not) is no contraction: it stays with the row's other statements. */
  void configure_cuts(CutOptions& cut) const override {
    cut.cut_before_grid_barriers = true;
    cut.cut_around_contractions = true;
    cut.contractions_reuse_an_operand = true;
    cut.fuse_softmax_contractions = true;
    cut.tile_bounded_contractions = true;
    cut.store_shared = false;
  }
  const CStyleRenderer& renderer() const override { return renderer_; }
  MemoryKind memory() const override { return MemoryKind::device; }
  LaunchGeometry geometry(const KernelPlan& plan, const Kernel& k,
                          const int64_t* sizes) const override {
    return cuda_launch_geometry(plan, k, sizes, row_groups());
  }

 protected:
  /** Whether the schedule groups short rows (ScheduleOptions::gpu_row_groups). */
  virtual bool row_groups() const { return true; }

 private:
  CudaRenderer renderer_;
};

/** OpenCL C: CUDA's schedule, cuts and launch geometry (global size = grid x block), rendered
 *  by the CUDA renderer's sibling (backends/opencl_renderer.h). The target has no tensor cores,
 *  no asynchronous copies and so no fused attention kernel: the scheduler does not choose them
 *  (contractions take SIMT block tiles of one stage in local memory), and attention's
 *  contractions are not fused with their softmax. */
class OpenCLBackend : public CudaBackend {
 public:
  std::string name() const override { return "opencl"; }
  void configure(ScheduleOptions& opt) const override {
    CudaBackend::configure(opt);
    opt.gpu_tensor_cores = false;
    opt.gpu_async_copy = false;
    opt.gpu_fused_attention = false;
    opt.gpu_row_groups = false;
  }
  void configure_cuts(CutOptions& cut) const override {
    CudaBackend::configure_cuts(cut);
    cut.fuse_softmax_contractions = false;
    cut.buffer_windows = false;  // a cl_mem is a handle: no pointer into it
  }
  const CStyleRenderer& renderer() const override { return renderer_; }

 protected:
  bool row_groups() const override { return false; }

 private:
  OpenCLRenderer renderer_;
};

/** The registry: every backend, by name. A new backend adds its line here. */
const std::map<std::string, const Backend*>& registry() {
  static const CBackend c;
  static const OpenMPBackend openmp;
  static const CudaBackend cuda;
  static const OpenCLBackend opencl;
  static const std::map<std::string, const Backend*> table = {
      {c.name(), &c}, {openmp.name(), &openmp}, {cuda.name(), &cuda}, {opencl.name(), &opencl}};
  return table;
}

}  // namespace

LaunchGeometry Backend::geometry(const KernelPlan&, const Kernel&, const int64_t*) const {
  return {};
}

const Backend& backend_for(const std::string& name) {
  auto it = registry().find(name);
  if (it != registry().end()) return *it->second;
  std::string known;
  for (const std::string& n : backend_names())
    known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("no backend '" + name + "' (known backends: " + known + ")");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const auto& [name, b] : registry())
    out.push_back(name);
  return out;
}

}  // namespace kiln
