#include "kernel.h"

#include <nanobind/stl/string.h>

#include <map>
#include <optional>

namespace kiln::py {

struct Kernel::Call {
  std::vector<int64_t> value;  ///< per size variable; -1 while unbound
  /** Per size variable, what bound it: a port and its dimension; no port for sizes=. */
  std::vector<std::pair<const Port*, size_t>> from;
  std::vector<InArray> in;
  std::vector<nb::handle> in_obj;
  std::vector<OutArray> out;
  std::vector<nb::object> out_obj;  ///< null where the caller passed None or no out=
  std::map<std::string, int64_t> sizes;
};

namespace {

bool is_literal(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? sep : "") + v[i];
  return s;
}

/** str(h). */
std::string text_of(nb::handle h) {
  nb::object s = nb::steal(PyObject_Str(h.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  return nb::cast<std::string>(s);
}

std::string kind_of(nb::handle h) {
  return nb::type_name(h.type()).c_str();
}

/** torch.Tensor and torch._C._to_dlpack once torch has been imported, else nulls. The
 *  references are kept for the process's life (never released, so none outlives the
 *  interpreter). */
struct Torch {
  PyObject* tensor = nullptr;
  PyObject* to_dlpack = nullptr;
  PyObject* raw_stream = nullptr;  ///< torch._C._cuda_getCurrentRawStream, where CUDA is built in
  PyObject* empty_like = nullptr;  ///< torch.empty_like
};

const Torch& torch_types() {
  static Torch t;
  if (!t.tensor) {
    if (PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch")) {
      t.tensor = PyObject_GetAttrString(torch, "Tensor");
      t.empty_like = PyObject_GetAttrString(torch, "empty_like");
      PyObject* c = PyObject_GetAttrString(torch, "_C");
      if (c) t.to_dlpack = PyObject_GetAttrString(c, "_to_dlpack");
      if (c && PyObject_HasAttrString(c, "_cuda_getCurrentRawStream"))
        t.raw_stream = PyObject_GetAttrString(c, "_cuda_getCurrentRawStream");
      Py_XDECREF(c);
      PyErr_Clear();
    }
  }
  return t;
}

bool is_tensor(nb::handle h) {
  const Torch& t = torch_types();
  return t.tensor && PyObject_TypeCheck(h.ptr(), reinterpret_cast<PyTypeObject*>(t.tensor));
}

/** `h` as an array, without a copy. A PyTorch tensor goes through torch._C._to_dlpack, what
 *  Tensor.__dlpack__ calls after its checks in Python (1.8 us a tensor against 0.2); Kiln makes
 *  the checks that matter to it itself (dtype, layout, device, autograd). */
template <typename Array>
bool as_array(nb::handle h, Array& a) {
  if (const Torch& t = torch_types(); t.to_dlpack && is_tensor(h)) {
    if (PyObject* capsule = PyObject_CallOneArg(t.to_dlpack, h.ptr()))
      return nb::try_cast(nb::steal(capsule), a, /*convert=*/false);
    PyErr_Clear();  // e.g. a sparse tensor: the general path says what it is
  }
  return nb::try_cast(h, a, /*convert=*/false);
}

/** A PyTorch tensor that autograd tracks: a kernel's result would silently lose its gradient. */
void refuse_autograd(const std::string& composite, const std::string& role, const std::string& name,
                     nb::handle h) {
  if (!is_tensor(h) || !nb::cast<bool>(h.attr("requires_grad"))) return;
  nb::object torch = nb::module_::import_("torch");
  if (!nb::cast<bool>(torch.attr("is_grad_enabled")())) return;
  std::string why =
      " requires grad while autograd is on: Kiln kernels are not differentiable; "
      "pass " +
      name + ".detach() or call under torch.no_grad()";
  throw nb::type_error((composite + ": " + role + why).c_str());
}

/** CUDA's default stream as the driver API names it (CU_STREAM_LEGACY): the stream a caller
 *  means by 0, which run_device's null (the runtime's own queue, waited for) is not. */
void* const kLegacyStream = reinterpret_cast<void*>(uintptr_t{1});

/** An int from a stream handle or a stream object's field; nullopt when `h` is none of them. */
std::optional<uintptr_t> stream_handle(nb::handle h) {
  for (const char* field : {"cuda_stream", "ptr"})  // torch.cuda.Stream, cupy.cuda.Stream
    if (nb::hasattr(h, field)) return stream_handle(h.attr(field));
  if (PyLong_Check(h.ptr())) {
    unsigned long long v = PyLong_AsUnsignedLongLong(h.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return static_cast<uintptr_t>(v);
  }
  return std::nullopt;
}

}  // namespace

Kernel::Kernel(Compiled compiled, nb::object allocate)
    : compiled_(std::move(compiled)), allocate_(std::move(allocate)) {
  device_ = compiled_.device_memory();
  vars_ = compiled_.size_vars();
  for (const std::string& n : compiled_.inputs())
    inputs_.push_back(port(n, "input '" + n + "'"));
  for (const std::string& n : compiled_.outputs())
    outputs_.push_back(port(n, "out= for output '" + n + "'"));
}

Kernel::Port Kernel::port(const std::string& name, const std::string& role) const {
  Port p;
  p.name = name;
  p.role = role;
  p.dtype = compiled_.dtype(name);
  p.dl = dlpack_dtype(p.dtype);
  p.dims = compiled_.symbolic_shape(name);
  p.is_const = role.starts_with("input") && compiled_.is_const(name);
  for (const std::string& d : p.dims) {
    int var = -1;
    for (size_t v = 0; v < vars_.size(); ++v)
      if (vars_[v] == d) var = static_cast<int>(v);
    p.var.push_back(var);
    p.literal.push_back(var < 0 && is_literal(d) ? std::stoll(d) : -1);
    p.plain &= var >= 0 || p.literal.back() >= 0;
  }
  return p;
}

const std::string& Kernel::where() const {
  return compiled_.composite();
}

std::string Kernel::expected(const Port& p) const {
  return p.dtype + "[" + join(p.dims, ", ") + "]";
}

std::string Kernel::repr() const {
  std::vector<std::string> ins, outs;
  for (const Port& p : inputs_)
    ins.push_back((p.is_const ? "const " : "") + p.name + " " + expected(p));
  for (const Port& p : outputs_)
    outs.push_back(p.name + " " + expected(p));
  return "kiln.Kernel(" + compiled_.composite() + " on " + compiled_.runtime() + ": " +
         join(ins, ", ") + " -> " + join(outs, ", ") + ")";
}

std::string Kernel::bound_by(const Call& c, size_t v) const {
  auto [port, dim] = c.from[v];
  return port ? port->role + " dimension " + std::to_string(dim) : "sizes=";
}

void Kernel::check_array(const Port& p, const InArray& a) const {
  auto at = [&] { return where() + ": " + p.role; };
  if (!p.dl || a.dtype() != *p.dl)
    throw nb::type_error((at() + " has dtype " + dtype_name(a.dtype()) + "; expected " + p.dtype +
                          " (" + expected(p) + ")")
                             .c_str());
  if (device_ && !on_cuda_device(a, 0))
    throw nb::value_error((at() + " is on " + device_str(a) + "; the " + compiled_.runtime() +
                           " runtime takes arrays in the memory of CUDA device 0 (cuda:0; "
                           "CUDA_VISIBLE_DEVICES picks which GPU that is): pass " +
                           p.name + ".cuda()")
                              .c_str());
  if (!device_ && !on_host(a))
    throw nb::value_error((at() + " is on " + device_str(a) + "; the " + compiled_.runtime() +
                           " runtime takes arrays in CPU memory: pass " + p.name +
                           ".cpu(), or compile for runtime=\"cuda\"")
                              .c_str());
  if (a.ndim() != p.dims.size())
    throw nb::value_error((at() + " has " + std::to_string(a.ndim()) + " dimension" +
                           (a.ndim() == 1 ? "" : "s") + ", shape " + shape_str(a) + "; expected " +
                           std::to_string(p.dims.size()) + ": " + expected(p))
                              .c_str());
  if (!c_contiguous(a))
    throw nb::value_error(
        (at() + " is not contiguous (shape " + shape_str(a) + ", strides " + strides_str(a) +
         " in elements); Kiln reads dense row-major arrays in place and never copies: pass "
         "numpy.ascontiguousarray(a) or a.contiguous()")
            .c_str());
}

void Kernel::bind_dims(Call& c, const Port& p, const InArray& a) const {
  for (size_t d = 0; d < p.dims.size(); ++d) {
    int64_t got = static_cast<int64_t>(a.shape(d));
    if (p.literal[d] >= 0 && got != p.literal[d])
      throw nb::value_error((where() + ": " + p.role + " has shape " + shape_str(a) +
                             "; expected " + expected(p) + " (dimension " + std::to_string(d) +
                             " is " + std::to_string(p.literal[d]) + ")")
                                .c_str());
    int v = p.var[d];
    if (v < 0) continue;
    if (c.value[v] < 0) {
      c.value[v] = got;
      c.from[v] = {&p, d};
    } else if (c.value[v] != got) {
      throw nb::value_error((where() + ": " + p.role + " has shape " + shape_str(a) +
                             "; expected " + expected(p) + " with " + vars_[v] + " = " +
                             std::to_string(c.value[v]) + " (from " + bound_by(c, v) +
                             "), but dimension " + std::to_string(d) + " is " + std::to_string(got))
                                .c_str());
    }
  }
}

std::string Kernel::unreadable(const Port& p, nb::handle h) const {
  std::string got = kind_of(h);
  if (nb::hasattr(h, "dtype")) got += " of dtype " + text_of(h.attr("dtype"));
  if (nb::hasattr(h, "__dlpack__") || PyObject_CheckBuffer(h.ptr()))
    return where() + ": " + p.role +
           " cannot be read through DLPack or the buffer protocol "
           "(a dtype they cannot express?); got " +
           got;
  return where() + ": " + p.role +
         " must be an array (NumPy, PyTorch or anything with __dlpack__); got " + got;
}

void Kernel::take_input(Call& c, size_t k, nb::handle h) const {
  const Port& p = inputs_[k];
  InArray a;
  if (!as_array(h, a)) throw nb::type_error(unreadable(p, h).c_str());
  refuse_autograd(where(), p.role, p.name, h);
  check_array(p, a);
  bind_dims(c, p, a);
  c.in[k] = std::move(a);
  c.in_obj[k] = h;
}

void Kernel::take_output(Call& c, size_t k, nb::handle h) const {
  const Port& p = outputs_[k];
  OutArray a;
  if (!as_array(h, a)) {
    InArray ro;
    bool readable = as_array(h, ro);
    throw nb::type_error(
        (readable ? where() + ": " + p.role + " is read-only; got " + kind_of(h) : unreadable(p, h))
            .c_str());
  }
  refuse_autograd(where(), p.role, p.name, h);
  check_array(p, InArray(a));
  bind_dims(c, p, InArray(a));
  c.out[k] = std::move(a);
  c.out_obj[k] = nb::borrow(h);
}

void Kernel::bind_sizes(Call& c, nb::handle sizes) const {
  if (sizes.is_none()) return;
  if (!nb::isinstance<nb::dict>(sizes))
    throw nb::type_error(
        (where() + ": sizes= must be a dict such as {'N': 8}; got " + kind_of(sizes)).c_str());
  for (auto [key, val] : nb::borrow<nb::dict>(sizes)) {
    std::string name = text_of(key);
    int v = -1;
    for (size_t i = 0; i < vars_.size(); ++i)
      if (vars_[i] == name) v = static_cast<int>(i);
    if (v < 0)
      throw nb::value_error(
          (where() + ": sizes= names '" + name +
           "', which is no size variable; its size variables: " + join(vars_, ", "))
              .c_str());
    int64_t n = -1;  // an int, a NumPy integer, anything with __index__; not a float
    if (PyObject* i = PyNumber_Index(val.ptr())) {
      n = PyLong_AsLongLong(i);
      Py_DECREF(i);
    }
    if (PyErr_Occurred()) {
      PyErr_Clear();
      n = -1;
    }
    if (n < 0)
      throw nb::value_error((where() + ": sizes= gives " + name + " = " +
                             nb::cast<std::string>(nb::repr(val)) +
                             "; expected a non-negative integer")
                                .c_str());
    if (c.value[v] >= 0 && c.value[v] != n)
      throw nb::value_error((where() + ": sizes= gives " + name + " = " + std::to_string(n) +
                             ", but " + bound_by(c, v) + " makes it " + std::to_string(c.value[v]))
                                .c_str());
    c.value[v] = n;
    c.from[v] = {nullptr, 0};
  }
}

void Kernel::check_shape(Call& c, const Port& p, const InArray& a) const {
  if (p.plain) return;
  std::vector<int64_t> want = compiled_.shape(p.name, c.sizes);
  for (size_t d = 0; d < want.size(); ++d)
    if (static_cast<int64_t>(a.shape(d)) != want[d]) {
      std::vector<std::string> bound;
      for (size_t v = 0; v < vars_.size(); ++v)
        bound.push_back(vars_[v] + " = " + std::to_string(c.value[v]));
      std::string w = "(";
      for (size_t i = 0; i < want.size(); ++i)
        w += (i ? ", " : "") + std::to_string(want[i]);
      w += want.size() == 1 ? ",)" : ")";
      throw nb::value_error((where() + ": " + p.role + " has shape " + shape_str(a) +
                             "; expected " + expected(p) + " = " + w + " with " + join(bound, ", "))
                                .c_str());
    }
}

std::vector<int64_t> Kernel::out_shape(Call& c, const Port& p) const {
  if (!p.plain) return compiled_.shape(p.name, c.sizes);
  std::vector<int64_t> s;
  for (size_t d = 0; d < p.dims.size(); ++d)
    s.push_back(p.var[d] >= 0 ? c.value[p.var[d]] : p.literal[d]);
  return s;
}

void Kernel::prepare(Call& c, nb::args args, nb::handle out, nb::handle sizes,
                     bool allocate) const {
  size_t n_in = inputs_.size(), n_out = outputs_.size();
  if (args.size() != n_in) {
    std::vector<std::string> names;
    for (const Port& p : inputs_)
      names.push_back(p.name);
    throw nb::type_error((where() + " takes " + std::to_string(n_in) + " input" +
                          (n_in == 1 ? "" : "s") + " (" + join(names, ", ") + "), got " +
                          std::to_string(args.size()))
                             .c_str());
  }
  c.value.assign(vars_.size(), -1);
  c.from.assign(vars_.size(), {nullptr, 0});
  c.in.resize(n_in);
  c.in_obj.resize(n_in);
  c.out.resize(n_out);
  c.out_obj.resize(n_out);
  for (size_t k = 0; k < n_in; ++k)
    take_input(c, k, args[k]);
  if (!out.is_none()) {
    bool sequence = nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out);
    if (!sequence && n_out == 1) {
      take_output(c, 0, out);
    } else {
      if (!sequence || nb::len(out) != n_out)
        throw nb::type_error((where() + " has " + std::to_string(n_out) + " output" +
                              (n_out == 1 ? "" : "s") + ": out= must be " +
                              (n_out == 1 ? "an array or " : "") + "a tuple of " +
                              std::to_string(n_out) + " (arrays or None)")
                                 .c_str());
      for (size_t k = 0; k < n_out; ++k)
        if (nb::handle h = out[k]; !h.is_none()) take_output(c, k, h);
    }
  }
  bind_sizes(c, sizes);
  for (size_t v = 0; v < vars_.size(); ++v) {
    if (c.value[v] < 0)
      throw nb::value_error((where() + ": no argument's shape gives size variable '" + vars_[v] +
                             "'; pass sizes={'" + vars_[v] + "': ...}")
                                .c_str());
    c.sizes[vars_[v]] = c.value[v];
  }
  for (size_t k = 0; k < n_in; ++k)
    check_shape(c, inputs_[k], c.in[k]);
  for (size_t k = 0; k < n_out; ++k)
    if (c.out_obj[k].is_valid()) check_shape(c, outputs_[k], InArray(c.out[k]));
  // Kernels treat buffers as restrict: an output the caller passed may share no byte with
  // another buffer (the outputs allocated below are fresh memory).
  for (size_t k = 0; k < n_out; ++k) {
    if (!c.out_obj[k].is_valid()) continue;
    auto [lo, hi] = byte_range(InArray(c.out[k]));
    auto overlaps = [&](const InArray& other) {
      auto [olo, ohi] = byte_range(other);
      return olo < ohi && lo < hi && olo < hi && lo < ohi;
    };
    for (size_t j = 0; j < n_in; ++j)
      if (overlaps(c.in[j]))
        throw nb::value_error((where() + ": " + outputs_[k].role + " overlaps " + inputs_[j].role +
                               "; Kiln kernels do not run in place")
                                  .c_str());
    for (size_t j = 0; j < k; ++j)
      if (c.out_obj[j].is_valid() && overlaps(InArray(c.out[j])))
        throw nb::value_error(
            (where() + ": " + outputs_[k].role + " overlaps " + outputs_[j].role).c_str());
  }
  if (!allocate) return;
  nb::handle like = n_in ? args[0] : nb::none();
  for (size_t k = 0; k < n_out; ++k) {
    if (c.out_obj[k].is_valid()) continue;
    std::vector<int64_t> shape = out_shape(c, outputs_[k]);
    if (n_in && is_tensor(like) && same_kind(c.in[0], outputs_[k], shape)) {
      // An output like the first input (elementwise work): torch.empty_like from here, not
      // through kiln/_arrays.py (1.9 us a call on CUDA instead of 4.6). The input is dense, so
      // its copy's layout is too.
      c.out_obj[k] = nb::steal(PyObject_CallOneArg(torch_types().empty_like, like.ptr()));
      if (!c.out_obj[k].is_valid()) throw nb::python_error();
      if (!as_array(c.out_obj[k], c.out[k]))
        throw nb::type_error(
            (where() + ": torch.empty_like gave no array for output '" + outputs_[k].name + "'")
                .c_str());
      continue;
    }
    nb::list dims;
    for (int64_t d : shape)
      dims.append(d);
    c.out_obj[k] = allocate_(like, nb::tuple(dims), outputs_[k].dtype, device_);
    if (!as_array(c.out_obj[k], c.out[k]))
      throw nb::type_error(
          (where() + ": the allocator gave no writable array for output '" + outputs_[k].name + "'")
              .c_str());
    if (device_) check_array(outputs_[k], InArray(c.out[k]));  // on the device it must be
  }
}

bool Kernel::same_kind(const InArray& a, const Port& p, const std::vector<int64_t>& shape) const {
  if (!p.dl || a.dtype() != *p.dl || a.ndim() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(a.shape(d)) != shape[d]) return false;
  return true;
}

void* Kernel::stream_for(nb::args args, nb::handle stream) const {
  if (!stream.is_none()) {
    std::optional<uintptr_t> v = stream_handle(stream);
    if (!v)
      throw nb::type_error((where() +
                            ": stream= must be a CUDA stream: a torch.cuda.Stream, a "
                            "cupy.cuda.Stream or a CUstream handle as an int; got " +
                            kind_of(stream))
                               .c_str());
    return *v ? reinterpret_cast<void*>(*v) : kLegacyStream;
  }
  const Torch& t = torch_types();
  for (nb::handle a : args)
    if (is_tensor(a) && t.raw_stream) {  // PyTorch's current stream on device 0
      nb::object s = nb::steal(PyObject_CallFunction(t.raw_stream, "i", 0));
      if (!s.is_valid()) throw nb::python_error();
      std::optional<uintptr_t> v = stream_handle(s);
      return v && *v ? reinterpret_cast<void*>(*v) : kLegacyStream;
    }
  return kLegacyStream;
}

nb::object Kernel::call(nb::args args, nb::handle out, nb::handle sizes, nb::handle stream) {
  if (!device_ && !stream.is_none())
    throw nb::type_error((where() + ": stream= is for a CUDA runtime; the " + compiled_.runtime() +
                          " runtime runs on the CPU")
                             .c_str());
  Call c;
  prepare(c, args, out, sizes, /*allocate=*/true);
  std::vector<void*> buffers;
  std::vector<nb::object> keep;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    buffers.push_back(const_cast<void*>(c.in[k].data()));
    if (inputs_[k].is_const) keep.push_back(nb::borrow(c.in_obj[k]));
  }
  for (OutArray& a : c.out)
    buffers.push_back(a.data());
  if (device_) {
    void* queue = stream_for(args, stream);
    nb::gil_scoped_release release;
    compiled_.run_device(buffers, c.sizes, queue);
  } else {
    nb::gil_scoped_release release;
    compiled_.run(buffers, c.sizes);
  }
  kept_.swap(keep);
  if (outputs_.size() == 1) return c.out_obj[0];
  nb::list results;
  for (nb::object& o : c.out_obj)
    results.append(o);
  return nb::tuple(results);
}

nb::dict Kernel::bind(nb::args args, nb::handle out, nb::handle sizes) {
  Call c;
  prepare(c, args, out, sizes, /*allocate=*/false);
  nb::dict d;
  for (const std::string& v : vars_)
    d[v.c_str()] = c.sizes.at(v);
  return d;
}

}  // namespace kiln::py
