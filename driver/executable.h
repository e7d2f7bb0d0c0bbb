/** \file
 * A compiled composite ready to run: the lowered program, its module loaded by a runtime, and
 * the buffer handling around a launch (allocate, copy in, launch every kernel, copy out). The
 * run-time settings (threads) reach the plugin before each run; each kernel launches with its
 * own geometry.
 */
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "driver/fault_guard.h"
#include "driver/pipeline.h"
#include "ir/interpreter.h"
#include "runtimes/runtime.h"
#include "scheduler/softmax_tile.h"

namespace kiln {

/** What one compile-and-load did, for --debug 1. */
struct BuildInfo {
  std::vector<StageTime> stages;
  CompileInfo compile;
};

/** The launch of one kernel as the host saw it: from the launch to the end of its wait (on a
 *  host backend each kernel is waited for). On a device backend the kernels launch as one
 *  sequence that is waited for once: one span covers them all, with `kernel` -1. */
struct LaunchSpan {
  int kernel = -1;  ///< index into the plan's kernels; -1: every kernel, one device sequence
  std::chrono::steady_clock::time_point start{};
  double milliseconds = 0;
};

/** A graph compiled for one runtime. */
class Executable {
 public:
  /** Lowers, compiles (through the runtime's cache) and loads `g`. */
  Executable(const Graph& g, Runtime& runtime, const CompileOptions& opt);
  /** Plans, renders and compiles `g` into the runtime's cache without loading it, so that an
   *  Executable of the same graph, runtime and options made later is a cache hit (`kiln tune`
   *  compiles candidates on several threads this way, then loads and times them one by one).
   *  Safe to call from several threads, each with its own Runtime. */
  static CompileInfo precompile(const Graph& g, Runtime& runtime, const CompileOptions& opt);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /** Runs on host tensors (in graph input order) for the bound sizes; returns the outputs.
   *  With `spans`, the launches are appended to it (run_buffers). */
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const SizeBindings& sizes,
                          std::vector<LaunchSpan>* spans = nullptr) const;

  /** Runs on caller-owned device buffers: inputs then outputs in graph order (temps are
   *  allocated here), with the sizes in size-variable order. On a device backend the kernels
   *  launch one after another and the run waits once, at the end (a plugin may replay them as
   *  one sequence: include/kiln/plugin_api.h), and the temporaries stay allocated for the next run;
   *  runs of one Executable then take turns.
   *  Packed panels of `const` inputs (backends/packed_weights.h) are filled at the first run
   *  and kept while every const input is the same buffer and the sizes are the same: a const
   *  input's contents must not change between runs without forget_packs(). Runs that keep
   *  panels take turns. CHECK=1 fills them at every run. With `spans`, the launches are
   *  appended to it (LaunchSpan).
   *  With a `stream` (a device backend's queue, e.g. a CUstream the caller owns) the kernels are
   *  launched on it in order and the run returns without waiting: the temporaries are the
   *  stream's until a later run on another stream (or none), or one that must grow them, waits
   *  for it first (Runtime::synchronize_stream). */
  void run_buffers(void* const* buffers, const int64_t* sizes,
                   std::vector<LaunchSpan>* spans = nullptr, void* stream = nullptr) const;
  /** $KILN_FIND_NAN set: kernel `k` has run (waited for on `stream`); each float buffer it
   *  leaves for a later kernel or the caller is read back (`params`: its parameters,
   *  Kernel::buffers order) and its NaN and infinities counted on stderr, a buffer's NaN once
   *  (`named`, by plan buffer): which kernel first goes wrong, for a wrong answer on a device.
   *  $KILN_FIND_NAN=all: every float buffer it writes, and its launch `geometry`. */
  void report_nan(size_t k, const std::vector<void*>& params, const SizeBindings& sizes,
                  void* stream, const LaunchGeometry& geometry, std::vector<bool>& named) const;
  /** The next run fills the packed panels of the const inputs afresh (their buffers' contents
   *  changed in place). */
  void forget_packs() const;

  /** The geometry of each kernel's launch for `sizes` (size-variable order), in kernel order:
   *  the backend's (Backend::geometry) unless set_launch_geometry replaced it. */
  std::vector<LaunchGeometry> launch_geometry(const int64_t* sizes) const;
  /** Replaces the launch geometry for every run: one entry per kernel (tests and tools).
   *  Throws std::invalid_argument when the count differs from the kernels'. */
  void set_launch_geometry(std::vector<LaunchGeometry> geometry);
  /** The settings the plugin gets before each run (CompileOptions::threads). */
  const RuntimeConfig& runtime_config() const { return config_; }

  /** The function kernel `k` launches with for `sizes` (size-variable order): its own, or the
   *  variant at another tile shape that scheduler/tile_choice.h estimates fastest (a fused
   *  attention kernel's: the variant whose range of lanes holds the head). */
  void* kernel_for(size_t k, const int64_t* sizes) const;
  /** The tile shape kernel `k` launches at for `sizes` ("128x64x4", "128 lanes"), or "" where
   *  it was compiled at one shape only. */
  std::string tile_shape_for(size_t k, const SizeBindings& sizes) const;

  const LoweredProgram& program() const { return program_; }
  const BuildInfo& build_info() const { return info_; }

 private:
  /** Appends each kernel's workspace of packed panels to `args` (null where it keeps none),
   *  allocated and marked unfilled when the const inputs or the sizes differ from the last
   *  run's. The caller holds packs_mutex_. */
  void add_workspaces(std::vector<void*>& args, void* const* buffers, const int64_t* sizes) const;
  /** What each kernel is launched with: its buffers (Kernel::buffers: `args`' caller buffers,
   *  windows into them at their offsets for `sizes`, temporaries' slots), then its workspace
   *  where it keeps one. Throws where a window lies outside its buffer. */
  std::vector<std::vector<void*>> kernel_args(const std::vector<void*>& args,
                                              const SizeBindings& sizes) const;

  Runtime& runtime_;
  LoweredProgram program_;
  BuildInfo info_;
  std::unique_ptr<CompiledModule> module_;
  std::vector<void*> kernels_;
  /** Kernel k's functions at each tile shape it was compiled at (its own first), and where its
   *  contraction lies; empty where it has one shape. A fused attention kernel whose lanes are
   *  known only at run time (`head`, the lanes' size): its own function, then its
   *  softmax_lane_variants that the module has (`lanes`, its own first: scheduler/
   *  softmax_tile.h softmax_launch_head), `shapes` empty. */
  struct TileVariants {
    std::vector<WgmmaShape> shapes;
    std::vector<void*> kernels;
    std::vector<std::string> symbols;
    GpuTileDims dims;
    std::optional<IntExpr> head;
    std::vector<SoftmaxLaneVariant> lanes;
  };
  std::vector<TileVariants> tile_variants_;
  int device_units_ = 0;  ///< the device's multiprocessors (Runtime::device_units)
  /** The index into tile_variants_[k] a launch at `sizes` takes. */
  size_t tile_choice(size_t k, const int64_t* sizes) const;
  /** A tensor map of a kernel's TMA copies (tensor_maps_of): its buffer's place in the code
   *  kernel's Kernel::buffers (the launch's parameter), and the box. */
  struct MapUse {
    size_t param = 0;
    std::vector<int64_t> box;
    int fold = 0;  ///< TensorMapUse::fold
  };
  /** Kernel k's maps at each tile shape it was compiled at (TileVariants order; one entry where
   *  it has one shape); max_tensor_maps_: the most of any, which every launch passes. */
  std::vector<std::vector<std::vector<MapUse>>> tensor_maps_;
  size_t max_tensor_maps_ = 0;
  /** Reads each kernel's maps off the module (kTensorMapsSuffix). */
  void find_tensor_maps(const Runtime& runtime);
  /** The maps kernel k's launch at tile choice `choice` passes at `sizes`: max_tensor_maps_
   *  entries, its own first, the rest naming no buffer. */
  std::vector<kiln_tensor_map> tensor_maps_for(size_t k, size_t choice,
                                               const SizeBindings& sizes) const;
  const Backend& backend_;
  std::vector<LaunchGeometry> geometry_;  ///< one per kernel when set; empty: the backend's
  RuntimeConfig config_;
  std::vector<KernelContext> contexts_;  ///< what a fault in kernel k reports
  std::vector<SizeCheck> checks_;        ///< the graph's checks of the bound sizes
  bool poison_temps_ = false;            ///< CHECK=1: temporaries and outputs start as 0xff bytes
  /** A device backend's temporaries, slot by slot, kept between runs and grown as needed. */
  struct Slot {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  mutable std::vector<Slot> workspace_;
  mutable std::mutex workspace_mutex_;  ///< held by a device run, which uses workspace_
  /** The caller's stream the last device run was left running on (run_buffers), or null. */
  mutable void* inflight_stream_ = nullptr;
  /** A CPU backend's temporaries: one arena, kept between runs by the run that holds
   *  host_mutex_ (a concurrent run allocates its own); slots staggered (host_slot_offsets). */
  mutable Slot host_arena_;
  mutable std::mutex host_mutex_;
  /** Kernel k's exported workspace size function (packed_weights.h), or null: it keeps none. */
  std::vector<int64_t (*)(const int64_t*)> workspace_bytes_;
  mutable std::vector<Slot> packs_;  ///< kernel k's workspace, kept between runs
  mutable std::vector<const void*>
      packed_;                         ///< the const inputs, then the sizes, it was filled for
  mutable bool packs_filled_ = false;  ///< the workspaces hold filled panels for packed_
  mutable std::mutex packs_mutex_;     ///< held by a run whose kernels keep panels
};

}  // namespace kiln
