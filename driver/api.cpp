// The public API of include/kiln/kiln.h on top of the driver: Spec wraps a dsl Library,
// compile() picks, lowers and verifies the composite and opens the runtime through
// driver/instantiate.h (which the `kiln` command line shares) and builds an Executable, and
// Compiled::run hands the caller's host buffers to the kernels (straight through on CPU runtimes,
// staged through device memory otherwise). Caller mistakes become std::invalid_argument, spec
// errors InvalidSpec.
#include "kiln/kiln.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <sstream>

#include "driver/executable.h"
#include "driver/instantiate.h"
#include "driver/tune_db.h"
#include "dsl/diagnostic.h"
#include "ir/sizes.h"

namespace kiln {

struct Spec::Impl {
  Library lib;
  const SpecFile* file = nullptr;
};

struct Compiled::Impl {
  std::string composite, runtime_name;
  Graph graph;
  std::unique_ptr<Runtime> runtime;  // null for "interp"
  std::optional<Executable> exe;
  bool host_memory = false;  // the runtime's buffers are host memory: pass pointers straight
  std::vector<std::pair<std::string, std::string>> state;  // {output, input}, as written
};

namespace {

InvalidSpec to_invalid_spec(const SpecError& e) {
  return InvalidSpec(format_error(e), e.loc().file, e.loc().line, e.loc().col);
}

/** The input or output node called `name`. */
const Node& find_port(const Graph& g, const std::string& name) {
  for (NodeId id : g.inputs)
    if (g[id].name == name) return g[id];
  for (const GraphOutput& o : g.outputs)
    if (o.name == name) return g[o.node];
  throw std::invalid_argument("'" + g.name + "' has no input or output '" + name + "'");
}

/** "input 'x' of 'softmax'" or "output 'y' of 'softmax'". */
std::string port_str(const Graph& g, const Node& n) {
  for (NodeId id : g.inputs)
    if (&g[id] == &n) return "input '" + n.name + "' of '" + g.name + "'";
  for (const GraphOutput& o : g.outputs)
    if (&g[o.node] == &n) return "output '" + o.name + "' of '" + g.name + "'";
  return "'" + g.name + "'";
}

/** The bound dims of an input or output; sizes past the limits of ir/sizes.h are the caller's
 *  mistake. */
std::vector<int64_t> bound_shape(const Graph& g, const Node& n, const SizeBindings& sizes) {
  for (const std::string& v : g.size_vars)
    if (!sizes.count(v)) throw UnboundSize(v, g.name);
  try {
    return eval_checked_shape(port_str(g, n), n.dtype, n.shape, sizes);
  } catch (const SizeError& e) {
    throw std::invalid_argument(e.what());
  }
}

size_t bytes_of(const Graph& g, const Node& n, const SizeBindings& sizes) {
  return static_cast<size_t>(checked_bytes(n.dtype, bound_shape(g, n, sizes), port_str(g, n)));
}

/** Runs the reference interpreter on the caller's buffers. */
void run_interpreter(const Graph& g, void* const* buffers, const SizeBindings& sizes) {
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Node& n = g[g.inputs[k]];
    inputs.push_back(tensor_from_bytes(n.dtype, bound_shape(g, n, sizes), buffers[k]));
  }
  std::vector<Tensor> outputs = interpret(g, sizes, inputs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::vector<uint8_t> bytes = tensor_to_bytes(outputs[k]);
    std::memcpy(buffers[g.inputs.size() + k], bytes.data(), bytes.size());
  }
}

/** Copies inputs to device memory, runs, and copies outputs back to the caller's buffers. */
void run_staged(const Graph& g, Runtime& rt, const Executable& exe, void* const* buffers,
                const int64_t* size_args, const SizeBindings& sizes) {
  std::vector<void*> device;
  std::vector<size_t> bytes;
  struct Release {
    Runtime& rt;
    std::vector<void*>& ptrs;
    ~Release() {
      for (void* p : ptrs)
        rt.free(p);
    }
  } release{rt, device};
  size_t n_in = g.inputs.size();
  for (size_t k = 0; k < n_in + g.outputs.size(); ++k) {
    const Node& n = k < n_in ? g[g.inputs[k]] : g[g.outputs[k - n_in].node];
    bytes.push_back(bytes_of(g, n, sizes));
    device.push_back(rt.alloc(std::max<size_t>(bytes.back(), 64)));
    if (k < n_in) rt.copy_to_device(device[k], buffers[k], bytes[k]);
  }
  exe.run_buffers(device.data(), size_args);
  for (size_t k = n_in; k < device.size(); ++k)
    rt.copy_to_host(buffers[k], device[k], bytes[k]);
}

}  // namespace

InvalidSpec::InvalidSpec(const std::string& diagnostic, std::string file, int line, int column)
    : std::runtime_error(diagnostic), file_(std::move(file)), line_(line), column_(column) {}

Spec::Spec(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Spec::Spec(Spec&&) noexcept = default;
Spec& Spec::operator=(Spec&&) noexcept = default;
Spec::~Spec() = default;

Spec Spec::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->file = &impl->lib.load(path);
  } catch (const SpecError& e) {
    throw to_invalid_spec(e);
  }
  return Spec(std::move(impl));
}

Spec Spec::from_string(const std::string& toml_text, const std::string& name) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->file = &impl->lib.load_text(toml_text, name);
  } catch (const SpecError& e) {
    throw to_invalid_spec(e);
  }
  return Spec(std::move(impl));
}

std::vector<std::string> Spec::composites() const {
  std::vector<std::string> names;
  for (const auto& c : impl_->file->composites)
    names.push_back(c->name);
  return names;
}

bool Spec::has(const std::string& name) const {
  return impl_->lib.resolve(*impl_->file, name) != nullptr;
}

std::string Spec::doc(const std::string& name) const {
  return find_composite(impl_->lib, *impl_->file, name).doc;
}

Compiled::Compiled(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Compiled::Compiled(Compiled&&) noexcept = default;
Compiled& Compiled::operator=(Compiled&&) noexcept = default;
Compiled::~Compiled() = default;

Compiled compile(const Spec& spec, const std::string& composite, const std::string& runtime,
                 const CompileSettings& settings) {
  const Spec::Impl& s = spec.impl();
  const Composite& c = find_composite(s.lib, *s.file, composite);
  auto impl = std::make_unique<Compiled::Impl>();
  impl->composite = composite;
  impl->runtime_name = runtime;
  for (const StatePair& p : c.state)
    impl->state.emplace_back(p.output, p.input);
  try {
    impl->graph = lower_verified(s.lib, c, lower_options(c, settings), runtime == "interp");
    if (!settings.grad_wrt.empty()) {
      GradSave save =
          parse_grad_save(settings.grad_save.empty() ? "recompute" : settings.grad_save);
      Backward b = differentiate(impl->graph, settings.grad_wrt, c, save);
      impl->graph = settings.grad_forward ? std::move(b.forward) : std::move(b.graph);
      impl->composite = impl->graph.name;
    } else if (!settings.grad_save.empty() || settings.grad_forward) {
      throw std::invalid_argument(
          "grad_save and grad_forward go with grad_wrt, the inputs to "
          "differentiate with respect to");
    }
  } catch (const SpecError& e) {
    throw to_invalid_spec(e);
  }
  if (runtime == "interp") {
    config_options(settings.config, nullptr);  // checked, though the interpreter reads none
  } else {
    impl->runtime = open_runtime(runtime, /*interp_too=*/true, "the runtime argument");
    if (!settings.cache_dir.empty()) impl->runtime->use_cache_dir(settings.cache_dir);
    impl->host_memory = backend_for(impl->runtime->backend()).memory() == MemoryKind::host;
    // The tuning database's knobs for the sizes compiled as constants (kiln tune --specialize).
    CompileOptions opt =
        tuned_compile_options(*s.file, settings.config, *impl->runtime, impl->graph,
                              settings.fixed_sizes, settings.cache_dir);
    impl->exe.emplace(impl->graph, *impl->runtime, opt);
    if (opt.debug >= 1 && opt.log) {  // KILN_DEBUG: what `kiln run --debug 1` prints
      const BuildInfo& b = impl->exe->build_info();
      std::ostream& log = *opt.log;
      log << "kiln: " << impl->composite << " on " << impl->runtime->name() << ": "
          << impl->exe->program().plan.kernels.size() << " kernel(s), compile "
          << format_ms(b.compile.compile_ms) << " (cache "
          << (Cache::off()          ? "off"
              : b.compile.cache_hit ? "hit"
                                    : "miss")
          << "), load " << format_ms(b.compile.load_ms) << "; stages:";
      for (const StageTime& t : b.stages)
        log << " " << t.name << " " << format_ms(t.milliseconds);
      log << "\n";
    }
  }
  return Compiled(std::move(impl));
}

void Compiled::run(const std::vector<void*>& buffers,
                   const std::map<std::string, int64_t>& sizes) const {
  const Graph& g = impl_->graph;
  size_t want = g.inputs.size() + g.outputs.size();
  if (buffers.size() != want)
    throw std::invalid_argument("'" + g.name + "' takes " + std::to_string(want) +
                                " buffers (inputs then outputs), got " +
                                std::to_string(buffers.size()));
  check_bound_sizes(g, sizes, !impl_->exe);  // the interpreter holds every node in memory
  std::vector<int64_t> size_args;
  for (const std::string& v : g.size_vars)
    size_args.push_back(sizes.at(v));
  if (!impl_->exe) return run_interpreter(g, buffers.data(), sizes);
  if (impl_->host_memory) return impl_->exe->run_buffers(buffers.data(), size_args.data());
  run_staged(g, *impl_->runtime, *impl_->exe, buffers.data(), size_args.data(), sizes);
}

void Compiled::run_device(const std::vector<void*>& buffers,
                          const std::map<std::string, int64_t>& sizes, void* stream) const {
  const Graph& g = impl_->graph;
  if (!device_memory())
    throw std::invalid_argument("'" + g.name + "' runs on the " + impl_->runtime_name +
                                " runtime, which reads host memory: call run(), not run_device()");
  size_t want = g.inputs.size() + g.outputs.size();
  if (buffers.size() != want)
    throw std::invalid_argument("'" + g.name + "' takes " + std::to_string(want) +
                                " buffers (inputs then outputs), got " +
                                std::to_string(buffers.size()));
  check_bound_sizes(g, sizes, false);
  std::vector<int64_t> size_args;
  for (const std::string& v : g.size_vars)
    size_args.push_back(sizes.at(v));
  impl_->exe->run_buffers(buffers.data(), size_args.data(), nullptr, stream);
}

bool Compiled::device_memory() const {
  return impl_->exe && !impl_->host_memory;
}

void Compiled::weights_changed() const {
  if (impl_->exe) impl_->exe->forget_packs();
}

const std::string& Compiled::composite() const {
  return impl_->composite;
}
const std::string& Compiled::runtime() const {
  return impl_->runtime_name;
}

std::vector<std::pair<std::string, std::string>> Compiled::state() const {
  return impl_->state;
}

std::vector<std::string> Compiled::inputs() const {
  std::vector<std::string> names;
  for (NodeId id : impl_->graph.inputs)
    names.push_back(impl_->graph[id].name);
  return names;
}

std::vector<std::string> Compiled::outputs() const {
  std::vector<std::string> names;
  for (const GraphOutput& o : impl_->graph.outputs)
    names.push_back(o.name);
  return names;
}

std::vector<std::string> Compiled::size_vars() const {
  return impl_->graph.size_vars;
}

bool Compiled::is_const(const std::string& name) const {
  return find_port(impl_->graph, name).constant_input;
}

std::string Compiled::dtype(const std::string& name) const {
  return std::string(dtype_name(find_port(impl_->graph, name).dtype));
}

std::vector<std::string> Compiled::symbolic_shape(const std::string& name) const {
  std::vector<std::string> dims;
  for (const IntExpr& d : find_port(impl_->graph, name).shape)
    dims.push_back(d.str());
  return dims;
}

std::vector<int64_t> Compiled::shape(const std::string& name,
                                     const std::map<std::string, int64_t>& sizes) const {
  return bound_shape(impl_->graph, find_port(impl_->graph, name), sizes);
}

size_t Compiled::byte_size(const std::string& name,
                           const std::map<std::string, int64_t>& sizes) const {
  const Node& n = find_port(impl_->graph, name);
  return bytes_of(impl_->graph, n, sizes);
}

}  // namespace kiln
