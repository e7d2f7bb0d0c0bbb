"""The Python package on a GPU (issue 31): kernels compiled for the cuda runtime, called on
PyTorch CUDA tensors (and CuPy arrays) by pointer, on the caller's stream and without waiting,
against the reference interpreter. tests/gpu/run.sh runs it on the GPU machine, with the
extension built there against the bundle's libkiln (docs/python.md, "CUDA")."""

import pathlib
import re
import sys
import zlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "python"))

from conftest import assert_matches, first_case, ops_cases, random_input  # noqa: E402

import kiln  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

CASES = ops_cases()
_specs = {}

# A composite whose plan keeps a temporary between kernels: the column sums of squares of a
# product cannot be computed in the kernel that writes the product's rows.
COLUMN_NORMED = """
[column_normed]
in    = { a = "f32[M, K]", b = "f32[K, N]" }
out   = { y = "f32[M, N]" }
body  = \"\"\"
s[m, n] = sum(a[m, k] * b[k, n], k)
y = s / sqrt(sum(s * s, axis=0, keepdim=true))
\"\"\"
"""


def spec_of(file):
    if file not in _specs:
        _specs[file] = kiln.load(ROOT / "ops" / file)
    return _specs[file]


@pytest.fixture(scope="module")
def nn():
    return kiln.load("std:nn.toml")


@pytest.fixture(scope="module")
def softmax(nn):
    return nn.compile("softmax", "cuda", batch_rank=1)


def sleep_on_current_stream():
    """Keeps the current stream busy for about half a second of the GPU's clock, so that what is
    queued after it is still pending when the host looks."""
    torch.cuda._sleep(1_000_000_000)


def warm(*ops):
    """Runs PyTorch operations once and waits: CUDA loads a kernel at its first launch (lazy
    loading), and that load waits for the whole device, which would finish a sleeping stream
    before the call under test."""
    torch.cuda._sleep(1)
    for op in ops:
        op()
    torch.cuda.synchronize()


@pytest.mark.parametrize("file,name,test,batched", CASES, ids=[f"{f}:{n}" for f, n, _, _ in CASES])
def test_composite_on_cuda_tensors(file, name, test, batched):
    """Every ops/ composite, compiled for cuda and called on CUDA tensors, against the
    interpreter on the same data in host memory."""
    sizes, batch = first_case(test, batched)
    spec = spec_of(file)
    kernel = spec.compile(name, "cuda", batch_rank=len(batch))
    ref = spec.compile(name, "interp", batch_rank=len(batch))
    assert kernel.device == "cuda"
    bound = dict(sizes, **{f"batch{i}": b for i, b in enumerate(batch)})
    rng = np.random.default_rng(zlib.crc32(f"{file}:{name}".encode()))
    ranges = test.get("range", {})
    host = [random_input(rng, kernel.dtype(x), kernel.shape(x, bound), ranges.get(x))
            for x in kernel.inputs]
    given = {k: v for k, v in bound.items() if k in kernel.size_vars}
    # (np.array keeps a 0-d input 0-d: np.ascontiguousarray makes it 1-d)
    got = kernel(*[torch.from_numpy(np.array(h, order="C")).cuda() for h in host], sizes=given)
    want = ref(*host, sizes=given)
    if len(kernel.outputs) == 1:
        got, want = (got,), (want,)
    torch.cuda.synchronize()
    for out, g, w in zip(kernel.outputs, got, want):
        assert isinstance(g, torch.Tensor) and g.is_cuda
        assert tuple(g.shape) == tuple(kernel.shape(out, bound))
        assert_matches(g.cpu().numpy(), w, kernel.dtype(out), test.get("rtol"), test.get("atol"),
                       f"{file}:{name} output {out} on cuda")


def test_runs_on_the_current_stream_without_waiting(softmax):
    x = torch.randn(64, 1000, device="cuda")
    warm(lambda: x.mul_(1))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        sleep_on_current_stream()
        x.mul_(2)  # queued on s behind the sleep: the kernel must read the doubled x
        y = softmax(x)
        assert not s.query(), "the call waited for the stream"
    s.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)


def test_stream_argument(softmax):
    x = torch.randn(8, 300, device="cuda")
    warm(lambda: x.add_(0))
    for make in (lambda s: s, lambda s: s.cuda_stream):  # a torch.cuda.Stream, or its handle
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            sleep_on_current_stream()
            x.add_(1)
        y = softmax(x, stream=make(s))  # not the current stream: queued on s, after the add
        assert not s.query()
        s.synchronize()
        torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    y = softmax(x, stream=0)  # CUDA's default stream
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="stream= must be a CUDA stream"):
        softmax(x, stream="fast")


def test_temporaries_are_not_shared_by_runs_in_flight():
    kernel = kiln.Spec.from_string(COLUMN_NORMED, "column_normed.toml").compile(
        "column_normed", "cuda")
    a1, b1 = torch.randn(96, 40, device="cuda"), torch.randn(40, 70, device="cuda")
    a2, b2 = torch.randn(96, 40, device="cuda"), torch.randn(40, 70, device="cuda")

    def want(a, b):
        s = a @ b
        return s / (s * s).sum(0, keepdim=True).sqrt()

    warm()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(s1):
        sleep_on_current_stream()
        y1 = kernel(a1, b1)  # pending on s1 behind the sleep, its temporaries in use
    with torch.cuda.stream(s2):
        y2 = kernel(a2, b2)  # another stream: must not overwrite s1's temporaries
    torch.cuda.synchronize()
    torch.testing.assert_close(y1, want(a1, b1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(y2, want(a2, b2), rtol=1e-4, atol=1e-5)


def test_out_is_written_in_place(softmax):
    x = torch.randn(5, 33, device="cuda")
    out = torch.empty_like(x)
    y = softmax(x, out=out)
    assert y is out and y.data_ptr() == out.data_ptr()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_tensors(nn, dtype):
    kernel = nn.compile("softmax", "cuda", dtype={"T": dtype}, batch_rank=1)
    t = getattr(torch, {"f16": "float16", "bf16": "bfloat16"}[dtype])
    x = torch.randn(16, 500, device="cuda", dtype=t)
    y = kernel(x)
    assert y.dtype == t and y.is_cuda
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), rtol=2e-2, atol=2e-3)


def test_devices_are_checked(nn, softmax):
    with pytest.raises(ValueError, match=r"softmax: input 'x' is on cpu; the cuda runtime takes "
                                         r"arrays in the memory of CUDA device 0"):
        softmax(torch.randn(2, 3))
    x = torch.randn(2, 3, device="cuda")
    with pytest.raises(ValueError, match="out= for output 'y' is on cpu"):
        softmax(x, out=torch.empty(2, 3))
    with pytest.raises(ValueError, match="is not contiguous"):
        softmax(torch.randn(3, 4, device="cuda").t())
    on_cpu = nn.compile("softmax", "cc", batch_rank=1)
    with pytest.raises(ValueError, match=r"input 'x' is on cuda:0; the cc runtime takes arrays "
                                         r"in CPU memory"):
        on_cpu(x)


def test_a_large_input_costs_no_device_memory():
    add = kiln.load("std:math.toml").compile("add", "cuda")
    n = 1 << 28  # 1 GiB of f32 each
    a = torch.ones(n, device="cuda")
    b = torch.full((n,), 2.0, device="cuda")
    out = torch.empty_like(a)
    add(a, b, out=out)  # compiled and warm
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    add(a, b, out=out)
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    assert free_before - free_after < 64 << 20, "the call took device memory: a copy?"
    assert out[:4].tolist() == [3.0] * 4 and out[-1].item() == 3.0


def test_torch_op_on_cuda_in_torch_compile(softmax):
    op = kiln.torch_op(softmax, "kiln_gpu_test::softmax")
    x = torch.randn(6, 128, device="cuda")
    torch.testing.assert_close(op(x), torch.softmax(x, -1), rtol=1e-5, atol=1e-6)

    @torch.compile(fullgraph=True)
    def f(x):
        return op(x * 2) + 1

    torch.testing.assert_close(f(x), torch.softmax(x * 2, -1) + 1, rtol=1e-5, atol=1e-6)


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    add = kiln.load("std:math.toml").compile("add", "cuda")
    a = cupy.arange(10, dtype=cupy.float32)
    y = add(a, a)
    assert isinstance(y, cupy.ndarray)
    cupy.cuda.Device(0).synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(10, dtype=np.float32) * 2)


def test_the_docs_cuda_example_runs():
    text = (ROOT / "docs" / "python.md").read_text()
    example = next(e for e in re.findall(r"```python\n(.*?)```", text, re.S) if '"cuda"' in e)
    scope = {}
    exec(compile(example, "docs/python.md", "exec"), scope)
    torch.testing.assert_close(scope["y"], torch.softmax(scope["x"], -1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,shapes,batch_rank", [
    ("softmax", [(3, 7)], 1),
    ("layernorm", [(3, 6), (6,), (6,)], 1),
    ("matmul", [(3, 4), (4, 5)], 0),
    ("attention", [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], 0),
])
def test_autograd_function_on_cuda(nn, name, shapes, batch_rank):
    """kiln.Function on CUDA tensors (docs/python.md, "Autograd"): gradcheck in f64, both
    kernels queued on the current stream, and the gradients against the cc kernels'."""
    f = nn.function(name, "cuda", dtype={"T": "f64"}, batch_rank=batch_rank)
    g = torch.Generator().manual_seed(3)
    cpu = [torch.rand(s, dtype=torch.float64, generator=g).requires_grad_() for s in shapes]
    cuda = [t.detach().cuda().requires_grad_() for t in cpu]
    assert torch.autograd.gradcheck(f, tuple(cuda), eps=1e-6, atol=1e-7, rtol=1e-5)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = f(*cuda)
        y.backward(torch.ones_like(y))
    s.synchronize()
    reference = nn.function(name, "cc", dtype={"T": "f64"}, batch_rank=batch_rank)
    y_cpu = reference(*cpu)
    y_cpu.backward(torch.ones_like(y_cpu))
    for a, b in zip(cuda, cpu):
        torch.testing.assert_close(a.grad.cpu(), b.grad, rtol=1e-10, atol=1e-12)
