#!/usr/bin/env python3
"""Backward kernels against PyTorch's backward (docs/performance.md, "Backward passes"):
softmax, layernorm and rmsnorm over ROWS x N f32 and matmul M x K x N f32, each backward
composite compiled for RUNTIME (openmp on THREADS, or cuda) under the save policies recompute and
stats, timed against `torch.autograd.grad` through the same forward (which keeps what PyTorch
saves) on torch.set_num_threads(THREADS) or the GPU; on cuda also attention f16 B x H x L x D
against the backward of scaled_dot_product_attention. Inputs and outputs are preallocated (out=);
each figure is the median (and the minimum) of ROUNDS runs after two warm-up runs, a GPU run
timed to its completion (torch.cuda.synchronize); the ratio is of the medians.

    PYTHONPATH=build/python /work/venv-torch/bin/python tools/perf/grad_bench.py [--threads 2]
    python3 tools/perf/grad_bench.py --runtime cuda --mkn 4096,4096,4096     # on a GPU machine

With --torch-only it times PyTorch's side alone and needs no Kiln Python package (a build
without nanobind): the Kiln side then comes from `kiln bench` of the backward composites.
"""

import argparse
import statistics
import time

import torch

F = torch.nn.functional


def times_ms(fn, rounds, sync=lambda: None):
    """(median, min) of `rounds` runs after two warm-up runs, each to its completion (`sync`)."""
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def cases(rows, n, mkn, attention):
    """(name, composite, settings, inputs, wrt, torch forward)."""
    g = torch.Generator().manual_seed(3)

    def rand(*shape, dtype=torch.float32):
        return (torch.rand(*shape, generator=g) * 2 - 1).to(dtype)

    m, k, nn = mkn
    x = rand(rows, n)
    gamma, beta = rand(n) + 1.5, rand(n)
    more = []
    if attention:
        b, h, length, d = attention
        q, kk, v = (rand(b, h, length, d, dtype=torch.float16) for _ in range(3))
        more.append(("attention", "attention", dict(dtype={"T": "f16"}), [q, kk, v],
                     ["q", "k", "v"], F.scaled_dot_product_attention))
    return more + [
        ("softmax", "softmax", dict(batch_rank=1), [x], ["x"], lambda x: torch.softmax(x, -1)),
        ("layernorm", "layernorm", dict(batch_rank=1), [x, gamma, beta], ["x", "gamma", "beta"],
         lambda x, g, b: F.layer_norm(x, (n,), g, b, 1e-5)),
        ("rmsnorm", "rmsnorm", dict(batch_rank=1), [x, gamma], ["x", "gamma"],
         lambda x, g: F.rms_norm(x, (n,), g, 1e-6)),
        ("matmul", "matmul", {}, [rand(m, k), rand(k, nn)], ["a", "b"], lambda a, b: a @ b),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--mkn", default="1024,1024,1024")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--policies", default="recompute,stats")
    ap.add_argument("--runtime", default="openmp", help="openmp, clang, cuda, ...")
    ap.add_argument("--cases", default="", help="comma-separated names to run (default: all)")
    ap.add_argument("--attention", default="8,16,2048,64",
                    help="B,H,L,D of the f16 attention case (cuda only); empty: none")
    ap.add_argument("--torch-only", action="store_true", help="time PyTorch's backward alone")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.torch_only:
        return torch_only(a)
    import kiln

    nn = kiln.load("std:nn.toml")
    gpu = a.runtime == "cuda"
    device = "cuda" if gpu else "cpu"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    config = {} if gpu else {"THREADS": a.threads}
    mkn = [int(v) for v in a.mkn.split(",")]
    attention = [int(v) for v in a.attention.split(",")] if gpu and a.attention else None
    where = torch.cuda.get_device_name() if gpu else f"threads {a.threads}"
    print(f"{a.runtime} on {where}, torch {torch.__version__}; median (min) of {a.rounds} runs, ms")
    print(f"{'backward':<10} {'policy':<10} {'kiln ms':>17} {'torch ms':>17} {'torch/kiln':>10}"
          f"  max |kiln - torch|")
    wanted_cases = set(filter(None, a.cases.split(",")))
    for name, comp, settings, inputs, wrt, forward in cases(a.rows, a.n, mkn, attention):
        if wanted_cases and name not in wanted_cases:
            continue
        inputs = [t.to(device) for t in inputs]
        leaves = [t.clone().requires_grad_(w in wrt) for t, w in
                  zip(inputs, nn.compile(comp, "interp", **settings).inputs)]
        y = forward(*leaves)
        dy = (torch.rand(y.shape, generator=torch.Generator().manual_seed(5)) * 2 - 1).to(
            device=device, dtype=y.dtype)
        wanted = [t for t in leaves if t.requires_grad]
        torch_ms, torch_min = times_ms(
            lambda: torch.autograd.grad(y, wanted, dy, retain_graph=True), a.rounds, sync)
        want = torch.autograd.grad(y, wanted, dy, retain_graph=True)
        for policy in a.policies.split(","):
            back = nn.compile(comp, a.runtime, grad=wrt, grad_save=policy, config=config,
                              **settings)
            fwd = nn.compile(comp, a.runtime, grad=wrt, grad_save=policy, grad_forward=True,
                             config=config, **settings)
            outs = fwd(*inputs)
            saved = list(outs[1:]) if isinstance(outs, tuple) else []
            args = [*inputs, *saved, dy]
            results = back(*args)
            results = results if isinstance(results, tuple) else (results,)
            out = tuple(torch.empty_like(r) for r in results)
            kiln_ms, kiln_min = times_ms(lambda: back(*args, out=out if len(out) > 1 else out[0]),
                                         a.rounds, sync)
            err = max((r.float() - w.float()).abs().max().item() for r, w in zip(out, want))
            print(f"{name:<10} {policy:<10} {kiln_ms:8.2f} ({kiln_min:6.2f}) "
                  f"{torch_ms:8.2f} ({torch_min:6.2f}) {torch_ms / kiln_ms:10.2f}  {err:.2e}",
                  flush=True)


def torch_only(a):
    """PyTorch's backward of each case, every input a leaf (the gradients the composites take)."""
    print(f"threads {a.threads}, torch {torch.__version__}, f32; median (min) of {a.rounds} runs, ms")
    for name, _, _, inputs, _, forward in cases(a.rows, a.n, [int(v) for v in a.mkn.split(",")],
                                                None):
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        y = forward(*leaves)
        dy = torch.rand(y.shape, generator=torch.Generator().manual_seed(5)) * 2 - 1
        ms, least = times_ms(lambda: torch.autograd.grad(y, leaves, dy, retain_graph=True), a.rounds)
        print(f"{name:<10} torch {ms:8.2f} ({least:6.2f})", flush=True)


if __name__ == "__main__":
    main()
