#!/usr/bin/env python3
"""Per-call overhead of the Python package (issue 31's target: `add` on 16 elements, warm,
<= 5 us on CPU and <= 10 us on CUDA with the launch), against PyTorch eager `torch.add` on the
same tensors when torch is installed.

    PYTHONPATH=build/python build/venv/bin/python tools/perf/python_overhead.py
    PYTHONPATH=build/python /path/to/venv-with-torch/bin/python tools/perf/python_overhead.py
    PYTHONPATH=... python3 tools/perf/python_overhead.py --runtime cuda    (tests/gpu/run.sh)

Prints the median over --repeat rounds of the mean time per call of --calls calls, for: the
kernel with outputs allocated (NumPy, then torch), with out= (no allocation), torch.add and
torch.add(out=), numpy.add. The runtime is clang (in-process) unless --runtime says otherwise,
f32, no batch dimensions. With --runtime cuda the arrays are torch CUDA tensors and both sides
launch on the current stream without waiting: a round's time ends with a synchronize, so it is
what a caller's loop of such calls costs, launches included.
"""

import argparse
import statistics
import sys
import time

import numpy as np

import kiln


def per_call(fn, calls, repeat, sync=lambda: None):
    for _ in range(calls):  # warm
        fn()
    sync()
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        sync()
        rounds.append((time.perf_counter_ns() - t0) / calls / 1000.0)
    return statistics.median(rounds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--runtime", default="clang")
    args = ap.parse_args()

    add = kiln.load("std:math.toml").compile("add", args.runtime)
    if add.device == "cuda":
        return cuda_rows(add, args)
    a = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    b = a + 1
    out = np.empty_like(a)
    rows = [("kiln add, numpy in, output allocated", lambda: add(a, b)),
            ("kiln add, numpy in, out=", lambda: add(a, b, out=out)),
            ("numpy.add(out=)", lambda: np.add(a, b, out=out))]
    try:
        import torch

        torch.set_num_threads(1)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        tout = torch.empty_like(ta)
        rows += [("kiln add, torch in, output allocated", lambda: add(ta, tb)),
                 ("kiln add, torch in, out=", lambda: add(ta, tb, out=tout)),
                 ("torch.add", lambda: torch.add(ta, tb)),
                 ("torch.add(out=)", lambda: torch.add(ta, tb, out=tout))]
    except ImportError:
        print("(torch not installed: no torch rows)", file=sys.stderr)
    results = {}
    for name, fn in rows:
        results[name] = per_call(fn, args.calls, args.repeat)
        print(f"{name:40s} {results[name]:7.2f} us/call")
    if "torch.add" in results:
        print(f"ratio kiln (torch in, allocated) / torch.add: "
              f"{results['kiln add, torch in, output allocated'] / results['torch.add']:.2f}")
        print(f"ratio kiln (torch in, out=) / torch.add(out=): "
              f"{results['kiln add, torch in, out='] / results['torch.add(out=)']:.2f}")


def cuda_rows(add, args):
    import torch

    ta = torch.randn(args.n, device="cuda")
    tb = ta + 1
    tout = torch.empty_like(ta)
    torch.testing.assert_close(add(ta, tb), ta + tb)
    rows = [("kiln add, cuda tensors, output allocated", lambda: add(ta, tb)),
            ("kiln add, cuda tensors, out=", lambda: add(ta, tb, out=tout)),
            ("torch.add", lambda: torch.add(ta, tb)),
            ("torch.add(out=)", lambda: torch.add(ta, tb, out=tout))]
    results = {}
    for name, fn in rows:
        results[name] = per_call(fn, args.calls, args.repeat, torch.cuda.synchronize)
        print(f"{name:42s} {results[name]:7.2f} us/call")
    print(f"ratio kiln (allocated) / torch.add: "
          f"{results['kiln add, cuda tensors, output allocated'] / results['torch.add']:.2f}")
    print(f"ratio kiln (out=) / torch.add(out=): "
          f"{results['kiln add, cuda tensors, out='] / results['torch.add(out=)']:.2f}")


if __name__ == "__main__":
    main()
