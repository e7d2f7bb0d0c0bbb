"""kiln.load and kiln.Spec: spec files and strings, and compiling their composites."""

import os

from . import _arrays, _core


def _attr_text(value):
    """An attribute value as `kiln run --attr` spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_attr_text(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _config_text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class Spec:
    """A loaded spec file (or string) and the files it uses. Made by kiln.load or
    Spec.from_string."""

    def __init__(self, core, name):
        self._core = core
        self.name = name

    @staticmethod
    def from_string(text: str, name: str = "<string>") -> "Spec":
        """Parses ``text`` as a spec file called ``name``: the file that diagnostics name (their
        source lines come from ``text``); ``use`` paths are relative to its folder (the current
        directory for a bare name) and ``std:`` names the standard library."""
        return Spec(_core.Spec.from_string(text, name), name)

    @property
    def composites(self):
        """The names of the file's own composites, in the order written."""
        return self._core.composites()

    def __contains__(self, name):
        return self._core.has(name)

    def doc(self, name: str) -> str:
        """The doc string of composite ``name``."""
        return self._core.doc(name)

    def compile(self, composite, runtime="clang", *, dtype=None, attrs=None, config=None,
                batch_rank=0, specialize=None, cache_dir=None, grad=None, grad_save=None,
                grad_forward=False):
        """Compiles ``composite`` for ``runtime`` ("clang", "openmp", "cc", a descriptor path,
        or "interp", the reference interpreter) and returns a kiln.Kernel that runs it at any
        sizes. ``dtype`` binds type variables ({"T": "f16"}, NumPy or PyTorch dtypes too),
        ``attrs`` attributes ({"alpha": 0.2}), ``config`` the --config knobs
        (kiln.config_keys()), ``batch_rank`` the number of dimensions a leading ``...`` stands
        for, ``specialize`` sizes compiled as constants ({"K": 64}), ``cache_dir`` the
        compiled-code cache's folder. ``grad`` (a list of float input names) compiles the
        composite's backward composite with respect to them instead, as ``kiln run --grad``
        (docs/autodiff.md): its inputs are the composite's, then a cotangent per float output
        (``dy`` for ``y``); its outputs the gradients (``dx`` for ``x``), in ``grad``'s order.
        ``grad_save`` ("recompute", the default, "stats" or "all") chooses the forward values the
        backward composite takes as inputs between those and the cotangents (``saved_N``;
        docs/autodiff.md, "Saved values"); ``grad_forward=True`` compiles the forward pass that
        gives them instead: the composite's outputs followed by the saved values."""
        dtypes = {k: _arrays.dtype_name(v) for k, v in (dtype or {}).items()}
        attr_texts = {k: _attr_text(v) for k, v in (attrs or {}).items()}
        config_texts = {k: _config_text(v) for k, v in (config or {}).items()}
        fixed = {k: int(v) for k, v in (specialize or {}).items()}
        return _core.compile(self._core, composite, str(runtime), dtypes, attr_texts,
                             int(batch_rank), config_texts, fixed,
                             os.fspath(cache_dir) if cache_dir else "", _names(grad, "grad"),
                             str(grad_save or ""), bool(grad_forward), _arrays.allocate)

    def function(self, composite, runtime="clang", *, wrt=None, save="stats", **settings):
        """Compiles ``composite`` and its backward composite with respect to the float inputs
        ``wrt`` (default: every float input) and returns a kiln.Function: called on PyTorch
        tensors, it runs the forward kernel and records the backward kernel with autograd
        (docs/python.md, "Autograd"). ``save`` is the backward composite's save policy
        ("stats", "recompute" or "all"; docs/autodiff.md, "Saved values"): the forward kernel
        also returns the values it saves, kept for ``backward()``. ``settings`` are compile()'s
        keyword arguments."""
        from ._autograd import Function

        return Function(self, composite, runtime, wrt, save, settings)

    def __repr__(self):
        return f"kiln.Spec({self.name!r}: {', '.join(self.composites)})"


def _names(names, what):
    """A list of input names from a list or tuple of strings (a lone string is one name)."""
    if names is None:
        return []
    if isinstance(names, str):
        names = [names]
    names = list(names)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what}= takes input names (strings), got {n!r}")
    return names


def load(path) -> Spec:
    """Loads a spec file and the files it uses; ``"std:nn.toml"`` names a file of the standard
    library (Kiln's ops/)."""
    path = os.fspath(path)
    return Spec(_core.Spec.load(path), path)
