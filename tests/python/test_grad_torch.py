"""Kiln's gradients against torch.autograd: every composite of ops/ with a float input, a float
output and a `baseline.torch` expression (the one `kiln bench --vs torch` runs), its backward
composite compiled by clang in f64 (where its types allow) with respect to every float input, at
the second case of its test table, against the gradient torch.autograd takes through the
baseline expression with the same cotangents. Skipped where PyTorch is not installed."""

import math
import tomllib
import zlib

import numpy as np
import pytest

import kiln
from conftest import ROOT, first_case, random_input

torch = pytest.importorskip("torch")

FLOATS = ("f64", "f32", "f16", "bf16")
# Composites left out, with the reason: the test fails for anything else that differs.
LEFT_OUT = {
    "gpt2": "its backward composite takes minutes to compile at the test's sizes",
}


def baseline_cases():
    """(file, name, table) for every composite of ops/ with a torch baseline."""
    cases = []
    for path in sorted((ROOT / "ops").glob("*.toml")):
        with open(path, "rb") as f:
            spec = tomllib.load(f)
        for name, table in spec.items():
            if name != "meta" and "torch" in table.get("baseline", {}) and "test" in table:
                cases.append((path.name, name, table))
    return cases


CASES = baseline_cases()


def type_choice(table):
    """f64 for every type variable that allows it, else its first dtype."""
    return {t: ("f64" if "f64" in allowed else allowed[0])
            for t, allowed in table.get("types", {}).items()}


def second_case(test, batched):
    sizes, batch = first_case(test, batched)
    for k, v in test.get("sizes", {}).items():
        if isinstance(v, list) and len(v) > 1:
            sizes[k] = v[1]
    return sizes, batch


def torch_baseline(table, where, names, tensors, sizes):
    """The baseline expression as tools/baselines/torch_baseline.py evaluates it."""
    scope = {"torch": torch, "F": torch.nn.functional, "math": math}
    scope.update(sizes)
    scope.update(table.get("attrs", {}))
    source = f"def baseline({', '.join(names)}):\n    return ({table['baseline']['torch']})\n"
    exec(compile(source, where, "exec"), scope)
    out = scope["baseline"](*tensors)
    return out if isinstance(out, tuple) else (out,)


def test_enough_composites_are_compared():
    compared = [n for _, n, t in CASES if n not in LEFT_OUT]
    assert len(compared) >= 30
    assert {"softmax", "layernorm", "matmul", "attention", "conv2d", "logsumexp"} <= set(compared)


@pytest.mark.parametrize("file,name,table", CASES, ids=[f"{f}:{n}" for f, n, _ in CASES])
def test_gradient_matches_torch(file, name, table):
    if name in LEFT_OUT:
        pytest.skip(LEFT_OUT[name])
    test = table["test"]
    batched = any("..." in t for t in table.get("in", {}).values())
    sizes, batch = second_case(test, batched)
    settings = dict(dtype=type_choice(table), batch_rank=len(batch))
    spec = kiln.load(ROOT / "ops" / file)
    forward = spec.compile(name, "interp", **settings)
    wrt = [x for x in forward.inputs if forward.dtype(x) in FLOATS]
    float_outputs = [o for o in forward.outputs if forward.dtype(o) in FLOATS]
    if not wrt or not float_outputs:
        pytest.skip("no float input or no float output: nothing to differentiate")
    backward = spec.compile(name, "clang", grad=wrt, **settings)
    bound = dict(sizes, **{f"batch{i}": b for i, b in enumerate(batch)})
    rng = np.random.default_rng(zlib.crc32(f"{file}:{name}:grad".encode()))
    ranges = test.get("range", {})
    inputs = [random_input(rng, forward.dtype(x), forward.shape(x, bound), ranges.get(x))
              for x in forward.inputs]
    cotangents = [random_input(rng, forward.dtype(o), forward.shape(o, bound), None)
                  for o in float_outputs]
    got = backward(*[torch.from_numpy(a) for a in inputs + cotangents])
    got = got if isinstance(got, tuple) else (got,)

    tensors = [torch.from_numpy(a.copy()).requires_grad_(forward.dtype(x) in FLOATS)
               for x, a in zip(forward.inputs, inputs)]
    outs = torch_baseline(table, f"{file}:{name}", forward.inputs, tensors, sizes)
    pairs = [(outs[forward.outputs.index(o)], torch.from_numpy(c))
             for o, c in zip(float_outputs, cotangents)]
    pairs = [(y, c) for y, c in pairs if y.requires_grad]  # a float output of no input
    leaves = [t for t in tensors if t.requires_grad]
    want = torch.autograd.grad([y for y, _ in pairs], leaves, [c for _, c in pairs],
                               allow_unused=True, materialize_grads=True) if pairs else \
        [torch.zeros_like(t) for t in leaves]
    assert len(got) == len(want) == len(wrt)
    for x, g, w in zip(wrt, got, want):
        w = w.detach()
        scale = max(float(w.abs().max()) if w.numel() else 0.0, 1.0)
        # f64 rounding, or the composite's own stated accuracy where larger (gelu's erf is an
        # approximation: Kiln differentiates it, torch the exact function)
        tol = max(1e-9 if forward.dtype(x) == "f64" else 1e-4, test.get("rtol", 0),
                  test.get("atol", 0))
        torch.testing.assert_close(g, w, rtol=tol, atol=tol * scale,
                                   msg=lambda m: f"{file}:{name} d{x}: {m}")
