#!/usr/bin/env python3
"""Compile time against composite size (docs/performance.md): k stacked layer normalisations over
f32[8, 256], compiled cold (a fresh KILN_CACHE per run) with `kiln run ... --runtime clang
--debug 1`; prints the median stage times, the kernel count and the cold total per k.

Usage: tools/perf/stacked_layernorm.py [--kiln build/kiln] [--runs 3] [--ks 1,2,4,8,16,32,64]
       tools/perf/stacked_layernorm.py --emit K [K ...] [--use PATH]   (print the TOML only)
"""
import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import os


def composite(k):
    """TOML of `stacked_layernorm_K`: K layer normalisations without scale and shift."""
    lines = []
    for b in range(k):
        src = "x" if b == 0 else f"h{b - 1}"
        dst = "y" if b == k - 1 else f"h{b}"
        lines += [
            f"m{b} = sum({src}, axis=-1, keepdim=true) / N",
            f"c{b} = {src} - m{b}",
            f"v{b} = sum(c{b} * c{b}, axis=-1, keepdim=true) / N",
            f"{dst} = c{b} * rsqrt(v{b} + eps)",
        ]
    body = "\n".join(lines)
    return (f'[stacked_layernorm_{k}]\n'
            f'doc   = "{k} stacked layer normalisations over the last axis."\n'
            'in    = { x = "T[..., N]" }\n'
            'out   = { y = "T[..., N]" }\n'
            'types = { T = ["f32"] }\n'
            'attrs = { eps = 1e-5 }\n'
            f'body  = """\n{body}\n"""\n'
            'test  = { sizes = { N = [256] }, batch = [[8]], rtol = 1e-3, atol = 1e-3 }\n')


def meta(math_toml):
    """The [meta] table that brings rsqrt in from ops/math.toml."""
    return f'[meta]\nuse = ["{math_toml}"]\n\n'


def measure(kiln, path, k, runs):
    rows = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            out = subprocess.run(
                [kiln, "run", f"{path}:stacked_layernorm_{k}", "--runtime", "clang", "--test",
                 "N=256", "--batch", "8", "--debug", "1"],
                env=dict(os.environ, KILN_CACHE=cache), capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"k={k}: kiln exited {out.returncode}\n{out.stdout}{out.stderr}")
        text = out.stdout + out.stderr
        stages = dict((n, float(v)) for n, v in re.findall(r"(\w+) ([0-9.]+) ms", text))
        stages["kernels#"] = len(re.findall(r"^\s*kernel \S+: \d+ statements", text, re.M))
        stages["total"] = float(re.search(r"total ([0-9.]+) ms", text).group(1))
        stages["compile"] = float(re.search(r"compile ([0-9.]+) ms", text).group(1))
        rows.append(stages)
    return {key: statistics.median(r.get(key, 0) for r in rows) for key in rows[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/kiln")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ks", default="1,2,4,8,16,32,64")
    ap.add_argument("--emit", type=int, nargs="*")
    ap.add_argument("--use", default="../../ops/math.toml", help="with --emit: the [meta] use path")
    a = ap.parse_args()
    if a.emit:
        print(meta(a.use) + "\n".join(composite(k) for k in a.emit))
        return
    ks = [int(k) for k in a.ks.split(",")]
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        math_toml = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../ops/math.toml"))
        f.write(meta(math_toml) + "\n".join(composite(k) for k in ks))
        path = f.name
    cols = ["kernels#", "simplified", "kernels", "cut", "coalesce", "flatten", "buffers", "schedule",
            "render", "compile", "total"]
    print("| k | " + " | ".join(cols) + " |")
    print("|" + " --- |" * (len(cols) + 1))
    for k in ks:
        m = measure(a.kiln, path, k, a.runs)
        print(f"| {k} | " + " | ".join(f"{m.get(c, 0):g}" for c in cols) + " |", flush=True)
    os.unlink(path)


if __name__ == "__main__":
    main()
