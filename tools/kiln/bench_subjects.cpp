#include "tools/kiln/bench_subjects.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "driver/blas.h"
#include "ir/sizes.h"
#include "ir/view.h"

namespace kiln::cli {

namespace {

std::vector<int64_t> buffer_dims(const Buffer& b, const SizeBindings& sizes) {
  return eval_checked_shape("buffer '" + b.name + "'", b.dtype, b.shape, sizes);
}

size_t buffer_bytes(const Buffer& b, const SizeBindings& sizes) {
  return static_cast<size_t>(checked_bytes(b.dtype, buffer_dims(b, sizes), b.name));
}

}  // namespace

Stats stats_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), ms.back()};
}

double time_ms(Subject& s, std::chrono::steady_clock::time_point* start) {
  auto t0 = std::chrono::steady_clock::now();
  if (start) *start = t0;
  s.run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

CompiledSubject::CompiledSubject(const Graph& g, std::unique_ptr<Runtime> runtime,
                                 const CompileOptions& opt, const std::vector<Tensor>& inputs,
                                 const SizeBindings& sizes)
    : runtime_(std::move(runtime)), sizes_(sizes) {
  build_start_ = std::chrono::steady_clock::now();
  exe_ = std::make_unique<Executable>(g, *runtime_, opt);
  build_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - build_start_)
          .count();
  const KernelPlan& plan = exe_->program().plan;
  for (const std::string& v : plan.size_vars)
    size_args_.push_back(sizes.at(v));
  size_t next_input = 0;
  try {
    for (const Buffer& b : plan.buffers) {
      if (!is_argument(b)) continue;
      if (args_.size() <= static_cast<size_t>(b.arg)) args_.resize(b.arg + 1, nullptr);
      size_t bytes = buffer_bytes(b, sizes);
      try {
        args_[b.arg] = runtime_->alloc(std::max<size_t>(bytes, 64));
      } catch (const std::runtime_error& e) {
        throw std::runtime_error("buffer '" + b.name + "' (" + std::to_string(bytes) +
                                 " bytes): " + e.what());
      }
      if (b.kind == BufferKind::input) {
        std::vector<uint8_t> data = tensor_to_bytes(inputs.at(next_input++));
        runtime_->copy_to_device(args_[b.arg], data.data(), data.size());
      }
    }
  } catch (...) {  // the destructor does not run for a constructor that throws
    for (void* p : args_)
      if (p) runtime_->free(p);
    throw;
  }
}

CompiledSubject::~CompiledSubject() {
  for (void* p : args_)
    if (p) runtime_->free(p);
}

void CompiledSubject::run() {
  exe_->run_buffers(args_.data(), size_args_.data(), launches_);
}

std::optional<std::vector<Tensor>> CompiledSubject::outputs() const {
  std::vector<Tensor> out;
  for (const Buffer& b : exe_->program().plan.buffers) {
    if (b.kind != BufferKind::output || !is_argument(b)) continue;
    std::vector<uint8_t> bytes(buffer_bytes(b, sizes_));
    runtime_->copy_to_host(bytes.data(), args_[b.arg], bytes.size());
    out.push_back(tensor_from_bytes(b.dtype, buffer_dims(b, sizes_), bytes.data()));
  }
  return out;
}

std::optional<GemmShape> gemm_shape(const Graph& g, const SizeBindings& sizes,
                                    std::string& why_not) {
  if (g.outputs.size() != 1) {
    why_not = "it has " + std::to_string(g.outputs.size()) + " outputs, a GEMM has one";
    return std::nullopt;
  }
  const Node& call = g[g.outputs[0].node];
  if (call.op != Op::extern_call || call.name != "gemm") {
    why_not =
        "its output is not one matrix product of its inputs (with --config BLAS=openblas the "
        "simplifier leaves it as a '" +
        std::string(op_name(call.op)) + "' node, not a gemm call)";
    return std::nullopt;
  }
  GemmShape s;
  s.dtype = call.dtype;
  std::vector<int64_t> y = eval_shape(call.shape, sizes);
  s.m = y[0];
  s.n = y[1];
  s.k = eval_shape(g[call.operands[0]].shape, sizes)[1];
  for (int side = 0; side < 2; ++side) {
    NodeId id = call.operands[side];
    bool trans = false;
    if (g[id].op == Op::view) {  // a transposed input: ?gemm reads it with Trans
      const Node& src = g[g[id].operands[0]];
      trans = src.shape.size() == 2 && g[id].view.str() == views::permute(src.shape, {1, 0}).str();
      if (trans) id = g[id].operands[0];
    }
    size_t pos = 0;
    while (pos < g.inputs.size() && g.inputs[pos] != id)
      ++pos;
    if (pos == g.inputs.size()) {
      why_not = std::string("operand ") + (side == 0 ? "a" : "b") +
                " of its matrix product is computed, not an input or a transposed input";
      return std::nullopt;
    }
    (side == 0 ? s.a_input : s.b_input) = pos;
    (side == 0 ? s.trans_a : s.trans_b) = trans;
  }
  const int64_t int_max = 0x7fffffff;  // LP64 CBLAS takes int sizes
  if (s.m > int_max || s.n > int_max || s.k > int_max) {
    why_not = "its sizes exceed the int range of CBLAS";
    return std::nullopt;
  }
  return s;
}

namespace {

// CBLAS as OpenBLAS's LP64 cblas.h declares it: the enums are ints, sizes are int.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                       float, float*, int);
using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int,
                       double, double*, int);

class GemmBaseline : public Subject {
 public:
  GemmBaseline(const GemmShape& s, const std::vector<Tensor>& inputs, int threads) : s_(s) {
    const char* symbol = s.dtype == DType::f64 ? "cblas_dgemm" : "cblas_sgemm";
    load_blas({{"BLAS", "openblas"}}, {symbol});  // loaded RTLD_GLOBAL: the process sees it
    fn_ = dlsym(RTLD_DEFAULT, symbol);
    if (!fn_) throw std::runtime_error(std::string("OpenBLAS has no ") + symbol);
    if (threads > 0)
      if (void* set = dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))
        reinterpret_cast<void (*)(int)>(set)(threads);
    a_ = tensor_to_bytes(inputs.at(s.a_input));
    b_ = tensor_to_bytes(inputs.at(s.b_input));
    c_.assign(static_cast<size_t>(s.m * s.n) * (dtype_bits(s.dtype) / 8), 0);
  }

  void run() override {
    int m = static_cast<int>(s_.m), n = static_cast<int>(s_.n), k = static_cast<int>(s_.k);
    // Row-major: a is [M, K] (lda K), or [K, M] read transposed (lda M); b likewise.
    int lda = s_.trans_a ? m : k, ldb = s_.trans_b ? k : n;
    int ta = s_.trans_a ? kTrans : kNoTrans, tb = s_.trans_b ? kTrans : kNoTrans;
    if (s_.dtype == DType::f64)
      reinterpret_cast<Dgemm>(fn_)(kRowMajor, ta, tb, m, n, k, 1.0,
                                   reinterpret_cast<const double*>(a_.data()), std::max(lda, 1),
                                   reinterpret_cast<const double*>(b_.data()), std::max(ldb, 1),
                                   0.0, reinterpret_cast<double*>(c_.data()), std::max(n, 1));
    else
      reinterpret_cast<Sgemm>(fn_)(kRowMajor, ta, tb, m, n, k, 1.0f,
                                   reinterpret_cast<const float*>(a_.data()), std::max(lda, 1),
                                   reinterpret_cast<const float*>(b_.data()), std::max(ldb, 1),
                                   0.0f, reinterpret_cast<float*>(c_.data()), std::max(n, 1));
  }

  std::optional<std::vector<Tensor>> outputs() const override {
    return std::vector<Tensor>{tensor_from_bytes(s_.dtype, {s_.m, s_.n}, c_.data())};
  }

 private:
  GemmShape s_;
  void* fn_ = nullptr;
  std::vector<uint8_t> a_, b_, c_;
};

class CopyBaseline : public Subject {
 public:
  CopyBaseline(int64_t bytes, int threads)
      : src_(static_cast<size_t>(bytes / 2), 1),
        dst_(static_cast<size_t>(bytes / 2), 0),
        threads_(std::max(threads, 1)) {}
  /** One memcpy per thread over consecutive slices, cut at 4 KiB pages. */
  void run() override {
    size_t n = src_.size(), page = 4096;
    size_t slice = (n / threads_ + page - 1) / page * page;
    auto copy = [&](size_t from) {
      if (from < n) std::memcpy(dst_.data() + from, src_.data() + from, std::min(slice, n - from));
    };
    std::vector<std::thread> others;
    for (int t = 1; t < threads_; ++t)
      others.emplace_back(copy, t * slice);
    copy(0);
    for (std::thread& t : others)
      t.join();
  }
  std::optional<std::vector<Tensor>> outputs() const override { return std::nullopt; }

 private:
  std::vector<uint8_t> src_, dst_;
  int threads_;
};

class DeviceCopyBaseline : public Subject {
 public:
  DeviceCopyBaseline(int64_t bytes, std::unique_ptr<Runtime> rt)
      : rt_(std::move(rt)), bytes_(static_cast<size_t>(bytes / 2)) {
    src_ = rt_->alloc(std::max<size_t>(bytes_, 64));
    try {
      dst_ = rt_->alloc(std::max<size_t>(bytes_, 64));
      std::vector<uint8_t> ones(bytes_, 1);
      rt_->copy_to_device(src_, ones.data(), ones.size());
    } catch (...) {
      rt_->free(src_);
      if (dst_) rt_->free(dst_);
      throw;
    }
  }
  ~DeviceCopyBaseline() override {
    rt_->free(src_);
    rt_->free(dst_);
  }
  DeviceCopyBaseline(const DeviceCopyBaseline&) = delete;
  DeviceCopyBaseline& operator=(const DeviceCopyBaseline&) = delete;
  void run() override { rt_->copy_device(dst_, src_, bytes_); }
  std::optional<std::vector<Tensor>> outputs() const override { return std::nullopt; }
  std::optional<double> device_ms() const override { return rt_->device_ms(); }

 private:
  std::unique_ptr<Runtime> rt_;
  size_t bytes_;
  void *src_ = nullptr, *dst_ = nullptr;
};

}  // namespace

std::unique_ptr<Subject> make_gemm_baseline(const GemmShape& shape,
                                            const std::vector<Tensor>& inputs, int threads) {
  return std::make_unique<GemmBaseline>(shape, inputs, threads);
}

std::unique_ptr<Subject> make_copy_baseline(int64_t bytes, int threads) {
  return std::make_unique<CopyBaseline>(bytes, threads);
}

std::unique_ptr<Subject> make_device_copy_baseline(int64_t bytes, std::unique_ptr<Runtime> rt) {
  return std::make_unique<DeviceCopyBaseline>(bytes, std::move(rt));
}

}  // namespace kiln::cli
