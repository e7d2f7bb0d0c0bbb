"""The Python API on NumPy arrays: loading, compiling, size binding, out=, zero copy, and every
error path (docs/python.md)."""

import ctypes

import numpy as np
import pytest

import kiln
from conftest import ROOT

EXPR = """
[pad_one]
doc  = "y = x with one zero appended; z = x[:N] + w, w one longer than x."
in   = { x = "T[N]", w = "T[N + 1]" }
out  = { y = "T[N + 1]" }
types = { T = ["f32"] }
body = '''
y[i < N + 1] = where(i < N, w[i], 0.0)
'''
"""


@pytest.fixture(scope="module")
def nn():
    return kiln.load("std:nn.toml")


@pytest.fixture(scope="module")
def math():
    return kiln.load(ROOT / "ops" / "math.toml")


@pytest.fixture(scope="module")
def softmax(nn):
    return nn.compile("softmax", "clang", batch_rank=1)


@pytest.fixture(scope="module")
def matmul(nn):
    return nn.compile("matmul", "clang")


@pytest.fixture(scope="module")
def add(math):
    return math.compile("add", "clang")


def np_softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_load_std_and_introspection(nn, softmax):
    assert "softmax" in nn.composites and "softmax" in nn
    assert "no_such_op" not in nn
    assert nn.doc("softmax").startswith("Numerically stable softmax")
    assert softmax.inputs == ["x"] and softmax.outputs == ["y"]
    assert softmax.size_vars == ["batch0", "N"]
    assert softmax.symbolic_shape("x") == ["batch0", "N"]
    assert softmax.dtype("y") == "f32"
    assert softmax.composite == "softmax" and softmax.runtime == "clang"
    assert repr(softmax) == "kiln.Kernel(softmax on clang: x f32[batch0, N] -> y f32[batch0, N])"


def test_one_kernel_serves_every_size(softmax):
    rng = np.random.default_rng(1)
    for rows, n in [(3, 7), (5, 1000), (1, 1)]:
        x = rng.uniform(-8, 8, (rows, n)).astype(np.float32)
        y = softmax(x)
        assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (rows, n)
        np.testing.assert_allclose(y, np_softmax(x), rtol=1e-5, atol=1e-6)
        assert softmax.bind(x) == {"batch0": rows, "N": n}


def test_matmul_binds_sizes_from_two_inputs(matmul):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 5), dtype=np.float32)
    b = rng.standard_normal((5, 4), dtype=np.float32)
    np.testing.assert_allclose(matmul(a, b), a @ b, rtol=1e-5, atol=1e-5)
    assert matmul.bind(a, b) == {"M": 3, "N": 4, "K": 5} or matmul.bind(a, b)["K"] == 5


def test_out_is_written_in_place_without_a_copy(softmax):
    x = np.random.default_rng(3).uniform(-1, 1, (4, 9)).astype(np.float32)
    out = np.empty_like(x)
    address = out.ctypes.data
    y = softmax(x, out=out)
    assert y is out
    assert out.ctypes.data == address
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-6)
    # a tuple of one output works too; the result is still the caller's array
    (y2,) = (softmax(x, out=(out,)),)
    assert y2 is out


def test_contiguous_views_are_passed_by_pointer(softmax, add):
    x = np.random.default_rng(4).uniform(-1, 1, (6, 8)).astype(np.float32)
    rows = x[2:5]  # an offset into x, still dense
    np.testing.assert_allclose(softmax(rows), np_softmax(rows), rtol=1e-5, atol=1e-6)
    big = np.zeros((3, 8), np.float32)
    out = big[1:2]  # a view: the kernel writes into big's memory
    softmax(x[:1], out=out)
    np.testing.assert_allclose(big[1], np_softmax(x[:1])[0], rtol=1e-5, atol=1e-6)
    assert not big[0].any() and not big[2].any()
    col = np.ones((5, 1), np.float32)[:, :]  # size-1 dimensions: any stride
    assert softmax(col).shape == (5, 1)
    # read-only inputs are fine
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    np.testing.assert_array_equal(add(a, a), 2 * a)


def test_non_contiguous_arguments_are_refused(softmax):
    x = np.zeros((8, 6), np.float32)
    with pytest.raises(ValueError, match=r"softmax: input 'x' is not contiguous \(shape \(6, 8\), "
                                         r"strides \(1, 6\)"):
        softmax(x.T)
    with pytest.raises(ValueError, match="input 'x' is not contiguous.*ascontiguousarray"):
        softmax(x[:, ::2])
    with pytest.raises(ValueError, match="out= for output 'y' is not contiguous"):
        softmax(np.ascontiguousarray(x.T), out=np.zeros((8, 6), np.float32).T)
    np.testing.assert_allclose(softmax(np.ascontiguousarray(x.T)), np.full((6, 8), 1 / 8), rtol=1e-6)


def test_dtype_mismatches_are_type_errors(softmax, matmul):
    with pytest.raises(TypeError, match=r"softmax: input 'x' has dtype f64; expected f32 "
                                        r"\(f32\[batch0, N\]\)"):
        softmax(np.zeros((2, 3)))
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="matmul: input 'b' has dtype i32; expected f32"):
        matmul(a, np.zeros((3, 2), np.int32))
    with pytest.raises(TypeError, match="out= for output 'y' has dtype f16; expected f32"):
        softmax(a, out=np.zeros((2, 3), np.float16))


def test_shape_mismatches_name_the_argument_and_the_size(softmax, matmul):
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"matmul: input 'b' has shape \(4, 5\); expected "
                                         r"f32\[K, N\] with K = 3 \(from input 'a' dimension 1\), "
                                         r"but dimension 0 is 4"):
        matmul(a, np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match=r"softmax: input 'x' has 1 dimension, shape \(3,\); "
                                         r"expected 2: f32\[batch0, N\]"):
        softmax(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"out= for output 'y' has shape \(2, 4\); expected "
                                         r"f32\[M, N\] with N = 5"):
        matmul(a, np.zeros((3, 5), np.float32), out=np.zeros((2, 4), np.float32))


def test_expression_shapes_are_checked_and_allocated():
    spec = kiln.Spec.from_string(EXPR, "expr.toml")
    k = spec.compile("pad_one", "clang")
    x = np.arange(3, dtype=np.float32)
    w = np.arange(4, dtype=np.float32) + 10
    np.testing.assert_array_equal(k(x, w), [10, 11, 12, 0])
    with pytest.raises(ValueError, match=r"pad_one: input 'w' has shape \(3,\); expected "
                                         r"f32\[N \+ 1\] = \(4,\) with N = 3"):
        k(x, w[:3])
    with pytest.raises(ValueError, match=r"output 'y' has shape \(3,\); expected f32\[N \+ 1\]"):
        k(x, w, out=np.zeros(3, np.float32))


def test_argument_count_kind_and_sizes(softmax, matmul):
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"matmul takes 2 inputs \(a, b\), got 1"):
        matmul(a)
    with pytest.raises(TypeError, match="softmax: input 'x' must be an array .* got list"):
        softmax([[1.0, 2.0]])
    with pytest.raises(TypeError, match="out= must be an array or a tuple of 1"):
        softmax(a, out=(a, a))
    with pytest.raises(TypeError, match="out= for output 'y' must be an array .*; got int"):
        softmax(a, out=3)
    with pytest.raises(TypeError, match="input 'x' cannot be read through DLPack or the buffer "
                                        "protocol .*; got ndarray of dtype object"):
        softmax(np.array([[1, "a"]], dtype=object))
    assert softmax.bind(a, sizes={"N": 3}) == {"batch0": 2, "N": 3}
    with pytest.raises(ValueError, match=r"sizes= gives N = 4, but input 'x' dimension 1 makes it 3"):
        softmax(a, sizes={"N": 4})
    with pytest.raises(ValueError, match="sizes= names 'Q', which is no size variable; its size "
                                         "variables: batch0, N"):
        softmax(a, sizes={"Q": 1})
    with pytest.raises(ValueError, match="expected a non-negative integer"):
        softmax(a, sizes={"N": -3})
    with pytest.raises(ValueError, match=r"sizes= gives N = 3.0; expected a non-negative integer"):
        softmax(a, sizes={"N": 3.0})
    assert softmax.bind(a, sizes={"N": np.int64(3)}) == {"batch0": 2, "N": 3}
    with pytest.raises(TypeError, match="sizes= must be a dict"):
        softmax(a, sizes=[3])
    with pytest.raises(ValueError, match="sizes= names '1', which is no size variable"):
        softmax(a, sizes={1: 3})


def test_read_only_and_overlapping_outputs_are_refused(softmax, add):
    x = np.ones((2, 3), np.float32)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="out= for output 'y' is read-only"):
        softmax(x, out=ro)
    with pytest.raises(ValueError, match="out= for output 'y' overlaps input 'x'; Kiln kernels "
                                         "do not run in place"):
        softmax(x, out=x)
    a = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="overlaps input 'a'"):
        add(a[:4], a[4:], out=a[2:6])
    with pytest.raises(ValueError, match="overlaps input 'x'"):
        softmax.bind(x, out=x)  # bind makes every check
    rnd = kiln.load("std:random.toml").compile("threefry_round", "clang")
    w = np.arange(4, dtype=np.int64)
    buf = np.zeros(8, np.int64)
    with pytest.raises(ValueError, match="out= for output 'y1' overlaps out= for output 'y0'"):
        rnd(w, w, out=(buf[:4], buf[2:6]))
    y0, y1 = rnd(w, w, out=(buf[:4], None))  # None: allocated
    assert y0.base is buf and y1.base is None
    np.testing.assert_array_equal(y0, 2 * w)
    empty = np.zeros(0, np.float32)  # no bytes: overlaps nothing
    assert add(empty, empty, out=a[:0]).shape == (0,)


def test_empty_and_other_dtypes(math):
    add16 = math.compile("add", "clang", dtype={"T": "f16"})
    a = np.linspace(-2, 2, 7).astype(np.float16)
    y = add16(a, a)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, a + a)
    add8 = math.compile("add", "cc", dtype={"T": np.uint8})
    u = np.arange(250, 256, dtype=np.uint8)
    np.testing.assert_array_equal(add8(u, u), u + u)  # wraps as NumPy does
    e = np.zeros(0, np.float32)
    add32 = math.compile("add", "clang")
    assert add32(e, e).shape == (0,)


def test_bf16_outputs_need_torch_or_out(math):
    addbf = math.compile("add", "clang", dtype={"T": "bf16"})
    assert addbf.dtype("y") == "bf16"
    with pytest.raises(TypeError, match="input 'a' has dtype f32; expected bf16"):
        addbf(np.zeros(2, np.float32), np.zeros(2, np.float32))


def test_attrs_config_and_specialize(math, nn):
    leaky = math.compile("leaky_relu", "clang", attrs={"alpha": 0.5})
    x = np.array([-2, -1, 0, 3], np.float32)
    np.testing.assert_array_equal(leaky(x), [-1, -0.5, 0, 3])
    mm = nn.compile("matmul", "openmp", config={"TILE": 4, "threads": 2}, specialize={"K": 3})
    assert mm.size_vars == ["M", "N"]
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(mm(a, b), np.full((2, 2), 3))
    with pytest.raises(ValueError, match=r"input 'a' has shape \(2, 4\); expected f32\[M, (K|3)\]"):
        mm(np.ones((2, 4), np.float32), np.ones((4, 2), np.float32))


def test_interp_runtime_and_const_weights(nn):
    rng = np.random.default_rng(5)
    dense = nn.compile("dense_gelu", "clang")
    ref = nn.compile("dense_gelu", "interp")
    assert dense.is_const("w") and not dense.is_const("a")
    a = rng.standard_normal((3, 40), dtype=np.float32)
    bias = rng.standard_normal(20, dtype=np.float32)
    for _ in range(3):  # a new weight array each call: never the old one's packed panels
        w = rng.standard_normal((40, 20), dtype=np.float32)
        np.testing.assert_allclose(dense(a, w, bias), ref(a, w, bias), rtol=1e-4, atol=1e-5)
    w = rng.standard_normal((40, 20), dtype=np.float32)
    dense(a, w, bias)
    w *= -1  # changed in place: say so
    dense.weights_changed()
    np.testing.assert_allclose(dense(a, w, bias), ref(a, w, bias), rtol=1e-4, atol=1e-5)


def test_spec_errors_carry_their_place(tmp_path):
    with pytest.raises(kiln.SpecError) as e:
        kiln.Spec.from_string('[f]\nin = { x = "T[N" }\n', "broken.toml")
    assert e.value.file == "broken.toml" and e.value.line == 2 and e.value.column > 0
    assert str(e.value).startswith("broken.toml:2:")
    bad = EXPR.replace("w[i]", "v[i]")
    spec = kiln.Spec.from_string(bad, "bad.toml")
    with pytest.raises(kiln.SpecError) as e:
        spec.compile("pad_one", "clang")
    assert e.value.file == "bad.toml" and e.value.line == 8
    assert "y[i < N + 1] = where(i < N, v[i], 0.0)\n" in str(e.value)
    assert "^" in str(e.value)
    (tmp_path / "f.toml").write_text(bad)
    with pytest.raises(kiln.SpecError, match=r"f.toml:8:\d+: error:"):
        kiln.load(tmp_path / "f.toml").compile("pad_one", "interp")
    with pytest.raises(kiln.SpecError, match="does not exist"):
        kiln.load(tmp_path / "missing.toml")


def test_caller_mistakes_at_compile(nn):
    with pytest.raises(ValueError, match="no_such_op"):
        nn.compile("no_such_op")
    with pytest.raises(ValueError, match="no_such_runtime"):
        nn.compile("matmul", "no_such_runtime")
    with pytest.raises(ValueError, match="i32"):
        nn.compile("matmul", "interp", dtype={"T": "i32"})
    with pytest.raises(ValueError, match=r"unknown --config key 'TIEL' \(did you mean TILE\?\)"):
        nn.compile("softmax", "clang", config={"TIEL": 64})
    with pytest.raises(TypeError, match="no Kiln dtype"):
        nn.compile("matmul", "interp", dtype={"T": complex})
    with pytest.raises(ValueError, match="'matmul' has no size variable 'Q' to specialise"):
        nn.compile("matmul", "clang", specialize={"Q": 4})
    with pytest.raises(kiln.SpecError, match="is a folder, not a spec file"):
        kiln.load(ROOT / "ops")


def test_runtimes_config_keys_and_cache(tmp_path, nn):
    found = {r.name: r for r in kiln.runtimes()}
    assert {"clang", "cc"} <= set(found)
    assert found["cc"].usable and found["cc"].backend == "c"
    keys = {k.name: k for k in kiln.config_keys()}
    assert keys["TILE"].default == "32" and keys["TILE"].in_cache_key
    assert not keys["THREADS"].in_cache_key
    nn.compile("softmax", "cc", cache_dir=tmp_path)
    stats = kiln.cache.stats(tmp_path)
    assert stats["dir"] == str(tmp_path) and stats["entries"] == 1 and stats["bytes"] > 0
    assert kiln.cache.clear(tmp_path) == 1
    assert kiln.cache.stats(tmp_path)["entries"] == 0


def test_a_large_input_costs_no_memory():
    """Issue 31's "no copy": a 128 MiB input adds nothing to the peak RSS on a CPU runtime;
    the interpreter, which copies its inputs into tensors, shows that the measure sees a copy."""
    import resource

    def peak_mib():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

    spec = kiln.load("std:reduce.toml")
    growth = {}
    for runtime in ["clang", "interp"]:
        total = spec.compile("sum", runtime, dtype={"T": "f64"})
        x = np.ones(16 << 20)  # 128 MiB, touched
        total(x[:16])
        before = peak_mib()
        assert total(x) == 16 << 20
        growth[runtime] = peak_mib() - before
        del x
    assert growth["clang"] < 16
    assert growth["interp"] > 100


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLManagedTensor(ctypes.Structure):
    """DLPack's DLTensor followed by the manager context and a deleter (NULL here)."""

    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _FakeDeviceArray:
    """A DLPack producer of an f32 array that claims to live on a CUDA device (there is no GPU
    here): its data is never read, Kiln refuses it first."""

    def __init__(self, shape, device=(2, 1)):
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._t = _DLManagedTensor()
        self._t.data = 4096
        self._t.device = _DLDevice(*device)
        self._t.ndim = len(shape)
        self._t.dtype = _DLDataType(2, 32, 1)
        self._t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        self._device = device

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_void_p]
        return new(ctypes.addressof(self._t), b"dltensor", None)


def test_arrays_on_another_device_are_refused(softmax):
    with pytest.raises(ValueError, match=r"softmax: input 'x' is on cuda:1; the clang runtime "
                                         r"takes arrays in CPU memory"):
        softmax(_FakeDeviceArray((2, 3)))
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="out= for output 'y' is on cuda:1"):
        softmax(x, out=_FakeDeviceArray((2, 3)))


def test_stream_is_for_cuda_runtimes(softmax):
    assert softmax.device == "cpu"
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="softmax: stream= is for a CUDA runtime; the clang "
                                        "runtime runs on the CPU"):
        softmax(x, stream=0)


def test_an_output_numpy_cannot_hold(math):
    uniform = kiln.load("std:random.toml").compile("uniform", "clang", dtype={"T": "bf16"})
    with pytest.raises(TypeError, match="an output of dtype bf16 cannot be a NumPy array"):
        uniform(sizes={"M": 2, "N": 3})  # no inputs: outputs are NumPy arrays


def test_threads_call_one_kernel_at_once(nn):
    """Calls release the GIL while they run: threads share a kernel, each with its own arrays
    (and its own const weight, whose packed panels must not leak into another's call)."""
    from concurrent.futures import ThreadPoolExecutor

    # On openmp: once this test's kernels are freed, later openmp kernels in the run must still
    # launch (the plugin used to unload and pause libomp each time, and libomp then crashed).
    dense = nn.compile("dense_gelu", "openmp", config={"THREADS": 1})
    ref = nn.compile("dense_gelu", "interp")
    rng = np.random.default_rng(6)
    jobs = [(rng.standard_normal((5, 300), dtype=np.float32),
             rng.standard_normal((300, 70), dtype=np.float32),
             rng.standard_normal(70, dtype=np.float32)) for _ in range(4)]
    want = [ref(*job) for job in jobs]

    def work(k):
        return [dense(*jobs[k]) for _ in range(10)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for k, got in enumerate(results):
        for y in got:
            np.testing.assert_allclose(y, want[k], rtol=1e-4, atol=1e-4)


def test_threads_compile_from_one_spec(nn, tmp_path):
    """Compiling releases the GIL: threads compile the composites of one spec at once, each
    twice, into one fresh cache."""
    from concurrent.futures import ThreadPoolExecutor

    names = nn.composites[:8] * 2
    with ThreadPoolExecutor(4) as pool:
        kernels = list(pool.map(lambda n: nn.compile(n, "clang", cache_dir=tmp_path), names))
    assert [k.composite for k in kernels] == names
    assert kiln.cache.stats(tmp_path)["entries"] == 8


NUMPY_DTYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64,
                "i32": np.int32, "i16": np.int16, "i8": np.int8, "u64": np.uint64,
                "u32": np.uint32, "u16": np.uint16, "u8": np.uint8, "bool": np.bool_}


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_every_numpy_dtype_passes_through(math, dtype):
    """`where` takes every Kiln dtype: NumPy's dtype of each name goes in and comes out."""
    select = math.compile("where", "clang", dtype={"T": dtype})
    rng = np.random.default_rng(7)
    cond = rng.random(11) < 0.5
    a = rng.integers(0, 100, 11).astype(NUMPY_DTYPES[dtype])
    b = rng.integers(0, 100, 11).astype(NUMPY_DTYPES[dtype])
    y = select(cond, a, b)
    assert y.dtype == NUMPY_DTYPES[dtype]
    np.testing.assert_array_equal(y, np.where(cond, a, b))
