"""kiln.torch_op: a compiled composite as a PyTorch custom operator (torch.library), so that it
runs inside torch.compile graphs and torch.ops like any other operator (docs/python.md,
"PyTorch operators")."""

import atexit
import re

from . import _arrays

_libraries = []  # the torch.library.Library objects: an operator lives as long as its library
_kernels = []  # the kernels the operators call, one list each: emptied when the interpreter ends


@atexit.register
def _release():
    """Lets the kernels go before the extension is torn down (PyTorch's registries and compiled
    graphs keep the implementations until then)."""
    for held in _kernels:
        held.clear()
    _libraries.clear()
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")


def _sizes_from_shapes(kernel, args):
    """The size variables the inputs' shapes bind where a dimension is written as a plain
    variable (`N`); no data is read, so it works on torch.compile's fake tensors."""
    sizes = {}
    for name, a in zip(kernel.inputs, args):
        for symbol, extent in zip(kernel.symbolic_shape(name), a.shape):
            if symbol.isidentifier():
                sizes.setdefault(symbol, int(extent))
    return sizes


def torch_op(kernel, qualname):
    """Registers ``kernel`` as the PyTorch operator ``qualname`` ("namespace::name") and returns
    it (the same as ``torch.ops.namespace.name``). It takes the kernel's inputs as tensors, in
    order, and returns its output (a tuple for several). Its fake implementation computes the
    output shapes from the input shapes, so ``torch.compile`` traces through it; the
    implementation for the kernel's device (CPU, or CUDA for the cuda runtime, on the current
    stream) calls the kernel on the tensors (contiguous). It has no
    autograd formula: calling it on a tensor that requires grad raises, as the kernel does."""
    import torch

    if not _NAME.match(qualname):
        raise ValueError(f"an operator name is 'namespace::name', got {qualname!r}")
    namespace, name = qualname.split("::")
    inputs, outputs = list(kernel.inputs), list(kernel.outputs)
    for n in inputs:
        if not n.isidentifier():
            raise ValueError(f"input '{n}' cannot name an operator argument")
    result = "Tensor" if len(outputs) == 1 else "(" + ", ".join(["Tensor"] * len(outputs)) + ")"
    library = torch.library.Library(namespace, "FRAGMENT")
    library.define(f"{name}({', '.join('Tensor ' + n for n in inputs)}) -> {result}")

    held = [kernel]
    _kernels.append(held)

    def run(*args):
        return held[0](*args)

    def fake(*args):
        kernel = held[0]
        sizes = _sizes_from_shapes(kernel, args)
        device = args[0].device if args else torch.device("cpu")
        made = tuple(
            torch.empty(kernel.shape(o, sizes),
                        dtype=getattr(torch, _arrays._TORCH_NAMES[kernel.dtype(o)]),
                        device=device)
            for o in outputs)
        return made[0] if len(made) == 1 else made

    library.impl(name, run, "CUDA" if kernel.device == "cuda" else "CPU")
    torch.library.register_fake(qualname, fake, lib=library)
    _libraries.append(library)
    return getattr(getattr(torch.ops, namespace), name)
