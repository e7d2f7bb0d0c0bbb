"""kiln.generate: greedy generation with a step composite over a KV cache (docs/models.md
"Generating"; the C++ API's kiln::generate)."""

from dataclasses import dataclass

from . import _core

# Kiln's dtypes as NumPy's (bf16 as its uint16 bits, as kiln.Weights reads it).
_NUMPY = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "uint16", "i64": "int64",
          "i32": "int32", "i16": "int16", "i8": "int8", "u64": "uint64", "u32": "uint32",
          "u16": "uint16", "u8": "uint8", "bool": "bool"}


@dataclass
class Generation:
    """What generate() produced."""
    tokens: list            #: the new token ids, in order
    prefill_seconds: float  #: the first call, on the whole prompt
    decode_seconds: float   #: the calls on one token each, together


def generate(step, weights, prompt, new_tokens, *, sizes=None, on_token=None, decode_step=None):
    """Greedy generation: one call of `step` (a compiled step composite such as
    std:gpt2.toml's gpt2_step) on the prompt, then one call a token, each next token the first
    maximum of the logits. `weights` is a kiln.Weights (each input the file holds, found as
    Weights.inputs_for finds it) or a dict {input name: array}; the token ids, the position and
    the cache (the step's state, kept in two buffers swapped between calls) are the step's own.
    Size variables are bound from the weights' shapes; `sizes` binds others. `on_token(t)` sees
    each token as it comes; `decode_step`, the same composite compiled with
    fixed_sizes={"S": 1}, runs the one-token calls. A weight of another dtype or shape, one
    missing, an empty prompt or a token id outside the vocabulary is a ValueError naming it.

        w = kiln.Weights("gpt2.safetensors")
        step = kiln.load("std:gpt2.toml").compile("gpt2_step", "openmp", attrs={"layers": 12})
        g = kiln.generate(step, w, [464, 3290, 318], 20, on_token=print)
    """
    import numpy as np

    from ._weights import Weights

    given = weights.arrays_for(step) if isinstance(weights, Weights) else dict(weights)
    unknown = sorted(set(given) - set(step.inputs))
    if unknown:
        raise ValueError(f"generate: {step.composite!r} has no input {unknown[0]!r}")
    bound = {str(k): int(v) for k, v in (sizes or {}).items()}
    by = {k: "sizes=" for k in bound}
    arrays = {}
    for name, value in given.items():
        a = np.ascontiguousarray(value)
        want = _NUMPY.get(step.dtype(name))
        if want is None or a.dtype != np.dtype(want):
            raise ValueError(f"generate: input {name!r} of {step.composite!r} is "
                             f"{step.dtype(name)} (NumPy {want}), not {a.dtype}")
        dims = step.symbolic_shape(name)
        if len(dims) != a.ndim:
            raise ValueError(f"generate: input {name!r} of {step.composite!r} has "
                             f"{len(dims)} dimensions {list(dims)}, not {a.ndim}")
        for d, extent in zip(dims, a.shape):
            if d in step.size_vars:
                if d in bound and bound[d] != extent:
                    raise ValueError(f"generate: input {name!r} binds size {d} to {extent}, but "
                                     f"{by[d]} bound it to {bound[d]}")
                bound.setdefault(d, int(extent))
                by.setdefault(d, f"input {name!r}")
        arrays[name] = a
    for name, a in arrays.items():  # every dimension, now that all weights have bound theirs
        try:
            want = tuple(step.shape(name, bound))
        except (RuntimeError, ValueError):
            continue  # a dimension of a size only the call binds
        if want != a.shape:
            raise ValueError(f"generate: input {name!r} of {step.composite!r} is "
                             f"{list(step.symbolic_shape(name))} = {list(want)}, not {list(a.shape)}")
    prompt = [int(t) for t in prompt]
    tokens, prefill, decode = _core.generate(step, arrays, bound, prompt, int(new_tokens), on_token,
                                             decode_step)
    return Generation(list(tokens), prefill, decode)
