"""End to end (docs/autodiff.md, "Training from PyTorch"): a two-layer MLP trained for 200 SGD
steps on a synthetic regression task with every forward and backward kernel from Kiln (through
kiln.Function), against the same model in plain PyTorch from the same initial weights on the
same data: the two loss curves agree within the stated tolerance at every step. Skipped where
PyTorch is not installed."""

import pytest

import kiln

torch = pytest.importorskip("torch")

# The output layer and the loss in one composite: the loss is a Kiln kernel too.
HEAD = """
[linear_mse]
doc   = "The output layer and the mean squared error: mean((h @ w + b - target)^2)."
in    = { h = "T[M, K]", w = "T[K, N]", b = "T[N]", target = "T[M, N]" }
out   = { loss = "T" }
types = { T = ["f32", "f64"] }
body  = '''
y[m, n] = sum(h[m, k] * w[k, n], k) + b[n]
d = y - target
one = full(1.0, [], T)
count = sum(where(d == d, one, one), axis=[0, 1])
loss = sum(d * d, axis=[0, 1]) / count
'''
test  = { sizes = { M = 5, K = 3, N = 2 } }
"""

STEPS, LR = 200, 0.05
SAMPLES, IN, HIDDEN, OUT = 64, 4, 32, 2
# The largest relative difference between the two loss curves at any step: the kernels sum in
# another order than PyTorch's, so the curves differ by rounding, which 200 steps carry along
# (measured: 5e-16 in f64, 2.4e-7 in f32; docs/autodiff.md).
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5}


def data_and_weights(dtype):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(SAMPLES, IN, generator=g, dtype=dtype)
    target = torch.stack([torch.sin(x[:, 0] + x[:, 1]), x[:, 2] * x[:, 3]], dim=1)
    weights = [torch.randn(IN, HIDDEN, generator=g, dtype=dtype) / IN ** 0.5,
               torch.zeros(HIDDEN, dtype=dtype),
               torch.randn(HIDDEN, OUT, generator=g, dtype=dtype) / HIDDEN ** 0.5,
               torch.zeros(OUT, dtype=dtype)]
    return x, target, weights


def train(loss_of, weights):
    params = [w.clone().requires_grad_() for w in weights]
    opt = torch.optim.SGD(params, lr=LR)
    curve = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(*params)
        loss.backward()
        opt.step()
        curve.append(loss.item())
    return torch.tensor(curve, dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_mlp_loss_curve_matches_pytorch(dtype):
    x, target, weights = data_and_weights(dtype)
    t = {"T": dtype}
    hidden = kiln.load("std:nn.toml").function("dense_gelu", dtype=t, wrt=["w", "bias"])
    head = kiln.Spec.from_string(HEAD, "mlp.toml").function("linear_mse", dtype=t,
                                                            wrt=["h", "w", "b"])

    def kiln_loss(w1, b1, w2, b2):
        return head(hidden(x, w1, b1), w2, b2, target)

    def torch_loss(w1, b1, w2, b2):
        h = torch.nn.functional.gelu(x @ w1 + b1, approximate="tanh")
        return torch.nn.functional.mse_loss(h @ w2 + b2, target)

    kiln_curve, torch_curve = train(kiln_loss, weights), train(torch_loss, weights)
    assert kiln_curve[-1] < 0.5 * kiln_curve[0]  # it learns
    difference = ((kiln_curve - torch_curve).abs() / torch_curve.abs()).max().item()
    assert difference < TOLERANCE[dtype], (difference, kiln_curve[::40], torch_curve[::40])
