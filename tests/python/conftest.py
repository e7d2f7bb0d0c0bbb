"""Shared helpers of the Python package's tests (docs/python.md, "Tests"): the repository root,
every ops/ composite's first test case, seeded inputs in its ranges, and the interpreter's
tolerances. Run from the repository root with the package on PYTHONPATH (ctest -L python)."""

import pathlib
import tomllib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def ops_cases():
    """(file, composite, test table, batched) for every composite of ops/ with a test table."""
    cases = []
    for path in sorted((ROOT / "ops").glob("*.toml")):
        with open(path, "rb") as f:
            spec = tomllib.load(f)
        for name, table in spec.items():
            if name == "meta" or "test" not in table:
                continue
            batched = any("..." in t for t in table.get("in", {}).values())
            cases.append((path.name, name, table["test"], batched))
    return cases


def first_case(test, batched):
    """The sizes of the test table's first case, and its first non-empty batch shape."""
    sizes = {k: (v[0] if isinstance(v, list) else v) for k, v in test.get("sizes", {}).items()}
    batch = []
    if batched:
        shapes = test.get("batch", [])
        if shapes and not isinstance(shapes[0], list):
            shapes = [shapes]
        batch = next((b for b in shapes if b), [])
    return sizes, batch


def random_input(rng, dtype, shape, bounds):
    """Seeded data in [low, high) (kiln run's defaults: [-1, 1) floats, [-8, 8) integers)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("f"):
        lo, hi = bounds or (-1.0, 1.0)
        return rng.uniform(lo, hi, shape).astype({"f64": np.float64, "f32": np.float32,
                                                  "f16": np.float16}[dtype])
    lo, hi = bounds or (-8, 8)
    np_dtype = np.dtype({"i": "int", "u": "uint"}[dtype[0]] + dtype[1:])
    lo, hi = max(int(lo), int(np.iinfo(np_dtype).min)), min(int(hi), int(np.iinfo(np_dtype).max) + 1)
    return rng.integers(lo, hi, shape, dtype=np_dtype, endpoint=False)


def assert_matches(got, want, dtype, rtol=None, atol=None, what=""):
    """driver/compare.cpp's check: integers exactly; floats within the dtype's relative
    tolerance (or the table's, if larger), scaled by the largest finite reference value."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    if not dtype.startswith(("f", "bf")):
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    r = max({"f64": 1e-9, "f32": 2e-5, "f16": 1e-2}.get(dtype, 4e-2), rtol or 0)
    w = want.astype(np.float64)
    finite = np.abs(w[np.isfinite(w)])
    scale = max(finite.max() if finite.size else 0.0, 1e-30)
    np.testing.assert_allclose(got.astype(np.float64), w, rtol=r, atol=max(atol or 0, r * scale),
                               equal_nan=True, err_msg=what)


@pytest.fixture(scope="session")
def root():
    return ROOT
