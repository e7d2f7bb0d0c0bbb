/** \file
 * What `kiln bench` times: a composite compiled for a runtime with its inputs already on the
 * device, and the baselines it is compared with — cblas ?gemm on the same inputs (`openblas`),
 * a streaming copy of the same bytes (`copy`), the composite on another runtime
 * (`runtime:NAME`). Each is a Subject: run() does one timed unit of work and nothing else.
 */
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "driver/executable.h"
#include "ir/tensor.h"
#include "tools/kiln/json.h"

namespace kiln::cli {

/** Median, min and max of a series of run times. */
struct Stats {
  double median = 0, min = 0, max = 0;
};

/** The median (of the middle two when even), min and max of `ms`, which is not empty. */
Stats stats_of(std::vector<double> ms);

class Subject;

/** The wall time of one run of `s` in milliseconds; with `start`, when it began. The one timer
 *  of `kiln bench` and `kiln tune`. */
double time_ms(Subject& s, std::chrono::steady_clock::time_point* start = nullptr);

/** One thing to time. */
class Subject {
 public:
  virtual ~Subject() = default;
  /** One run: what the timer measures. */
  virtual void run() = 0;
  /** The outputs of the last run, to compare with Kiln's; nullopt when there is nothing
   *  comparable (the copy baseline). */
  virtual std::optional<std::vector<Tensor>> outputs() const = 0;
  /** The time of the last run as the subject measured it, where it does (a helper process
   *  times its own runs, without the latency of the pipe to it); nullopt: time run() itself. */
  virtual std::optional<double> own_ms() const { return std::nullopt; }
  /** The device time of the last run, where a GPU's events measured it; nullopt elsewhere. */
  virtual std::optional<double> device_ms() const { return std::nullopt; }
};

/** A graph compiled for `runtime` through the cache, with `inputs` copied to device buffers
 *  once; run() launches its kernels on them (temporaries are allocated per run, as any launch
 *  does), outputs() copies the outputs back. */
class CompiledSubject : public Subject {
 public:
  CompiledSubject(const Graph& g, std::unique_ptr<Runtime> runtime, const CompileOptions& opt,
                  const std::vector<Tensor>& inputs, const SizeBindings& sizes);
  ~CompiledSubject() override;
  CompiledSubject(const CompiledSubject&) = delete;
  CompiledSubject& operator=(const CompiledSubject&) = delete;
  /** The device time of the last run, where the runtime measures it (Runtime::device_ms). */
  std::optional<double> device_ms() const override { return runtime_->device_ms(); }

  void run() override;
  std::optional<std::vector<Tensor>> outputs() const override;
  const Executable& executable() const { return *exe_; }
  double build_ms() const { return build_ms_; }
  std::chrono::steady_clock::time_point build_start() const { return build_start_; }
  /** Every later run() appends its kernels' launches to `spans` (nullptr: nowhere). */
  void record_launches(std::vector<LaunchSpan>* spans) { launches_ = spans; }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Executable> exe_;
  SizeBindings sizes_;
  std::vector<int64_t> size_args_;  ///< in the plan's size-variable order
  std::vector<void*> args_;         ///< inputs then outputs, by Buffer::arg
  double build_ms_ = 0;
  std::chrono::steady_clock::time_point build_start_{};
  std::vector<LaunchSpan>* launches_ = nullptr;
};

/** A single matrix product as cblas ?gemm sees it. */
struct GemmShape {
  DType dtype = DType::f32;  ///< f32 (sgemm) or f64 (dgemm)
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;  ///< the operand is its graph input transposed
  size_t a_input = 0, b_input = 0;        ///< positions in the graph's inputs
};

/** The GEMM that `simplified` (a graph simplified with --config BLAS=openblas) is: one output,
 *  computed by one extern gemm whose operands are graph inputs or their transposes. Otherwise
 *  the message says why the composite is not a GEMM. */
std::optional<GemmShape> gemm_shape(const Graph& simplified, const SizeBindings& sizes,
                                    std::string& why_not);

/** cblas_sgemm or cblas_dgemm of OpenBLAS (through driver/blas.h's loader) on copies of the
 *  inputs `shape` names, on `threads` threads (openblas_set_num_threads; 0: OpenBLAS's own
 *  choice); throws std::runtime_error when OpenBLAS is not installed. */
std::unique_ptr<Subject> make_gemm_baseline(const GemmShape& shape,
                                            const std::vector<Tensor>& inputs, int threads);

/** std::memcpy of bytes / 2 between two buffers, split over `threads` threads (started per
 *  run): it reads and writes `bytes` in all. */
std::unique_ptr<Subject> make_copy_baseline(int64_t bytes, int threads);

/** The same on a device runtime (Runtime::can_copy_device): one copy of bytes / 2 between two
 *  buffers of the device's memory, timed by the device's events as Kiln's kernels are. */
std::unique_ptr<Subject> make_device_copy_baseline(int64_t bytes, std::unique_ptr<Runtime> rt);

}  // namespace kiln::cli
