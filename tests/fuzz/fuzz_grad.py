"""The differential fuzzer's gradient cases (diff_fuzz.py --grad; docs/testing.md, docs/autodiff.md).

The generator of fuzz_gen.py, configured for small sizes, makes a random composite; every float
dtype in it becomes f64, and its float inputs are the ones to differentiate with respect to. A
case is then checked two ways:

- `kiln grad FILE:fuzz --wrt ... --check --save POLICY`: the backward composite against central
  finite differences of the forward one, on the interpreter (the save policy rotates over the
  cases: recompute, stats, all);
- `kiln run FILE:fuzz --grad ... --runtime RT`: the backward composite compiled for each runtime
  against the interpreter's (with the default configuration and `--config TILE=0`).

A composite whose gradient is refused (a path from a float input through an integer cast, a
`scatter` with `mul`) is counted as refused, not as a failure: the refusal is the documented
answer. A failure is a crash, a hang, an internal error, a finite-difference mismatch (exit 3 of
`grad --check`), a compiled backward that differs from the interpreter's, or a backward composite
that runs on the interpreter but not compiled.
"""

import re

import fuzz_case
import fuzz_gen
import fuzz_lang
from fuzz_case import is_float
from fuzz_run import symptom

POLICIES = ["recompute", "stats", "all"]
# Finite differences in f64 with a step of 1e-6 (kiln grad's default): the tolerance allows for
# the truncation error of steep random compositions; the rounding of the forward values is
# allowed for by grad_check itself.
FD_ARGS = ["--rtol", "1e-4", "--atol", "1e-6"]
MAX_ELEMS = 300  # every value of a gradient case: the check runs the forward twice per element


def configure():
  """Small sizes and f64 for every case this process generates (the generator's pools are shared
  module state; gradient runs are a process of their own)."""
  fuzz_case.SIZES[:] = [0, 1, 1, 2, 2, 3, 3, 4, 5, 7]
  fuzz_case.FLOATS[:] = ["f64"] * len(fuzz_case.FLOATS)  # as often as the floats were
  fuzz_gen.MAX_ELEMS = fuzz_lang.MAX_ELEMS = MAX_ELEMS


def generate(rng, index):
  """A gradient case: a generated composite in f64, not specialised, with its save policy."""
  case = fuzz_gen.Gen(rng).generate()
  f64 = re.compile(r"\b(f32|f16|bf16)\b")
  case.inputs = [(n, f64.sub("f64", t)) for n, t in case.inputs]
  case.stmts = [f64.sub("f64", s) for s in case.stmts]
  case.outputs = [(o, v, f64.sub("f64", dt)) for o, v, dt in case.outputs]
  case.vtypes = {k: f64.sub("f64", dt) for k, dt in case.vtypes.items()}
  case.specialize = False
  case.policy = POLICIES[index % len(POLICIES)]
  floats = [o for o in case.outputs if is_float(o[2])]
  if floats:  # an integer output carries no gradient: keep the float ones
    case.outputs = floats
  return case


def wrt_of(case):
  """The float inputs of the case, comma-separated, or None (also with no float output)."""
  names = [n for n, t in case.inputs if is_float(t.replace("const ", "").split("[")[0])]
  if not any(is_float(dt) for _, _, dt in case.outputs):
    return None
  return ",".join(names) or None


def targets(runtimes, configs):
  """("fd", ["--save", policy]) for the finite-difference check (the case's policy picks it),
  then each compiled runtime and configuration."""
  return [("fd", [])] + [(rt, cfg) for rt in runtimes for cfg in configs]


def command(rt, cfg):
  """command(case) for fuzz_run.write_failure: the kiln subcommand and its arguments."""
  def of(case):
    if rt == "fd":
      return "grad", ["--wrt", wrt_of(case), "--check"] + cfg + FD_ARGS
    return "run", ["--grad", wrt_of(case), "--runtime", rt] + cfg
  return of


def check(runner, case, path, tgts):
  """Runs a gradient case; returns ('invalid'|'interp-fail'|'no-grad'|'refused'|'ok', failures as
  (runtime, config, symptom, output)), as fuzz_run.check does. `rt` "fd" is the
  finite-difference check, whose config is the save policy (`--save P`)."""
  with open(path, "w") as f:
    f.write(case.render(path))
  rc, out = runner.run(path, "interp", [], [])
  s = symptom(rc, out, True)
  if s:
    return "ok", [("interp", [], s, out)]
  if rc in (1, 2):
    return "invalid", []
  if rc == 4:
    return "interp-fail", []
  wrt = wrt_of(case)
  if not wrt:
    return "no-grad", []
  fails = []
  for rt, cfg in tgts:
    if rt == "fd":
      cfg = cfg or ["--save", getattr(case, "policy", "recompute")]
      verb, args = command(rt, cfg)(case)
    else:
      verb, args = command(rt, cfg)(case)
    rc, out = runner.kiln_command([verb, path + ":fuzz"] + args)
    if rc == 1 and "cannot differentiate" in out and "error:" in out:
      return "refused", []
    if rt == "fd" and rc == 4:
      return "interp-fail", []  # the forward fails at a moved input (a gather's position)
    s = symptom(rc, out, False)
    if s == "mismatch" and rt == "fd":
      s = "gradient mismatch"
    if s:
      fails.append((rt, cfg, s, out))
  return "ok", fails
