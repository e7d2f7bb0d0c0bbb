"""The Python API on PyTorch CPU tensors (skipped where torch is not installed): tensors in,
tensors out, zero copy, out=, strides, bf16 and f16, autograd refused."""

import numpy as np
import pytest

import kiln

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def nn():
    return kiln.load("std:nn.toml")


@pytest.fixture(scope="module")
def math():
    return kiln.load("std:math.toml")


@pytest.fixture(scope="module")
def softmax(nn):
    return nn.compile("softmax", "clang", batch_rank=1)


def test_tensor_in_tensor_out(softmax):
    x = torch.randn(4, 1000)
    y = softmax(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and y.shape == (4, 1000)
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)


def test_out_tensor_is_written_in_place(softmax):
    x = torch.randn(3, 17)
    out = torch.empty(3, 17)
    ptr = out.data_ptr()
    y = softmax(x, out=out)
    assert y is out and out.data_ptr() == ptr
    torch.testing.assert_close(out, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    big = torch.zeros(5, 17)
    softmax(x[:2], out=big[1:3])  # a view into big's storage
    torch.testing.assert_close(big[1:3], torch.softmax(x[:2], -1), rtol=1e-5, atol=1e-6)
    assert big[0].abs().sum() == 0 and big[3:].abs().sum() == 0


def test_strides(softmax):
    x = torch.randn(6, 8)
    with pytest.raises(ValueError, match=r"input 'x' is not contiguous \(shape \(8, 6\), "
                                         r"strides \(1, 8\).*contiguous\(\)"):
        softmax(x.t())
    torch.testing.assert_close(softmax(x.t().contiguous()), torch.softmax(x.t(), -1))
    with pytest.raises(ValueError, match="not contiguous"):
        softmax(x[:, ::2])
    # size-1 dimensions with any stride, and an offset view, are dense
    col = x[:, :1]
    assert not col.is_contiguous() or col.stride() != (1, 1)
    torch.testing.assert_close(softmax(x[:, 2:3].contiguous()), torch.ones(6, 1))
    torch.testing.assert_close(softmax(x[2:4]), torch.softmax(x[2:4], -1), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="out= for output 'y' is not contiguous"):
        softmax(x, out=torch.empty(8, 6).t())


def test_mixed_kinds_follow_the_first_input(math):
    add = math.compile("add", "clang")
    a = torch.arange(5, dtype=torch.float32)
    b = np.arange(5, dtype=np.float32)
    assert isinstance(add(a, b), torch.Tensor)
    assert isinstance(add(b, a), np.ndarray)
    out = np.empty(5, np.float32)
    assert add(a, b, out=out) is out
    np.testing.assert_array_equal(out, 2 * b)


@pytest.mark.parametrize("dtype,kiln_dtype", [(torch.bfloat16, "bf16"), (torch.float16, "f16")])
def test_half_precision(nn, dtype, kiln_dtype):
    sm = nn.compile("softmax", "clang", dtype={"T": dtype}, batch_rank=1)
    assert sm.dtype("x") == kiln_dtype
    x = torch.randn(3, 50).to(dtype)
    y = sm(x)
    assert y.dtype == dtype
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), rtol=4e-2, atol=1e-3)
    with pytest.raises(TypeError, match=f"input 'x' has dtype f32; expected {kiln_dtype}"):
        sm(x.float())


def test_matmul_and_sizes(nn):
    mm = nn.compile("matmul", "openmp")
    a, b = torch.randn(7, 33), torch.randn(33, 5)
    torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"input 'b' has shape \(32, 5\); expected f32\[K, N\] "
                                         r"with K = 33"):
        mm(a, torch.randn(32, 5))


def test_autograd_tensors_are_refused_while_autograd_is_on(softmax):
    x = torch.randn(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match=r"input 'x' requires grad while autograd is on: Kiln "
                                        r"kernels are not differentiable; pass x.detach\(\) or "
                                        r"call under torch.no_grad\(\)"):
        softmax(x)
    want = torch.softmax(x.detach(), -1)
    torch.testing.assert_close(softmax(x.detach()), want)
    with torch.no_grad():  # inference: nothing to differentiate
        y = softmax(x)
    assert not y.requires_grad
    torch.testing.assert_close(y, want)
    with pytest.raises(TypeError, match="out= for output 'y' requires grad"):
        softmax(x.detach(), out=torch.empty(2, 3, requires_grad=True))


def test_bool_and_integer_tensors(math):
    add = math.compile("add", "cc", dtype={"T": torch.int64})
    a = torch.arange(-3, 3)
    torch.testing.assert_close(add(a, a), 2 * a)
    with pytest.raises(TypeError, match="input 'a' has dtype i32; expected i64"):
        add(a.int(), a.int())


def test_sizes_from_out_alone():
    uniform = kiln.load("std:random.toml").compile("uniform", "clang", dtype={"T": torch.bfloat16})
    out = torch.empty(2, 3, dtype=torch.bfloat16)
    assert uniform(out=out) is out  # no inputs: M and N come from out's shape
    assert bool(((out >= 0) & (out < 1)).all())
    assert uniform.bind(out=out) == {"M": 2, "N": 3}


TORCH_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                "uint64", "uint32", "uint16", "uint8", "bool"]


@pytest.mark.parametrize("name", TORCH_DTYPES)
def test_every_torch_dtype_passes_through(math, name):
    dtype = getattr(torch, name)
    select = math.compile("where", "clang", dtype={"T": dtype})
    g = torch.Generator().manual_seed(7)
    cond = torch.rand(11, generator=g) < 0.5
    a = torch.randint(0, 100, (11,), generator=g).to(dtype)
    b = torch.randint(0, 100, (11,), generator=g).to(dtype)
    y = select(cond, a, b)
    assert y.dtype == dtype
    want = torch.where(cond, a.to(torch.float64), b.to(torch.float64))
    assert torch.equal(y.to(torch.float64), want)


def test_torch_op_runs_eagerly_and_in_torch_compile(nn, softmax):
    """A kernel registered as a PyTorch operator (kiln.torch_op) runs through torch.ops and
    inside a torch.compile graph, its fake implementation giving torch.compile the output
    shape; the results are the kernel's."""
    op = kiln.torch_op(softmax, "kiln_test::softmax")
    assert op is torch.ops.kiln_test.softmax
    x = torch.randn(3, 70)
    torch.testing.assert_close(op(x), softmax(x))

    def f(t):
        return op(t * 2.0) + 1.0

    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    y = torch.randn(5, 33)
    torch.testing.assert_close(compiled(y), softmax(y * 2.0) + 1.0)
    # a size the first trace did not see
    z = torch.randn(2, 9)
    torch.testing.assert_close(compiled(z), softmax(z * 2.0) + 1.0)


def test_torch_op_several_outputs_and_expression_shapes():
    """Several outputs come back as a tuple; an output whose shape is an expression of the sizes
    gets it from the fake implementation too."""
    spec = kiln.Spec.from_string("""
[split_pad]
in  = { x = "f32[N]" }
out = { y = "f32[N + 2]", z = "f32[N]" }
body = \"\"\"
y = pad(x, 0, 1, 1)
z = x * 2
\"\"\"
""", "split_pad.toml")
    k = spec.compile("split_pad", "clang")
    op = kiln.torch_op(k, "kiln_test::split_pad")
    x = torch.arange(4, dtype=torch.float32)
    y, z = op(x)
    assert y.shape == (6,) and z.shape == (4,)
    torch.testing.assert_close(z, x * 2)
    compiled = torch.compile(lambda t: op(t)[0] * 1.0, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), y)


def test_torch_op_refuses_a_bad_name(softmax):
    with pytest.raises(ValueError, match="namespace::name"):
        kiln.torch_op(softmax, "no_namespace")
