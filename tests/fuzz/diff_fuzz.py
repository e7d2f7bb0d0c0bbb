#!/usr/bin/env python3
"""Differential fuzzer: random composites, every CPU runtime against the interpreter.

Each case is one random composite written as a TOML spec file: size variables bound to odd,
prime, 1 and 0 sizes; elementwise math over mixed dtypes (signed, unsigned, float, bool) with
casts; views (reshape, permute, expand, squeeze, unsqueeze, slice, pad, flip); reductions over any
axes with and without keepdim; index notation (contractions, strided and dilated windows, bounded
reductions over triangles and bands); scans and cum* calls; gathers (tensor subscripts,
take_along, ops/index.toml); `where` shape facts; and calls to ops/ composites (conv2d with
random stride, pad, dilation and groups including depthwise, pooling, matmul, softmax, ...).

Every case runs `kiln run FILE:fuzz` under the interpreter (the oracle) and then under each
compiled runtime and configuration; `kiln run` compares with the interpreter itself. A failure is
a crash or signal, exit 3 (mismatch), exit 4 where the interpreter succeeded, a spec or usage
error the interpreter did not raise, a hang (timeout) or an internal error message. Failures
are minimised greedily (drop statements, outputs and inputs, shrink sizes toward 1 and 0, drop
keyword attributes) and written to the failures directory with a header naming the seed, the
command and the symptom.

    python3 tests/fuzz/diff_fuzz.py --seed 1 --time 180 --kiln build/kiln
    python3 tests/fuzz/diff_fuzz.py --seed 7 --time 3600 --kiln build/kiln     # a long run

With --grad, the cases are gradient cases (fuzz_grad.py): the same generator at small sizes in
f64; the backward composite with respect to every float input is checked against central finite
differences on the interpreter (`kiln grad --check`, the save policy rotating over recompute,
stats and all) and compiled on each runtime (default clang) against the interpreter's (`kiln run
--grad`). A refused gradient is counted, not a failure.

    python3 tests/fuzz/diff_fuzz.py --grad --seed 1 --cases 60 --kiln build/kiln

The run is deterministic from --seed: case k uses the generator seeded with (seed, k). Exit code
0 when no failure was found, 1 otherwise (2 for a bad command line).

This file is the command line; fuzz_case.py holds a case and its rendering as a spec, fuzz_gen.py
the random generator (fuzz_lang.py its scans, bounded reductions, gathers and facts), fuzz_run.py
running, classifying, minimising and replaying.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ next to the sources

from fuzz_case import ROOT  # noqa: E402
from fuzz_gen import Gen  # noqa: E402
import fuzz_grad  # noqa: E402
from fuzz_run import CONFIGS, Runner, check, minimise, replay, write_failure  # noqa: E402


def generator(a):
  """case k of the run: a composite, or a gradient case with --grad."""
  if a.grad:
    fuzz_grad.configure()
    return lambda k: fuzz_grad.generate(random.Random("%d/%d" % (a.seed, k)), k)
  return lambda k: Gen(random.Random("%d/%d" % (a.seed, k))).generate()


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--seed", type=int, default=1)
  ap.add_argument("--time", type=float, default=180, help="seconds to fuzz (minimising included)")
  ap.add_argument("--cases", type=int, default=0, help="stop after this many cases (0: no limit)")
  ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
  ap.add_argument("--runtimes", help="compiled runtimes, comma-separated (default clang,openmp,cc; "
                  "with --grad clang)")
  ap.add_argument("--grad", action="store_true",
                  help="gradient cases: backward composites against finite differences and "
                  "compiled against the interpreter (fuzz_grad.py)")
  ap.add_argument("--timeout", type=float, default=60, help="seconds before a run is a hang")
  ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fuzz", "failures"),
                  help="where minimised failures go")
  ap.add_argument("--minimise-time", type=float, default=120, help="seconds per failure")
  ap.add_argument("--print", action="store_true", help="print each generated spec and exit")
  ap.add_argument("--replay", metavar="DIR",
                  help="run every spec in DIR with the command of its '# Reproduce:' line; "
                  "each must pass (exit 0)")
  ap.add_argument("--specialize", choices=["random", "always", "never"], default="random",
                  help="whether cases run with --specialize: as generated (15%%), always or never")
  ap.add_argument("--verbose", "-v", action="store_true")
  a = ap.parse_args()
  make = generator(a)
  if a.print:
    for k in range(a.cases or 1):
      print("# case %d\n%s" % (k, make(k).render(os.path.join(ROOT, "tests", "fuzz", "x.toml"))))
    return 0
  kiln = os.path.abspath(a.kiln)
  if not os.access(kiln, os.X_OK):
    print("diff_fuzz: no kiln binary at %s (pass --kiln)" % kiln, file=sys.stderr)
    return 2
  if a.replay:
    return replay(kiln, a.replay, a.timeout)
  runtimes = [r for r in (a.runtimes or ("clang" if a.grad else "clang,openmp,cc")).split(",")
              if r]
  targets = [(rt, cfg) for rt in runtimes for cfg in CONFIGS]
  checker, mode = check, ""
  if a.grad:
    targets, checker, mode = fuzz_grad.targets(runtimes, CONFIGS), fuzz_grad.check, "--grad"
  work = tempfile.mkdtemp(prefix="kiln-fuzz-")
  runner = Runner(kiln, a.timeout, runtimes, os.path.join(work, "cache"))
  start = time.time()
  stats = {"ok": 0, "invalid": 0, "interp-fail": 0, "no-grad": 0, "refused": 0}
  found, seen = [], set()
  k = 0
  try:
    while time.time() - start < a.time and (not a.cases or k < a.cases):
      case = make(k)
      if a.specialize != "random" and not a.grad:
        case.specialize = a.specialize == "always"
      path = os.path.join(work, "case.toml")
      t0 = time.time()
      verdict, fails = checker(runner, case, path, targets)
      stats[verdict] += 1
      if a.verbose:
        print("case %d (%.1f s): %s%s" % (k, time.time() - t0, verdict, "".join("; %s %s: %s" % (f[0], " ".join(f[1]), f[2])
                                                       for f in fails)), flush=True)
      for rt, cfg, sym, out in fails:
        key = (rt, sym, tuple(case.stmts), tuple(cfg))
        if key in seen:
          continue
        seen.add(key)
        print("case %d: %s %s: %s; minimising" % (k, rt, " ".join(cfg), sym), flush=True)
        small = minimise(runner, case, os.path.join(work, "min.toml"), rt, cfg, sym,
                         min(time.time() + a.minimise_time, start + a.time + 30), checker)
        _, sfails = checker(runner, small, os.path.join(work, "min.toml"),
                            [] if rt == "interp" else [(rt, cfg)])
        sout = next((f[3] for f in sfails if f[0] == rt and f[2] == sym), out)
        p = write_failure(a.out, small, a.seed, k, rt, cfg, sym, sout,
                          fuzz_grad.command(rt, cfg) if a.grad and rt != "interp" else None, mode)
        found.append(p)
        print("  -> %s (%d statements)" % (os.path.relpath(p, ROOT), len(small.stmts)), flush=True)
        break  # one failure per case is enough; the others are usually the same bug
      k += 1
  finally:
    shutil.rmtree(work, ignore_errors=True)
  total = sum(stats.values())
  valid = total - stats["invalid"]
  ran = stats["ok"] + stats["no-grad"] + stats["refused"]
  grads = (", %d gradients checked, %d refused, %d with no float input" %
           (stats["ok"], stats["refused"], stats["no-grad"])) if a.grad else ""
  print("diff_fuzz: %sseed %d, %d cases in %.0f s: %d accepted by the front end (%.1f%%), %d ran "
        "on the interpreter, %d rejected%s; %d failure(s)" %
        ("--grad " if a.grad else "", a.seed, total, time.time() - start, valid,
         100.0 * valid / max(total, 1), ran, stats["invalid"], grads, len(found)))
  for p in found:
    print("  " + os.path.relpath(p, ROOT))
  return 1 if found else 0


if __name__ == "__main__":
  sys.exit(main())
