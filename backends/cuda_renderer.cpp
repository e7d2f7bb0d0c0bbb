#include "backends/cuda_renderer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "backends/c_externs.h"
#include "backends/c_prelude.h"
#include "backends/cuda_prelude.h"

namespace kiln {

namespace {

[[noreturn]] void no_externs() {
  throw std::invalid_argument(
      "the cuda backend has no extern calls (BLAS): leave --config BLAS at none");
}

}  // namespace

bool CudaRenderer::in_block(const Context& c) {
  if (c.nest.one_block) return true;
  for (const LoopNode* l : c.loops)
    if (l->mapping == Mapping::block_x) return true;
  return false;
}

std::string CudaRenderer::prelude() const {
  return std::string(kCudaPreludeHead) + kPreludeFunctions + kCudaPreludeTail;
}

std::string CudaRenderer::signature(const std::string& symbol) const {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kCudaBlockThreads) +
         ") " + symbol + "(const kiln_params p)";
}

std::string CudaRenderer::bounds_check_helpers() const {
  return kCudaBoundsCheck;
}

std::string CudaRenderer::bitcast(const std::string&, const std::string& to,
                                  const std::string& x) const {
  return "kiln_bitcast<" + to + ">(" + x + ")";
}

std::string CudaRenderer::plan_declarations(const KernelPlan& plan) const {
  size_t buffers = plan.num_slots;
  for (const Buffer& b : plan.buffers)
    if (b.kind != BufferKind::temp) ++buffers;
  std::string s = "\n/* Every kernel's one parameter: the buffers, then the sizes. */\n";
  s += "struct kiln_params {\n  void* b[" + std::to_string(std::max<size_t>(buffers, 1)) + "];\n";
  if (!plan.size_vars.empty()) s += "  int64_t s[" + std::to_string(plan.size_vars.size()) + "];\n";
  return s + "};\n";
}

std::string CudaRenderer::loops_qualifier() const {
  return "static __device__ __forceinline__ ";
}

std::string CudaRenderer::entry(const KernelPlan& plan, const LoopNest& nest,
                                const std::string& symbol, const std::string& call) const {
  std::string s = signature(symbol) + " {\n  void* const* buffers = p.b;\n";
  s += plan.size_vars.empty() ? "" : "  const int64_t* sizes = p.s;\n";
  if (nest.one_block) s += "  if (blockIdx.x != 0) return;  // the kernel is one block's work\n";
  return s + "  " + call + ";\n}\n";
}

std::string CudaRenderer::loop_header(const Context& c, const LoopNode& n, const std::string& init,
                                      const std::string& cond) const {
  std::string step = std::to_string(n.step), index, stride;
  if (n.mapping == Mapping::block_x) {
    index = "(int64_t)blockIdx.x";
    stride = "(int64_t)gridDim.x";
  } else if (n.mapping == Mapping::thread_x && in_block(c)) {
    index = "(int64_t)threadIdx.x";
    stride = "(int64_t)blockDim.x";
  } else if (n.mapping == Mapping::thread_x) {
    index = "((int64_t)blockIdx.x * blockDim.x + threadIdx.x)";
    stride = "((int64_t)gridDim.x * blockDim.x)";
  } else {
    return CStyleRenderer::loop_header(c, n, init, cond);
  }
  if (n.step != 1) index += " * " + step, stride += " * " + step;
  return "for (int64_t " + n.iter + " = " + init + " + " + index + "; " + cond + "; " + n.iter +
         " += " + stride + ")";
}

std::string CudaRenderer::barrier() const {
  return "__syncthreads();";
}

std::string CudaRenderer::single_condition() const {
  return "threadIdx.x == 0";
}

std::string CudaRenderer::render_alloc(const Context& c, const LoopNode& n, int depth) const {
  std::vector<const LoopNode*> loops;
  if (n.body.size() == 1) perfect_nest(*n.body[0], loops);
  if (loops.empty() || loops[0]->mapping != Mapping::thread_x || !in_block(c))
    return CStyleRenderer::render_alloc(c, n, depth);
  // A block reduction: every thread accumulates a share, thread 0 combines and stores.
  std::string pad(2 * depth, ' ');
  const Statement& st = c.kernel.statements.at(n.statement);
  DType dtype = c.plan.buffers[st.buffer].dtype;
  std::string type = compute_type(dtype);
  std::string identity, op;
  switch (st.reduce) {
    case ReduceKind::sum:
      identity = "0", op = "kiln_sum()";
      break;
    case ReduceKind::prod:
      identity = "1", op = "kiln_prod()";
      break;
    case ReduceKind::max:
      identity = is_float(dtype)       ? "-KILN_INF"
                 : dtype == DType::i64 ? "KILN_INT64_MIN"
                 : dtype == DType::i32 ? "(-2147483647 - 1)"
                 : dtype == DType::i16 ? "(-32768)"
                 : dtype == DType::i8  ? "(-128)"
                                       : "0";
      op = "kiln_max()";
      break;
  }
  identity = "(" + type + ")" + identity;
  std::string s = pad + "{\n" + bind_iterators(n.args, pad + "  ");
  std::string element = render_index(c, st.buffer, st.index);
  s += pad + "  if (" + nest_runs(n) + ") {\n";
  s += pad + "    " + type + " " + n.name + " = threadIdx.x == 0 ? " +
       from_storage(dtype, element) + " : " + identity + ";\n";
  const LoopNode* outer = c.accumulator;
  c.accumulator = &n;
  c.promoted[&st] = n.name;
  for (const LoopNodePtr& child : n.body)
    s += render_node(c, *child, depth + 2);
  c.promoted.erase(&st);
  c.accumulator = outer;
  s += pad + "    " + n.name + " = kiln_block_reduce(" + n.name + ", " + identity + ", " + op +
       ");\n";
  s += pad + "    if (threadIdx.x == 0) " + element + " = " + to_storage(dtype, n.name) + ";\n";
  return s + pad + "  }\n" + pad + "}\n";
}

std::string CudaRenderer::math_call(const std::string& fn, DType t, const std::string& a) const {
  return fn + (t == DType::f64 ? "" : "f") + "(" + a + ")";
}

std::vector<std::string> CudaRenderer::extern_symbols(const KernelPlan& plan) const {
  if (!c_extern_symbols(plan).empty()) no_externs();
  return {};
}

std::string CudaRenderer::extern_helpers(const KernelPlan& plan) const {
  if (!c_extern_symbols(plan).empty()) no_externs();
  return "";
}

std::string CudaRenderer::extern_call(const KernelPlan&, const Statement&) const {
  no_externs();
}

LaunchGeometry cuda_launch_geometry(const KernelPlan& plan, const Kernel& k, const int64_t* sizes) {
  std::map<std::string, int64_t> env;
  for (size_t v = 0; v < plan.size_vars.size(); ++v)
    env[plan.size_vars[v]] = sizes[v];
  double points = 1;
  for (const Statement& s : k.statements) {
    double n = 1;
    for (const IntExpr& e : s.extents)
      n *= static_cast<double>(std::max<int64_t>(e.eval(env), 0));
    points = std::max(points, n);
  }
  LaunchGeometry g;
  g.block[0] = kCudaBlockThreads;
  double blocks = std::ceil(points / kCudaBlockThreads);
  g.grid[0] = static_cast<uint32_t>(std::clamp<double>(blocks, 1, kCudaMaxBlocks));
  return g;
}

}  // namespace kiln
