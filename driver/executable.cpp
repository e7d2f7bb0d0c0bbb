#include "driver/executable.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "backends/c_style.h"
#include "backends/packed_weights.h"
#include "driver/blas.h"
#include "ir/sizes.h"
#include "scheduler/softmax_tile.h"
#include "scheduler/tile_choice.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_ASAN)
/** LeakSanitizer's suppressions in every program that runs kernels (this object is linked
 *  wherever Executable is): libomp, the openmp runtime's and not instrumented, loses a few
 *  allocations of its own when its threads end (omp_pause_hard, runtimes/clang); NVRTC, the
 *  cuda runtime's compiler, keeps its own for the life of the process. */
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libomp.so\nleak:libnvrtc\n";
}
#endif

namespace kiln {

namespace {

/** Frees device memory when a run ends, also by an exception. */
class DeviceBuffers {
 public:
  explicit DeviceBuffers(Runtime& rt) : rt_(rt) {}
  ~DeviceBuffers() {
    for (void* p : owned_)
      rt_.free(p);
  }
  /** `bytes` for the buffer `what` names; a failure names it and its bytes. */
  void* alloc(size_t bytes, const std::string& what) {
    try {
      owned_.push_back(rt_.alloc(std::max<size_t>(bytes, 64)));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(what + " (" + std::to_string(bytes) + " bytes): " + e.what());
    }
    return owned_.back();
  }
  /** Hands every buffer to the caller, who frees it. */
  void release_all() { owned_.clear(); }

 private:
  Runtime& rt_;
  std::vector<void*> owned_;
};

/** Where each temporary slot starts in a host arena, and the arena's bytes: each slot on a page
 *  of its own, then shifted by 9 cache lines more than the one before (mod 4 KiB). Slots of
 *  equal size would otherwise start at one offset within a page, and a statement that reads
 *  element i of one and writes element i of another (t32[i] = t28[i] / l) would have every load
 *  wait on the store 4 KiB aside that the processor takes for its own (4K aliasing): that made
 *  a softmax over attention scores 1.6 times slower, depending on which temps shared a slot. */
size_t host_slot_offsets(const std::vector<size_t>& slot_bytes, std::vector<size_t>* offsets) {
  constexpr size_t kPage = 4096, kLine = 64, kStagger = 9;
  size_t at = 0;
  offsets->clear();
  for (size_t k = 0; k < slot_bytes.size(); ++k) {
    at = (at + kPage - 1) / kPage * kPage + (k * kStagger * kLine) % kPage;
    offsets->push_back(at);
    at += std::max<size_t>(slot_bytes[k], kLine);
  }
  return at;
}

const char* kind_name(BufferKind k) {
  return k == BufferKind::input ? "input" : k == BufferKind::output ? "output" : "temporary";
}

/** The buffer's bound dims, checked against the limits of ir/sizes.h. */
std::vector<int64_t> buffer_dims(const Buffer& b, const SizeBindings& sizes) {
  return eval_checked_shape(std::string(kind_name(b.kind)) + " buffer '" + b.name + "'", b.dtype,
                            b.shape, sizes);
}

size_t byte_size(const Buffer& b, const SizeBindings& sizes) {
  return static_cast<size_t>(checked_bytes(b.dtype, buffer_dims(b, sizes), b.name));
}

std::vector<int64_t> size_values(const KernelPlan& plan, const SizeBindings& sizes) {
  std::vector<int64_t> out;
  for (const std::string& v : plan.size_vars) {
    auto it = sizes.find(v);
    if (it == sizes.end()) throw std::runtime_error("size variable " + v + " is not bound");
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

namespace {

/** What `kiln cache ls` shows of a new entry: composite, runtime, input types, sizes. */
std::string cache_label(const Graph& g, const Runtime& runtime) {
  std::string label = g.name + " on " + runtime.name() + ":";
  for (NodeId in : g.inputs)
    label += " " + g[in].name + " " + std::string(dtype_name(g[in].dtype)) + shape_str(g[in].shape);
  return label + (g.size_vars.empty() ? ", sizes fixed" : ", sizes symbolic");
}

/** KILN_DUMP=DIR: the program's source, each kernel's transforms and loop nest, and the kernel
 *  plan, as DIR/COMPOSITE-KEY.{c,cu}, .schedule.txt and .plan.txt (KEY: the cache key's first
 *  12 digits). A folder that cannot be written is a warning of the build. */
void dump_program(const std::string& dir, const std::string& name, const LoweredProgram& p,
                  const Runtime& runtime, CompileInfo& info) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string base = (fs::path(dir) / (name + "-" + info.key.substr(0, 12))).string();
  std::ofstream source(base + (runtime.backend() == "cuda"     ? ".cu"
                               : runtime.backend() == "opencl" ? ".cl"
                                                               : ".c"));
  source << p.source;
  std::ofstream schedule(base + ".schedule.txt");
  for (size_t k = 0; k < p.nests.size(); ++k)
    schedule << "// kernel " << k << " (" << p.plan.kernels[k].name << ")"
             << (k < p.transforms.size() ? ": " + p.transforms[k] : "") << "\n"
             << loop_nest_to_text(p.nests[k]) << "\n";
  std::ofstream plan(base + ".plan.txt");
  plan << plan_to_text(p.plan);
  if (!source || !schedule || !plan)
    info.warnings.push_back("KILN_DUMP: cannot write " + base + ".*");
}

}  // namespace

CompileInfo Executable::precompile(const Graph& g, Runtime& runtime, const CompileOptions& opt) {
  const Backend& backend = backend_for(runtime.backend());
  LoweredProgram program = plan_program(g, opt);
  auto make_source = [&] {
    generate_code(program, backend, opt);
    return program.source;
  };
  CompileInfo info;
  runtime.build_artifact(program_identity(program, runtime.backend(), opt), make_source, {}, &info,
                         cache_label(g, runtime));
  return info;
}

Executable::Executable(const Graph& g, Runtime& runtime, const CompileOptions& opt)
    : runtime_(runtime), backend_(backend_for(runtime.backend())) {
  const Backend& backend = backend_;
  runtime.prepare();  // the loader gets ready while the program is planned
  program_ = plan_program(g, opt);
  std::string identity = program_identity(program_, runtime.backend(), opt);
  load_blas(opt.config, backend.renderer().extern_symbols(program_.plan));
  auto make_source = [&] {
    generate_code(program_, backend, opt);
    return program_.source;
  };
  std::vector<std::string> symbols;  // the module's: each code once
  for (size_t k = 0; k < program_.plan.kernels.size(); ++k)
    if (program_.plan.kernels[k].code_of < 0) symbols.push_back(code_symbol(program_.plan, k));
  // A cached module that does not load or lacks a kernel is dropped and rebuilt by the runtime.
  module_ = std::make_unique<CompiledModule>(runtime.compile_identified(
      identity, make_source, {}, &info_.compile, symbols, cache_label(g, runtime)));
  const char* dump = std::getenv("KILN_DUMP");
  // Show what the cache holds too.
  if ((opt.debug >= 3 || (dump && *dump)) && program_.source.empty()) make_source();
  if (dump && *dump) dump_program(dump, g.name, program_, runtime, info_.compile);
  info_.stages = program_.times;
  for (size_t k = 0; k < program_.plan.kernels.size(); ++k) {
    const std::string s = code_symbol(program_.plan, k);
    void* fn = runtime.lookup(*module_, s);
    if (!fn) throw std::runtime_error("compiled module has no kernel '" + s + "'");
    kernels_.push_back(fn);
  }
  // Variants at other tile shapes: those the module has (scheduled and rendered as
  // LoweredProgram::variants; a cached module has the same, as the options are in its key).
  const GpuTileShape& tiles = opt.schedule.gpu_tile;
  tile_variants_.resize(kernels_.size());
  for (size_t k = 0; k < kernels_.size(); ++k) {
    const Kernel& kernel = program_.plan.kernels[k];
    TileVariants& t = tile_variants_[k];
    const std::string symbol = code_symbol(program_.plan, k);
    if (std::optional<IntExpr> head = softmax_launch_head(program_.plan, kernel)) {
      for (const SoftmaxLaneVariant& v : softmax_lane_variants())
        if (void* fn = runtime.lookup(*module_, softmax_lanes_symbol(symbol, v.lanes))) {
          t.kernels.push_back(fn);
          t.symbols.push_back(softmax_lanes_symbol(symbol, v.lanes));
          t.lanes.push_back(v);
        }
      if (t.kernels.empty()) continue;
      t.kernels.insert(t.kernels.begin(), kernels_[k]);
      t.symbols.insert(t.symbols.begin(), symbol);
      t.lanes.insert(t.lanes.begin(), SoftmaxLaneVariant{64, 0, 0});
      t.head = std::move(head);
      continue;
    }
    if (tiles.wgmma_rows <= 0 || tiles.wgmma_variants.empty()) continue;
    std::optional<GpuTileDims> dims = gpu_tile_dims(program_.plan, kernel);
    if (!dims) continue;
    for (const WgmmaShape& v : tiles.wgmma_variants)
      if (void* fn = runtime.lookup(*module_, variant_symbol(symbol, v))) {
        t.shapes.push_back(v);
        t.kernels.push_back(fn);
        t.symbols.push_back(variant_symbol(symbol, v));
      }
    if (t.shapes.empty()) continue;
    t.shapes.insert(t.shapes.begin(), tiles.wgmma_shape());
    t.kernels.insert(t.kernels.begin(), kernels_[k]);
    t.symbols.insert(t.symbols.begin(), symbol);
    t.dims = *dims;
    device_units_ = runtime.device_units();
  }
  find_tensor_maps(runtime);
  program_.symbols.resize(program_.plan.kernels.size());
  for (size_t k = 0; k < program_.plan.kernels.size(); ++k)
    program_.symbols[k] = code_symbol(program_.plan, k);
  if (backend.memory() == MemoryKind::host)
    for (const std::string& symbol : program_.symbols)
      workspace_bytes_.push_back(reinterpret_cast<int64_t (*)(const int64_t*)>(
          runtime.lookup(*module_, workspace_symbol(symbol))));
  checks_ = g.checks;
  poison_temps_ = opt.checked;
  config_.threads = opt.threads;
  // What a fault inside kernel k reports (driver/fault_guard.h).
  const auto* record =
      static_cast<const volatile int64_t*>(runtime.lookup(*module_, kCheckRecordSymbol));
  const KernelPlan& plan = program_.plan;
  std::vector<std::string> buffer_names;
  for (const Buffer& b : plan.buffers)
    buffer_names.push_back(b.name);
  size_t n = plan.kernels.size();
  for (size_t k = 0; k < n; ++k) {
    // A bounds check names a buffer by its number in the code: the code's kernel's buffers,
    // which for this launch are this kernel's, place by place.
    std::vector<std::string> names = buffer_names;
    const Kernel& code = plan.kernels[code_kernel(plan, k)];
    for (size_t i = 0; i < code.buffers.size() && i < plan.kernels[k].buffers.size(); ++i)
      names[code.buffers[i]] = buffer_names[plan.kernels[k].buffers[i]];
    contexts_.push_back({"kernel '" + program_.symbols[k] + "' (" + std::to_string(k + 1) + " of " +
                             std::to_string(n) + ") of composite '" + g.name + "' on runtime " +
                             runtime.name(),
                         opt.checked ? record : nullptr, std::move(names)});
  }
}

void Executable::set_launch_geometry(std::vector<LaunchGeometry> geometry) {
  if (geometry.size() != kernels_.size())
    throw std::invalid_argument("launch geometry for " + std::to_string(geometry.size()) +
                                " kernels, but the program has " + std::to_string(kernels_.size()));
  geometry_ = std::move(geometry);
}

std::vector<LaunchGeometry> Executable::launch_geometry(const int64_t* sizes) const {
  if (!geometry_.empty()) return geometry_;
  std::vector<LaunchGeometry> out;
  for (const Kernel& k : program_.plan.kernels)
    out.push_back(backend_.geometry(program_.plan, k, sizes));
  return out;
}

size_t Executable::tile_choice(size_t k, const int64_t* sizes) const {
  const TileVariants& t = tile_variants_[k];
  if (t.kernels.empty()) return 0;
  std::map<std::string, int64_t> env;
  for (size_t v = 0; v < program_.plan.size_vars.size(); ++v)
    env[program_.plan.size_vars[v]] = sizes[v];
  if (t.head) {  // the first variant whose range holds the lanes, else the kernel itself
    const int64_t lanes = t.head->eval(env);
    for (size_t v = 1; v < t.lanes.size(); ++v)
      if (lanes >= t.lanes[v].min_lanes && lanes <= t.lanes[v].max_lanes) return v;
    return 0;
  }
  return choose_tile(tile_problem(program_.plan.kernels[k], t.dims, env), t.shapes, device_units_);
}

void Executable::find_tensor_maps(const Runtime& runtime) {
  const KernelPlan& plan = program_.plan;
  tensor_maps_.assign(plan.kernels.size(), {});
  if (backend_.memory() != MemoryKind::device) return;
  // Each kernel's functions at each tile shape (TileVariants order) say which maps they read in
  // their module (kTensorMapsSuffix), so a module from the cache needs no nests.
  std::map<std::string, std::vector<MapUse>> read;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    std::vector<std::string> symbols = tile_variants_[k].symbols;
    if (symbols.empty()) symbols.push_back(code_symbol(plan, k));
    for (const std::string& symbol : symbols) {
      auto known = read.find(symbol);
      if (known == read.end()) {
        std::vector<MapUse> uses;
        if (void* at = runtime.lookup(*module_, symbol + kTensorMapsSuffix)) {
          std::vector<int64_t> record(1 + kMaxTensorMaps * kTensorMapFields);
          runtime_.copy_to_host(record.data(), at, record.size() * sizeof(int64_t));
          if (record[0] < 0 || record[0] > kMaxTensorMaps)
            throw std::runtime_error("kernel " + symbol + ": a tensor map record of " +
                                     std::to_string(record[0]) + " maps");
          for (int64_t i = 0; i < record[0]; ++i) {
            const int64_t* f = &record[static_cast<size_t>(1 + i * kTensorMapFields)];
            uses.push_back({static_cast<size_t>(f[0]), std::vector<int64_t>(f + 3, f + 3 + f[2]),
                            static_cast<int>(f[1])});
          }
        }
        known = read.emplace(symbol, std::move(uses)).first;
      }
      max_tensor_maps_ = std::max(max_tensor_maps_, known->second.size());
      tensor_maps_[k].push_back(known->second);
    }
  }
}

std::vector<kiln_tensor_map> Executable::tensor_maps_for(size_t k, size_t choice,
                                                         const SizeBindings& sizes) const {
  const KernelPlan& plan = program_.plan;
  std::vector<kiln_tensor_map> maps(max_tensor_maps_);
  for (kiln_tensor_map& m : maps)
    m.buffer = UINT32_MAX;
  const std::vector<MapUse>& uses = tensor_maps_.at(k).at(choice);
  for (size_t i = 0; i < uses.size(); ++i) {
    const Buffer& b = plan.buffers.at(plan.kernels[k].buffers.at(uses[i].param));
    // The buffer's dimensions, the leading `fold` folded into the next (TensorMapUse::fold).
    std::vector<int64_t> dims = buffer_dims(b, sizes);
    const auto fold = static_cast<size_t>(uses[i].fold);
    if (fold >= dims.size()) throw std::logic_error("a tensor map folding all its dimensions");
    for (size_t d = 0; d < fold; ++d)
      dims[fold] *= dims[d];
    dims.erase(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(fold));
    kiln_tensor_map& m = maps[i];
    m.buffer = static_cast<uint32_t>(uses[i].param);
    m.element_bytes = static_cast<uint32_t>(dtype_bits(b.dtype) / 8);
    m.rank = static_cast<uint32_t>(dims.size());
    if (dims.size() != uses[i].box.size() || dims.size() > 5)
      throw std::logic_error("a tensor map whose box does not match its buffer");
    uint64_t stride = m.element_bytes;
    for (size_t d = 0; d < dims.size(); ++d) {  // innermost first
      m.dims[d] = static_cast<uint64_t>(std::max<int64_t>(dims[dims.size() - 1 - d], 0));
      m.box[d] = static_cast<uint32_t>(uses[i].box[d]);
      m.strides[d] = d == 0 ? 0 : stride;
      stride *= m.dims[d];
    }
  }
  return maps;
}

void* Executable::kernel_for(size_t k, const int64_t* sizes) const {
  const TileVariants& t = tile_variants_.at(k);
  return t.kernels.empty() ? kernels_[k] : t.kernels[tile_choice(k, sizes)];
}

std::string Executable::tile_shape_for(size_t k, const SizeBindings& sizes) const {
  const TileVariants& t = tile_variants_.at(k);
  if (t.kernels.empty()) return "";
  const size_t choice = tile_choice(k, size_values(program_.plan, sizes).data());
  if (t.head) return std::to_string(t.lanes[choice].lanes) + " lanes";
  return wgmma_text(t.shapes[choice]);
}

Executable::~Executable() {
  if (inflight_stream_) {  // the temporaries go only when the caller's stream is done with them
    try {
      runtime_.synchronize_stream(inflight_stream_);
    } catch (const std::exception&) {  // the stream's fault: its owner hears of it
    }
  }
  if (host_arena_.ptr) runtime_.free(host_arena_.ptr);
  for (const std::vector<Slot>* slots : {&workspace_, &packs_})
    for (const Slot& s : *slots)
      if (s.ptr) runtime_.free(s.ptr);
}

void Executable::forget_packs() const {
  std::lock_guard<std::mutex> hold(packs_mutex_);
  packs_filled_ = false;
}

void Executable::add_workspaces(std::vector<void*>& args, void* const* buffers,
                                const int64_t* sizes) const {
  const KernelPlan& plan = program_.plan;
  std::vector<const void*> key;
  for (const Buffer& b : plan.buffers)
    if (b.kind == BufferKind::input && b.constant && is_argument(b)) key.push_back(buffers[b.arg]);
  for (size_t v = 0; v < plan.size_vars.size(); ++v)
    key.push_back(reinterpret_cast<const void*>(static_cast<intptr_t>(sizes[v])));
  bool fill = !packs_filled_ || key != packed_ || poison_temps_;
  packs_.resize(workspace_bytes_.size());
  for (size_t k = 0; k < workspace_bytes_.size(); ++k) {
    Slot& slot = packs_[k];
    if (workspace_bytes_[k] && fill) {
      auto bytes = static_cast<size_t>(workspace_bytes_[k](sizes));
      if (slot.bytes < bytes) {
        if (slot.ptr) runtime_.free(slot.ptr);
        slot = {};
        DeviceBuffers grown(runtime_);
        void* p = grown.alloc(bytes, "the packed weights of kernel '" + program_.symbols[k] + "'");
        grown.release_all();
        slot = {p, bytes};
      }
      const int64_t empty[8] = {0};  // the header: not filled
      runtime_.copy_to_device(slot.ptr, empty, sizeof empty);
    }
    args.push_back(slot.ptr);
  }
  packed_ = std::move(key);
  packs_filled_ = true;  // once the kernels ran; a failed run throws past every later use
}

std::vector<std::vector<void*>> Executable::kernel_args(const std::vector<void*>& args,
                                                        const SizeBindings& sizes) const {
  const KernelPlan& plan = program_.plan;
  // `args`: the caller's buffers (Buffer::arg order), the temporaries' slots, the workspaces.
  size_t callers = 0;
  for (const Buffer& b : plan.buffers)
    callers += is_argument(b);
  std::vector<void*> at(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    if (b.kind == BufferKind::temp) {
      at[i] = args.at(callers + static_cast<size_t>(b.slot));
    } else if (b.window_of < 0) {
      at[i] = args.at(static_cast<size_t>(b.arg));
    } else {
      // A window: its elements must lie inside the buffer (a stacked weight with fewer layers
      // than the program reads is an error here, not a read past its end).
      const Buffer& base = plan.buffers[b.window_of];
      int64_t offset = b.window_offset.eval(sizes);
      int64_t inside = 1, whole = 1;
      for (int64_t d : buffer_dims(b, sizes))
        inside *= d;
      for (int64_t d : buffer_dims(base, sizes))
        whole *= d;
      if (offset < 0 || (inside > 0 && offset + inside > whole))
        throw std::runtime_error("the window '" + b.name + "' of " + kind_name(base.kind) +
                                 " buffer '" + base.name + "' (elements " + std::to_string(offset) +
                                 " to " + std::to_string(offset + inside) + ") lies outside its " +
                                 std::to_string(whole) + " elements");
      at[i] = static_cast<char*>(args.at(static_cast<size_t>(base.arg))) +
              offset * dtype_bits(b.dtype) / 8;
    }
  }
  // Each kernel's buffers, then its workspace where it keeps one; as many entries for every
  // kernel (kernel_params), as a CUDA kernel's parameter struct holds.
  const bool workspaces =
      std::any_of(workspace_bytes_.begin(), workspace_bytes_.end(), [](auto f) { return f; });
  const size_t width = std::max<size_t>(kernel_params(plan), 1) + (workspaces ? 1 : 0);
  std::vector<std::vector<void*>> out;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    std::vector<void*> mine;
    mine.reserve(width);
    for (int b : plan.kernels[k].buffers)
      mine.push_back(at[b]);
    if (k < workspace_bytes_.size() && workspace_bytes_[k])
      mine.push_back(args.at(callers + plan.num_slots + k));
    mine.resize(width, nullptr);
    out.push_back(std::move(mine));
  }
  return out;
}

void Executable::run_buffers(void* const* buffers, const int64_t* sizes,
                             std::vector<LaunchSpan>* spans, void* stream) const {
  const KernelPlan& plan = program_.plan;
  SizeBindings bound;
  for (size_t k = 0; k < plan.size_vars.size(); ++k)
    bound[plan.size_vars[k]] = sizes[k];
  check_size_facts(checks_, bound);  // shape facts and assumed equalities, before any buffer
  std::vector<void*> args;
  std::vector<size_t> slot_bytes(plan.num_slots, 0);
  std::vector<std::string> slot_names(plan.num_slots);
  for (const Buffer& b : plan.buffers) {
    if (b.window_of >= 0) continue;  // a window into a caller's buffer: kernel_args
    if (b.kind != BufferKind::temp) {
      buffer_dims(b, bound);  // the caller's buffer, within the limits the index arithmetic needs
      args.push_back(buffers[b.arg]);
      continue;
    }
    size_t bytes = byte_size(b, bound);
    if (bytes >= slot_bytes[b.slot]) {
      slot_bytes[b.slot] = bytes;
      slot_names[b.slot] = b.name;
    }
  }
  bool device = backend_.memory() == MemoryKind::device;
  std::unique_lock<std::mutex> hold(workspace_mutex_, std::defer_lock);
  if (device) hold.lock();
  // The temporaries of a run left in flight on a caller's stream: a run on any other stream
  // waits for it, and so does a run that must grow or poison them.
  auto settle = [&] {
    if (!inflight_stream_) return;
    void* s = inflight_stream_;
    inflight_stream_ = nullptr;
    runtime_.synchronize_stream(s);
  };
  if (device && inflight_stream_ && (inflight_stream_ != stream || poison_temps_)) settle();
  DeviceBuffers temps(runtime_);
  workspace_.resize(plan.num_slots);
  // Host temporaries: the kept arena when no other run holds it, else one of this run's own.
  std::unique_lock<std::mutex> host(host_mutex_, std::defer_lock);
  std::vector<size_t> offsets;
  char* arena = nullptr;
  if (!device && !slot_bytes.empty()) {
    size_t bytes = host_slot_offsets(slot_bytes, &offsets) + 4096;  // and room to page-align
    std::string what = "temporary buffers (" + std::to_string(slot_bytes.size()) + " slots)";
    if (host.try_lock()) {
      if (host_arena_.bytes < bytes) {
        if (host_arena_.ptr) runtime_.free(host_arena_.ptr);
        host_arena_ = {};
        DeviceBuffers grown(runtime_);
        host_arena_ = {grown.alloc(bytes, what), bytes};
        grown.release_all();
      }
      arena = static_cast<char*>(host_arena_.ptr);
    } else {
      arena = static_cast<char*>(temps.alloc(bytes, what));
    }
    arena += (4096 - reinterpret_cast<uintptr_t>(arena) % 4096) % 4096;
  }
  for (size_t k = 0; k < slot_bytes.size(); ++k) {
    std::string what = "temporary buffer '" + slot_names[k] + "'";
    if (!device) {
      args.push_back(arena + offsets[k]);
    } else {
      Slot& slot = workspace_[k];
      if (slot.bytes < std::max<size_t>(slot_bytes[k], 64)) {
        settle();
        if (slot.ptr) runtime_.free(slot.ptr);
        slot = {};
        DeviceBuffers grown(runtime_);
        void* p = grown.alloc(slot_bytes[k], what);
        grown.release_all();
        slot = {p, std::max<size_t>(slot_bytes[k], 64)};
      }
      args.push_back(slot.ptr);
    }
    if (poison_temps_ && slot_bytes[k] > 0) {
      // CHECK=1: temporaries start as all-ones bytes (NaN, -1), so that a read of an element
      // no statement wrote shows in the results instead of depending on what memory held.
      std::vector<uint8_t> ones(slot_bytes[k], 0xff);
      runtime_.copy_to_device(args.back(), ones.data(), ones.size());
    }
  }
  std::unique_lock<std::mutex> packs(packs_mutex_, std::defer_lock);
  if (std::any_of(workspace_bytes_.begin(), workspace_bytes_.end(), [](auto f) { return f; })) {
    packs.lock();
    add_workspaces(args, buffers, sizes);
  }
  runtime_.configure(config_);  // another Executable on this runtime may have other settings
  std::vector<LaunchGeometry> geometry = launch_geometry(sizes);
  std::vector<std::vector<void*>> local = kernel_args(args, bound);
  auto num_args = static_cast<uint32_t>(local.empty() ? 0 : local[0].size());
  auto num_sizes = static_cast<uint32_t>(plan.size_vars.size());
  // The clock is read only for a caller that records the launches.
  using Clock = std::chrono::steady_clock;
  auto now = [spans] { return spans ? Clock::now() : Clock::time_point{}; };
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  const Clock::time_point started = now();
  std::vector<kiln_tensor_map> maps;
  const char* find_nan = std::getenv("KILN_FIND_NAN");
  std::vector<bool> named(find_nan && *find_nan ? plan.buffers.size() : 0, false);
  for (size_t k = 0; k < kernels_.size(); ++k) {
    if (max_tensor_maps_ > 0) maps = tensor_maps_for(k, tile_choice(k, sizes), bound);
    if (device) {  // one sequence, one wait: faults are the plugin's to report
      runtime_.launch(kernel_for(k, sizes), local[k].data(), sizes, geometry[k], stream, num_args,
                      num_sizes, &maps);
      if (!named.empty()) report_nan(k, local[k], bound, stream, geometry[k], named);
      continue;
    }
    KernelFaultScope scope(contexts_[k]);
    const Clock::time_point t0 = now();
    runtime_.launch(kernel_for(k, sizes), local[k].data(), sizes, geometry[k], nullptr, num_args,
                    num_sizes, &maps);
    runtime_.synchronize();
    exit_on_failed_check(contexts_[k]);
    if (spans) spans->push_back({static_cast<int>(k), t0, since(t0)});
    if (!named.empty()) report_nan(k, local[k], bound, nullptr, geometry[k], named);
  }
  if (device && stream) {
    inflight_stream_ = stream;  // the caller waits when it likes; the next run may wait here
  } else if (device) {
    runtime_.synchronize();
    if (spans) spans->push_back({-1, started, since(started)});
  }
}

void Executable::report_nan(size_t k, const std::vector<void*>& params, const SizeBindings& sizes,
                            void* stream, const LaunchGeometry& geometry,
                            std::vector<bool>& named) const {
  const KernelPlan& plan = program_.plan;
  const Kernel& kernel = plan.kernels.at(k);
  // "all": every buffer the kernel writes, and the kernel's launch.
  const bool all = std::string(std::getenv("KILN_FIND_NAN")) == "all";
  if (all)
    std::cerr << "kiln: KILN_FIND_NAN: kernel " << k << " (" << code_symbol(plan, k) << ") grid "
              << geometry.grid[0] << "x" << geometry.grid[1] << "x" << geometry.grid[2] << " block "
              << geometry.block[0] << "x" << geometry.block[1] << "x" << geometry.block[2]
              << " shared " << geometry.shared_bytes << "\n";
  if (stream) {
    runtime_.synchronize_stream(stream);
  } else {
    runtime_.synchronize();
  }
  // What the kernel leaves for later kernels or the caller: a temporary whose readers are all
  // in this kernel may live in registers only, its buffer never written.
  std::set<int> left;
  for (const Statement& st : kernel.statements) {
    const Buffer& b = plan.buffers.at(st.buffer);
    bool later = all || b.kind != BufferKind::temp;
    for (size_t j = k + 1; j < plan.kernels.size() && !later; ++j)
      later = std::binary_search(plan.kernels[j].buffers.begin(), plan.kernels[j].buffers.end(),
                                 st.buffer);
    if (later) left.insert(st.buffer);
  }
  for (size_t j = 0; j < kernel.buffers.size() && j < params.size(); ++j) {
    const int b = kernel.buffers[j];
    const Buffer& buffer = plan.buffers.at(b);
    if (!left.count(b) || named.at(b) || !is_float(buffer.dtype)) continue;
    std::vector<uint8_t> bytes(byte_size(buffer, sizes));
    if (bytes.empty()) continue;
    runtime_.copy_to_host(bytes.data(), params[j], bytes.size());
    Tensor t = tensor_from_bytes(buffer.dtype, buffer_dims(buffer, sizes), bytes.data());
    // NaN, +inf, -inf: how many, and the first of each.
    size_t count[3] = {0, 0, 0}, first[3] = {0, 0, 0};
    for (size_t e = 0; e < t.f.size(); ++e) {
      const double v = t.f[e];
      const int c = std::isnan(v) ? 0 : v == INFINITY ? 1 : v == -INFINITY ? 2 : -1;
      if (c < 0) continue;
      if (count[c]++ == 0) first[c] = e;
    }
    if (all) {
      std::cerr << "kiln: KILN_FIND_NAN:   '" << buffer.name << "' at " << params[j] << ":";
      for (size_t e = 0; e < t.f.size() && e < 8; ++e)
        std::cerr << " " << t.f[e];
      std::cerr << "\n";
    }
    if (count[0] + count[1] + count[2] == 0) continue;
    named[b] = count[0] > 0;  // infinities may be meant (a mask's -inf): named until a NaN
    std::cerr << "kiln: KILN_FIND_NAN: kernel " << k << " (" << code_symbol(plan, k) << ") left "
              << kind_name(buffer.kind) << " buffer '" << buffer.name << "' (" << t.f.size()
              << " elements) with";
    const char* what[3] = {"NaN", "+inf", "-inf"};
    for (int c = 0; c < 3; ++c)
      if (count[c])
        std::cerr << " " << count[c] << " " << what[c] << " (the first " << first[c] << ")";
    std::cerr << "\n";
  }
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs, const SizeBindings& sizes,
                                    std::vector<LaunchSpan>* spans) const {
  const KernelPlan& plan = program_.plan;
  std::vector<int64_t> size_args = size_values(plan, sizes);
  DeviceBuffers mem(runtime_);
  std::vector<void*> args;
  size_t next_input = 0;
  for (const Buffer& b : plan.buffers) {
    if (!is_argument(b)) continue;
    void* p =
        mem.alloc(byte_size(b, sizes), std::string(kind_name(b.kind)) + " buffer '" + b.name + "'");
    if (b.kind == BufferKind::input) {
      std::vector<uint8_t> bytes = tensor_to_bytes(inputs.at(next_input++));
      runtime_.copy_to_device(p, bytes.data(), bytes.size());
    } else if (poison_temps_ && byte_size(b, sizes) > 0) {
      std::vector<uint8_t> ones(byte_size(b, sizes), 0xff);  // as temporaries: run_buffers
      runtime_.copy_to_device(p, ones.data(), ones.size());
    }
    args.push_back(p);
  }
  forget_packs();  // these buffers are new, though one may reuse an address
  run_buffers(args.data(), size_args.data(), spans);
  std::vector<Tensor> out;
  for (const Buffer& b : plan.buffers) {
    if (b.kind != BufferKind::output || !is_argument(b)) continue;
    std::vector<uint8_t> bytes(byte_size(b, sizes));
    runtime_.copy_to_host(bytes.data(), args[b.arg], bytes.size());
    out.push_back(tensor_from_bytes(b.dtype, buffer_dims(b, sizes), bytes.data()));
  }
  return out;
}

}  // namespace kiln
