"""kiln.Function: a compiled composite and its compiled backward composite as one
torch.autograd.Function, so that a model trains through Kiln kernels (docs/python.md,
"Autograd"; the backward composite is docs/autodiff.md's)."""

import atexit
import weakref

from ._spec import _names

_FLOATS = ("f64", "f32", "f16", "bf16")
_autograd_class = None  # the torch.autograd.Function subclass, made at the first call
_functions = weakref.WeakSet()  # every kiln.Function: their kernels go before the extension


@atexit.register
def _release():
    """Lets the kernels go before the extension is torn down: autograd graphs still alive at
    exit hold their Functions until after it."""
    for f in list(_functions):
        f.forward_kernel = f.backward_kernel = None


class Function:
    """A composite's forward kernel and its backward kernel with respect to ``wrt``, made by
    Spec.function. Calling it on PyTorch tensors runs the forward kernel and returns its
    outputs (a tuple for several); when autograd records, ``backward()`` runs the backward
    kernel on the saved inputs, the values the save policy keeps (``saved``, which the forward
    kernel returns after the outputs) and the outputs' cotangents."""

    def __init__(self, spec, composite, runtime, wrt, save, settings):
        if "grad" in settings or "grad_save" in settings or "grad_forward" in settings:
            raise TypeError("Spec.function takes wrt= for the inputs to differentiate and save= "
                            "for the save policy, not grad=, grad_save= or grad_forward=")
        plain = spec.compile(composite, "interp", **settings)  # lowers only: names and dtypes
        floats = [n for n in plain.inputs if plain.dtype(n) in _FLOATS]
        wrt = floats if wrt is None else _names(wrt, "wrt")
        if not wrt:
            raise ValueError(f"'{composite}' has no float input to differentiate with respect to; "
                             f"its inputs are {', '.join(plain.inputs) or 'none'}")
        self.composite = composite
        self.save = str(save)
        self.backward_kernel = spec.compile(composite, runtime, grad=wrt, grad_save=self.save,
                                            **settings)
        # the forward pass of this backward composite: the outputs, then the saved values
        self.forward_kernel = spec.compile(composite, runtime, grad=wrt, grad_save=self.save,
                                           grad_forward=True, **settings)
        self.wrt = tuple(wrt)
        self._outputs = tuple(plain.outputs)
        self.saved = tuple(self.forward_kernel.outputs[len(self._outputs):])
        self._grad_position = {name: k for k, name in enumerate(self.wrt)}
        self._float_outputs = tuple(plain.dtype(o) in _FLOATS for o in self._outputs)
        self._packs_forward = any(self.forward_kernel.is_const(n)
                                  for n in self.forward_kernel.inputs)
        self._packs_backward = any(self.backward_kernel.is_const(n)
                                   for n in self.backward_kernel.inputs)
        _functions.add(self)

    @property
    def inputs(self):
        return self.forward_kernel.inputs

    @property
    def outputs(self):
        return list(self._outputs)

    def __call__(self, *inputs):
        import torch

        names = self.forward_kernel.inputs
        if len(inputs) != len(names):
            raise TypeError(f"{self.composite} takes {len(names)} inputs "
                            f"({', '.join(names)}), got {len(inputs)}")
        for name, t in zip(names, inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"kiln.Function takes PyTorch tensors; input '{name}' is a "
                                f"{type(t).__name__}")
            if t.requires_grad and name not in self._grad_position and torch.is_grad_enabled():
                raise ValueError(
                    f"input '{name}' requires grad, but {self.composite}'s "
                    f"backward kernel differentiates only {', '.join(self.wrt)}: add it to wrt= "
                    f"or pass {name}.detach()")
        return _function_class().apply(self, *inputs)

    def run_forward(self, inputs):
        """The forward kernel's outputs, always a tuple: the composite's, then the saved
        values. Const inputs are read afresh at every
        call: a model's weights change between steps, and autograd's in-place updates (and
        gradcheck's, through ``.data``) leave no trace the kernel could see."""
        if self._packs_forward:
            self.forward_kernel.weights_changed()
        outs = self.forward_kernel(*inputs)
        return outs if isinstance(outs, tuple) else (outs,)

    def run_backward(self, inputs, saved, grads, needs_grad):
        """One gradient or None per input: the backward kernel's output for an input of ``wrt``
        whose gradient autograd asks for, None for any other. ``saved``: the saved values the
        forward kernel gave."""
        if not any(needs_grad[k] for k, n in enumerate(self.inputs) if n in self._grad_position):
            return (None,) * len(inputs)
        cotangents = [g.contiguous() for g, is_float in zip(grads, self._float_outputs) if is_float]
        if self._packs_backward:
            self.backward_kernel.weights_changed()
        results = self.backward_kernel(*inputs, *saved, *cotangents)
        if not isinstance(results, tuple):
            results = (results,)
        out = []
        for name, needed in zip(self.inputs, needs_grad):
            k = self._grad_position.get(name)
            out.append(results[k] if k is not None and needed else None)
        return tuple(out)

    def __repr__(self):
        return (f"kiln.Function({self.composite} on {self.forward_kernel.runtime}, "
                f"wrt {', '.join(self.wrt)}, save {self.save})")


def _function_class():
    """The torch.autograd.Function subclass that runs a kiln.Function, made on first use so
    that the package imports without PyTorch."""
    global _autograd_class
    if _autograd_class is None:
        import torch

        class KilnFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, fn, *inputs):
                outs = fn.run_forward(inputs)
                n = len(fn._float_outputs)
                outs, saved = outs[:n], outs[n:]
                ctx.fn = fn
                ctx.save_for_backward(*inputs, *saved)
                ctx.mark_non_differentiable(
                    *[o for o, is_float in zip(outs, fn._float_outputs) if not is_float])
                return outs[0] if len(outs) == 1 else outs

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, *grads):
                n = len(ctx.fn.inputs)
                tensors = ctx.saved_tensors
                return (None, *ctx.fn.run_backward(tensors[:n], tensors[n:], grads,
                                                   ctx.needs_input_grad[1:]))

        _autograd_class = KilnFunction
    return _autograd_class
