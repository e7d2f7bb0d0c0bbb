"""Every composite of ops/ through the Python API on the clang, openmp and cc runtimes, against
the reference interpreter through the same API, at the first case of its test table (its first
dtype, its first non-empty batch shape), on NumPy inputs in the table's ranges."""

import zlib

import numpy as np
import pytest

import kiln
from conftest import ROOT, assert_matches, first_case, ops_cases, random_input

CASES = ops_cases()
_specs, _references = {}, {}


def spec_of(file):
    if file not in _specs:
        _specs[file] = kiln.load(ROOT / "ops" / file)
    return _specs[file]


def reference(file, name, batch_rank):
    key = (file, name)
    if key not in _references:
        _references[key] = spec_of(file).compile(name, "interp", batch_rank=batch_rank)
    return _references[key]


def test_every_composite_is_covered():
    assert len(CASES) > 80
    names = {name for _, name, _, _ in CASES}
    assert {"softmax", "matmul", "add", "layernorm"} <= names


@pytest.mark.parametrize("runtime", ["clang", "openmp", "cc"])
@pytest.mark.parametrize("file,name,test,batched", CASES, ids=[f"{f}:{n}" for f, n, _, _ in CASES])
def test_composite(file, name, test, batched, runtime):
    sizes, batch = first_case(test, batched)
    batch_rank = len(batch)
    ref = reference(file, name, batch_rank)
    kernel = spec_of(file).compile(name, runtime, batch_rank=batch_rank)
    bound = dict(sizes, **{f"batch{i}": b for i, b in enumerate(batch)})
    rng = np.random.default_rng(zlib.crc32(f"{file}:{name}".encode()))
    ranges = test.get("range", {})
    inputs = [random_input(rng, kernel.dtype(x), kernel.shape(x, bound), ranges.get(x))
              for x in kernel.inputs]
    # sizes= agrees with the inputs' shapes; it alone binds the sizes of composites without
    # inputs (the random generators)
    given = {k: v for k, v in bound.items() if k in kernel.size_vars}
    got = kernel(*inputs, sizes=given)
    want = ref(*inputs, sizes=given)
    if len(kernel.outputs) == 1:
        got, want = (got,), (want,)
    assert len(got) == len(kernel.outputs)
    for out, g, w in zip(kernel.outputs, got, want):
        assert isinstance(g, np.ndarray)
        assert g.shape == tuple(kernel.shape(out, bound))
        assert_matches(g, w, kernel.dtype(out), test.get("rtol"), test.get("atol"),
                       f"{file}:{name} output {out} on {runtime}")
