"""kiln.Function (docs/python.md, "Autograd"): a composite and its backward composite as a
torch.autograd.Function, checked by torch.autograd.gradcheck in f64 on composites of ops/ and
tests/data/autodiff.toml; inputs outside wrt, integer outputs and the errors. Skipped where
PyTorch is not installed."""

import pytest

import kiln
from conftest import ROOT

torch = pytest.importorskip("torch")

F64 = {"T": "f64"}

# (spec, composite, input shapes, compile settings): small sizes, so that gradcheck's finite
# differences (two forward runs per input element) stay fast
GRADCHECK_CASES = [
    ("std:nn.toml", "softmax", [(3, 7)], dict(batch_rank=1)),
    ("std:nn.toml", "log_softmax", [(2, 5)], dict(batch_rank=1)),
    ("std:nn.toml", "layernorm", [(3, 6), (6,), (6,)], dict(batch_rank=1)),  # const gamma, beta
    ("std:nn.toml", "rmsnorm", [(2, 5), (5,)], dict(batch_rank=1)),
    ("std:nn.toml", "matmul", [(3, 4), (4, 5)], {}),
    ("std:nn.toml", "dense_gelu", [(2, 3), (3, 4), (4,)], {}),  # const w, bias: packed
    ("std:nn.toml", "attention", [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], {}),
    ("std:nn.toml", "causal_attention", [(1, 2, 4, 3)] * 3, {}),
    ("std:nn.toml", "conv2d", [(1, 2, 5, 4), (3, 2, 2, 2)], {}),
    ("std:math.toml", "gelu", [(2, 5)], dict(batch_rank=1)),
    ("std:reduce.toml", "logsumexp", [(3, 6)], dict(batch_rank=1)),
    ("std:reduce.toml", "mean", [(3, 6)], dict(batch_rank=1)),
    ("std:reduce.toml", "cumprod", [(2, 5)], dict(batch_rank=1)),
    (ROOT / "tests/data/autodiff.toml", "view_chain", [(2, 3, 4)], {}),  # three outputs
]


def spec(path):
    return kiln.load(path)


def inputs_of(shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(s, dtype=torch.float64, generator=g).mul_(2).sub_(1).requires_grad_()
            for s in shapes]


@pytest.mark.parametrize("path,name,shapes,settings", GRADCHECK_CASES,
                         ids=[c[1] for c in GRADCHECK_CASES])
def test_gradcheck(path, name, shapes, settings):
    dtype = {} if str(path).endswith("autodiff.toml") else F64
    f = spec(path).function(name, "clang", dtype=dtype, **settings)
    assert f.wrt == tuple(f.inputs)
    assert torch.autograd.gradcheck(f, tuple(inputs_of(shapes)), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_gradcheck_openmp():
    f = spec("std:nn.toml").function("layernorm", "openmp", dtype=F64, batch_rank=1,
                                     config={"THREADS": 2})
    assert torch.autograd.gradcheck(f, tuple(inputs_of([(4, 9), (9,), (9,)])))


def test_matches_torch_and_keeps_the_graph():
    """Kiln kernels inside a torch expression: the gradient flows through both."""
    f = spec("std:nn.toml").function("layernorm", dtype=F64, batch_rank=1)
    x, gamma, beta = inputs_of([(5, 8), (8,), (8,)], seed=1)
    loss = (f(x * 2.0, gamma, beta).sin() * torch.arange(8.0, dtype=torch.float64)).sum()
    loss.backward()
    got = [t.grad.clone() for t in (x, gamma, beta)]
    for t in (x, gamma, beta):
        t.grad = None
    want_y = torch.nn.functional.layer_norm(x * 2.0, (8,), gamma, beta, eps=1e-5)
    (want_y.sin() * torch.arange(8.0, dtype=torch.float64)).sum().backward()
    for g, t in zip(got, (x, gamma, beta)):
        torch.testing.assert_close(g, t.grad, rtol=1e-10, atol=1e-12)


def test_inputs_outside_wrt_get_none():
    f = spec("std:nn.toml").function("layernorm", dtype=F64, batch_rank=1, wrt=["x"])
    assert f.wrt == ("x",) and f.backward_kernel.outputs == ["dx"]
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    gamma, beta = torch.rand(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64)
    f(x, gamma, beta).sum().backward()
    assert x.grad is not None and gamma.grad is None and beta.grad is None
    with pytest.raises(ValueError, match=r"input 'gamma' requires grad.*only x.*add it to wrt="):
        f(x, gamma.requires_grad_(), beta)
    with torch.no_grad():  # no autograd: nothing to differentiate, no error
        f(x, gamma, beta)


def test_only_the_gradients_asked_for():
    """wrt covers every input, autograd asks for one: the others stay None."""
    f = spec("std:nn.toml").function("matmul", dtype=F64)
    a = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 4, dtype=torch.float64)
    f(a, b).sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(2, 4, dtype=torch.float64) @ b.T)
    assert b.grad is None


def test_integer_outputs_carry_no_gradient():
    f = spec("std:index.toml").function("topk", dtype=F64, batch_rank=1, attrs={"k": 2})
    x = torch.tensor([[0.5, 3.0, -1.0, 2.0], [1.0, 0.0, 4.0, -2.0]], dtype=torch.float64,
                     requires_grad=True)
    values, indices = f(x)
    assert not indices.requires_grad and indices.dtype != torch.float64
    (values * torch.tensor([10.0, 1.0], dtype=torch.float64)).sum().backward()
    want = torch.tensor([[0, 10, 0, 1], [1, 0, 10, 0]], dtype=torch.float64)
    torch.testing.assert_close(x.grad, want)


def test_errors():
    nn = spec("std:nn.toml")
    with pytest.raises(ValueError, match=r"'softmax' has no input 'z'; its inputs are x"):
        nn.function("softmax", wrt=["z"], batch_rank=1)
    with pytest.raises(ValueError, match=r"input 'ids' of 'embedding' is i32; gradients are "
                                         r"taken with respect to float inputs only"):
        spec("std:index.toml").function("embedding", wrt=["ids"], dtype={"I": "i32"},
                                        batch_rank=1)
    with pytest.raises(kiln.SpecError, match=r"cannot differentiate 'y' of 'floor' with "
                                             r"respect to 'x'"):
        spec("std:math.toml").function("floor", batch_rank=1)
    with pytest.raises(TypeError, match=r"wrt= takes input names \(strings\), got 3"):
        nn.function("softmax", wrt=[3], batch_rank=1)
    with pytest.raises(TypeError, match=r"takes wrt="):
        nn.function("softmax", grad=["x"], batch_rank=1)
    f = nn.function("softmax", batch_rank=1)
    with pytest.raises(TypeError, match=r"takes PyTorch tensors; input 'x' is a list"):
        f([[1.0, 2.0]])
    with pytest.raises(TypeError, match=r"softmax takes 1 inputs \(x\), got 2"):
        f(torch.ones(1, 2), torch.ones(1, 2))


def test_compile_grad_is_the_backward_kernel():
    """Spec.compile(grad=...) alone: `kiln run --grad`'s backward composite as a kernel."""
    k = spec("std:nn.toml").compile("softmax", grad=["x"], dtype=F64, batch_rank=1)
    assert k.composite == "softmax_grad" and k.inputs == ["x", "dy"] and k.outputs == ["dx"]
    x, dy = torch.randn(2, 6, dtype=torch.float64), torch.randn(2, 6, dtype=torch.float64)
    y = torch.softmax(x, -1)
    torch.testing.assert_close(k(x, dy), y * (dy - (dy * y).sum(-1, keepdim=True)))


# (composite, input shapes, compile settings) for the save policies (docs/autodiff.md, "Saved
# values"): attention's L x S weights are recomputed under "stats" and kept under "all"
POLICY_CASES = [
    ("softmax", [(3, 7)], dict(batch_rank=1)),
    ("layernorm", [(3, 6), (6,), (6,)], dict(batch_rank=1)),
    ("attention", [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], dict(attrs={"causal": True})),
    ("causal_attention", [(1, 2, 4, 3)] * 3, {}),
]


@pytest.mark.parametrize("save", ["recompute", "stats", "all"])
@pytest.mark.parametrize("name,shapes,settings", POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_save_policies(name, shapes, settings, save):
    f = spec("std:nn.toml").function(name, dtype=F64, save=save, **settings)
    k = f.backward_kernel
    assert f.forward_kernel.outputs == ["y", *f.saved]
    assert k.inputs == [*f.inputs, *f.saved, "dy"]
    sizes = [set(k.symbolic_shape(s)) for s in f.saved]
    if save == "recompute":
        assert f.saved == ()
    elif name.endswith("attention"):
        # the keys' length: S, or L a second time in causal_attention's [B, H, L, L]
        wide = [s for s in f.saved if k.symbolic_shape(s).count("L") == 2 or
                {"L", "S"} <= set(k.symbolic_shape(s))]
        assert (wide == []) == (save == "stats"), (save, f.saved, sizes)
    assert torch.autograd.gradcheck(f, tuple(inputs_of(shapes)), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_save_policy_errors():
    nn = spec("std:nn.toml")
    with pytest.raises(ValueError, match=r"unknown save policy 'some'.*recompute, stats and all"):
        nn.function("softmax", batch_rank=1, save="some")
    with pytest.raises(ValueError, match=r"grad_save and grad_forward go with grad_wrt"):
        nn.compile("softmax", batch_rank=1, grad_save="stats")
