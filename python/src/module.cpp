// kiln._core: the nanobind extension under the `kiln` package (python/kiln/__init__.py wraps
// it; docs/python.md). Specs, compiling, kernels (kernel.h), the knobs, the runtimes and the
// cache, all through the public C++ API (include/kiln/kiln.h). Spec errors become
// kiln.SpecError with the file, line and column; caller mistakes ValueError or TypeError.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>

#include "kernel.h"
#include "kiln/kiln.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

/** kiln::InvalidSpec as kiln.SpecError (kiln/_errors.py), with its position. */
void translate_spec_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const kiln::InvalidSpec& e) {
    try {
      nb::object cls = nb::module_::import_("kiln._errors").attr("SpecError");
      std::string text = e.what();
      while (!text.empty() && text.back() == '\n')
        text.pop_back();
      nb::object exc = cls(text, e.file(), e.line(), e.column());
      PyErr_SetObject(cls.ptr(), exc.ptr());
    } catch (nb::python_error& pe) {
      pe.restore();
    }
  }
}

kiln::Compiled compile(const kiln::Spec& spec, const std::string& composite,
                       const std::string& runtime, std::map<std::string, std::string> dtypes,
                       std::map<std::string, std::string> attrs, int batch_rank,
                       std::map<std::string, std::string> config,
                       std::map<std::string, int64_t> fixed_sizes, const std::string& cache_dir,
                       std::vector<std::string> grad_wrt, const std::string& grad_save,
                       bool grad_forward) {
  kiln::CompileSettings s;
  s.dtypes = std::move(dtypes);
  s.attrs = std::move(attrs);
  s.batch_rank = batch_rank;
  s.config = std::move(config);
  s.fixed_sizes = std::move(fixed_sizes);
  s.cache_dir = cache_dir;
  s.grad_wrt = std::move(grad_wrt);
  s.grad_save = grad_save;
  s.grad_forward = grad_forward;
  nb::gil_scoped_release release;  // compiling takes milliseconds to seconds
  return kiln::compile(spec, composite, runtime, s);
}

/** A dtype spelling as DLPack's, for arrays over a weights file. */
nb::dlpack::dtype dlpack_dtype(const std::string& t) {
  using Code = nb::dlpack::dtype_code;
  auto of = [](Code c, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  if (t == "f64" || t == "f32" || t == "f16") return of(Code::Float, std::stoi(t.substr(1)));
  if (t == "bf16") return of(Code::Bfloat, 16);
  if (t == "bool") return of(Code::Bool, 8);
  if (t[0] == 'u') return of(Code::UInt, std::stoi(t.substr(1)));
  return of(Code::Int, std::stoi(t.substr(1)));
}

/** Tensor `name` of the Weights `self` as an array over its mapping, which `self` keeps. A bf16
 *  tensor reads as its uint16 bits where `bits_for_bf16` (NumPy has no bfloat16). */
template <class Framework>
nb::ndarray<Framework> weight_array(nb::handle self, const std::string& name, bool bits_for_bf16) {
  const kiln::Weights& w = nb::cast<const kiln::Weights&>(self);
  const std::vector<int64_t> dims = w.shape(name);
  std::vector<size_t> shape(dims.begin(), dims.end());
  std::string t = w.dtype(name);
  if (bits_for_bf16 && t == "bf16") t = "u16";
  return nb::ndarray<Framework>(const_cast<void*>(w.data(name)), shape.size(), shape.data(), self,
                                nullptr, dlpack_dtype(t));
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Kiln's compiler and kernels; use the kiln package, not this module.";
  nb::register_exception_translator(translate_spec_error);

  nb::class_<kiln::Spec>(m, "Spec")
      .def_static("load", &kiln::Spec::load, "path"_a, nb::call_guard<nb::gil_scoped_release>())
      .def_static("from_string", &kiln::Spec::from_string, "text"_a, "name"_a = "<string>",
                  nb::call_guard<nb::gil_scoped_release>())
      .def("composites", &kiln::Spec::composites)
      .def("has", &kiln::Spec::has, "name"_a)
      .def("doc", &kiln::Spec::doc, "name"_a);

  nb::class_<kiln::py::Kernel>(m, "Kernel",
                               "A composite compiled for one runtime, callable at any sizes "
                               "(docs/python.md); made by Spec.compile.")
      .def("__call__", &kiln::py::Kernel::call, "args"_a, nb::kw_only(), "out"_a = nb::none(),
           "sizes"_a = nb::none(), "stream"_a = nb::none(),
           "Runs on the inputs (arrays in declaration order) and returns the output, or a tuple "
           "of them, allocated like the first input; out= passes output arrays (or a tuple with "
           "an array or None per output), sizes= binds size variables no shape gives. On CUDA "
           "the kernels are queued on stream= (default: PyTorch's current stream for tensors, "
           "else CUDA's default stream) and the call returns without waiting.")
      .def("bind", &kiln::py::Kernel::bind, "args"_a, nb::kw_only(), "out"_a = nb::none(),
           "sizes"_a = nb::none(),
           "The sizes a call with these arguments binds, every check made; runs nothing.")
      .def(
          "weights_changed", [](const kiln::py::Kernel& k) { k.compiled().weights_changed(); },
          "A const input was changed in place: the next call packs it afresh.")
      .def_prop_ro("composite", [](const kiln::py::Kernel& k) { return k.compiled().composite(); })
      .def_prop_ro("runtime", [](const kiln::py::Kernel& k) { return k.compiled().runtime(); })
      .def_prop_ro(
          "device",
          [](const kiln::py::Kernel& k) { return k.compiled().device_memory() ? "cuda" : "cpu"; })
      .def_prop_ro("inputs", [](const kiln::py::Kernel& k) { return k.compiled().inputs(); })
      .def_prop_ro("outputs", [](const kiln::py::Kernel& k) { return k.compiled().outputs(); })
      .def_prop_ro("size_vars", [](const kiln::py::Kernel& k) { return k.compiled().size_vars(); })
      .def(
          "dtype",
          [](const kiln::py::Kernel& k, const std::string& n) { return k.compiled().dtype(n); },
          "name"_a)
      .def(
          "symbolic_shape",
          [](const kiln::py::Kernel& k, const std::string& n) {
            return k.compiled().symbolic_shape(n);
          },
          "name"_a)
      .def(
          "shape",
          [](const kiln::py::Kernel& k, const std::string& n,
             const std::map<std::string, int64_t>& sizes) { return k.compiled().shape(n, sizes); },
          "name"_a, "sizes"_a)
      .def(
          "is_const",
          [](const kiln::py::Kernel& k, const std::string& n) { return k.compiled().is_const(n); },
          "name"_a)
      .def("__repr__", &kiln::py::Kernel::repr);

  m.def(
      "compile",
      [](const kiln::Spec& spec, const std::string& composite, const std::string& runtime,
         std::map<std::string, std::string> dtypes, std::map<std::string, std::string> attrs,
         int batch_rank, std::map<std::string, std::string> config,
         std::map<std::string, int64_t> fixed_sizes, const std::string& cache_dir,
         std::vector<std::string> grad_wrt, const std::string& grad_save, bool grad_forward,
         nb::object allocate) {
        return kiln::py::Kernel(
            compile(spec, composite, runtime, std::move(dtypes), std::move(attrs), batch_rank,
                    std::move(config), std::move(fixed_sizes), cache_dir, std::move(grad_wrt),
                    grad_save, grad_forward),
            std::move(allocate));
      },
      "spec"_a, "composite"_a, "runtime"_a, "dtypes"_a, "attrs"_a, "batch_rank"_a, "config"_a,
      "fixed_sizes"_a, "cache_dir"_a, "grad_wrt"_a, "grad_save"_a, "grad_forward"_a, "allocate"_a);

  nb::class_<kiln::Weights>(m, "Weights")
      .def_static("open", &kiln::Weights::open, "path"_a)
      .def_prop_ro("names", &kiln::Weights::names)
      .def_prop_ro("metadata", &kiln::Weights::metadata)
      .def("has", &kiln::Weights::has, "name"_a)
      .def("dtype", &kiln::Weights::dtype, "name"_a)
      .def("shape", &kiln::Weights::shape, "name"_a)
      .def(
          "array",
          [](nb::handle self, const std::string& name) {
            return weight_array<nb::numpy>(self, name, true);
          },
          "name"_a)
      .def(
          "tensor",
          [](nb::handle self, const std::string& name) {
            return weight_array<nb::pytorch>(self, name, false);
          },
          "name"_a);

  // kiln.generate (kiln/_generate.py checks and gathers the arrays): the weights as host
  // arrays by name, kept alive by the caller for the call.
  m.def(
      "generate",
      [](const kiln::py::Kernel& step,
         std::map<std::string, nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>> inputs,
         const std::map<std::string, int64_t>& sizes, const std::vector<int32_t>& prompt,
         int new_tokens, nb::object on_token, const kiln::py::Kernel* decode_step) {
        std::map<std::string, const void*> given;
        for (const auto& [name, a] : inputs)
          given[name] = a.data();
        std::function<void(int32_t)> seen;
        if (!on_token.is_none())
          seen = [&on_token](int32_t t) {
            nb::gil_scoped_acquire hold;
            on_token(t);
          };
        kiln::Generation g;
        {
          nb::gil_scoped_release release;  // seconds of kernels; on_token takes it back
          g = kiln::generate(step.compiled(), given, sizes, prompt, new_tokens, seen,
                             decode_step ? &decode_step->compiled() : nullptr);
        }
        return nb::make_tuple(g.tokens, g.prefill_seconds, g.decode_seconds);
      },
      "step"_a, "inputs"_a, "sizes"_a, "prompt"_a, "new_tokens"_a, "on_token"_a.none(),
      "decode_step"_a.none());

  m.def("config_knobs", [] {
    nb::list out;
    for (const kiln::ConfigKnob& k : kiln::config_knobs())
      out.append(nb::make_tuple(k.name, k.stage, k.default_value, k.help, k.in_cache_key));
    return out;
  });
  m.def("runtimes", [] {
    std::vector<kiln::RuntimeInfo> found;
    {
      nb::gil_scoped_release release;  // opens and probes every plugin
      found = kiln::runtimes();
    }
    nb::list out;
    for (const kiln::RuntimeInfo& r : found)
      out.append(nb::make_tuple(r.name, r.descriptor, r.backend, r.device, r.usable, r.note));
    return out;
  });
  m.def(
      "cache_info",
      [](const std::string& dir) {
        kiln::CacheInfo c = kiln::cache_info(dir);
        return nb::make_tuple(c.dir, c.entries, c.bytes);
      },
      "dir"_a = "");
  m.def("clear_cache", &kiln::clear_cache, "dir"_a = "");
}
