"""The differential fuzzer's runner: runs a Case on the interpreter and the compiled runtimes,
classifies failures, minimises them and writes them (and replays the fixed ones).
"""

import os
import re
import subprocess
import tempfile
import time

from fuzz_case import ROOT, clone, used_names

CONFIGS = [[], ["--config", "TILE=0"]]

# Internal errors: messages from the C++ library or assertions rather than a sentence of kiln's.
INTERNAL = re.compile(
    r"internal|assert|std::|basic_string|vector::|map::at|out_of_range|bad_alloc|"
    r"bad_variant|bad_optional|unreachable|terminate called|AddressSanitizer|runtime error:",
    re.IGNORECASE)


class Runner:

  def __init__(self, kiln, timeout, runtimes, cache):
    self.kiln, self.timeout, self.runtimes = kiln, timeout, runtimes
    self.env = dict(os.environ, KILN_CACHE=cache)

  def run(self, path, runtime, config, extra):
    """(rc, output) of `kiln run path:fuzz`; rc None on a timeout."""
    return self.kiln_command(["run", path + ":fuzz", "--runtime", runtime] + config + extra)

  def kiln_command(self, args):
    """(rc, output) of `kiln ARGS`; rc None on a timeout."""
    cmd = [self.kiln] + args
    try:
      p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
                         timeout=self.timeout, cwd=ROOT)
      return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
      return None, (e.stdout or b"").decode("utf-8", "replace")


def symptom(rc, out, oracle):
  """A short failure class for a run's result, or None when it passed (or failed acceptably)."""
  if rc is None:
    return "hang"
  if rc < 0 or rc >= 128:
    return "crash (exit %d)" % rc
  if INTERNAL.search(out):
    return "internal error"
  if oracle:
    return None if rc in (0, 1, 4) else "exit %d" % rc
  if rc == 0:
    return None
  if rc == 3:
    return "mismatch"
  if rc == 4:
    return "run failure"
  return "exit %d" % rc


def check(runner, case, path, targets):
  """Runs case; returns ('invalid'|'interp-fail'|'ok', failures as (runtime, config, symptom, out))."""
  with open(path, "w") as f:
    f.write(case.render(path))
  rc, out = runner.run(path, "interp", [], case.extra_args())
  s = symptom(rc, out, True)
  if s:
    return "ok", [("interp", [], s, out)]
  if rc == 1 or rc == 2:
    return "invalid", []
  if rc == 4:
    return "interp-fail", []
  fails = []
  for rt, cfg in targets:
    rc, out = runner.run(path, rt, cfg, case.extra_args())
    s = symptom(rc, out, False)
    if s:
      fails.append((rt, cfg, s, out))
  return "ok", fails


def reproduces(runner, case, path, rt, cfg, sym, checker=check):
  _, fails = checker(runner, case, path, [] if rt == "interp" else [(rt, cfg)])
  return any(f[0] == rt and f[2] == sym for f in fails)


def minimise(runner, case, path, rt, cfg, sym, deadline, checker=check):
  """Greedy: drop statements, outputs, inputs and keyword attributes; shrink sizes to 1 and 0.
  `checker` runs a case as check() does (fuzz_grad.py's for gradient cases)."""
  best = clone(case)

  def attempt(c):
    if time.time() > deadline:
      return False
    if reproduces(runner, c, path, rt, cfg, sym, checker):
      nonlocal best
      best = c
      return True
    return False

  changed = True
  while changed and time.time() < deadline:
    changed = False
    for k in range(len(best.outputs) - 1, -1, -1):
      if len(best.outputs) > 1:
        c = clone(best)
        del c.outputs[k]
        changed |= attempt(c)
    for k in range(len(best.stmts) - 1, -1, -1):
      if k < len(best.stmts):
        c = clone(best)
        del c.stmts[k]
        changed |= attempt(c)
    # an output may read an earlier value instead
    for k in range(len(best.outputs)):
      vals = re.findall(r"^(v\d+)", "\n".join(best.stmts), re.M)
      for v in vals[:-1]:
        c = clone(best)
        c.outputs[k] = (c.outputs[k][0], v, c.vtypes.get(v, c.outputs[k][2]))
        if c.outputs[k][1] != best.outputs[k][1] and attempt(c):
          changed = True
          break
    names = used_names(best)
    for k in range(len(best.inputs) - 1, -1, -1):
      if best.inputs[k][0] not in names:
        c = clone(best)
        del c.inputs[k]
        changed |= attempt(c)
    for k in range(len(best.stmts)):
      for m in re.finditer(r",\s*[a-z_]+\s*=\s*[^,()]+(?=[,)])", best.stmts[k]):
        c = clone(best)
        c.stmts[k] = best.stmts[k][:m.start()] + best.stmts[k][m.end():]
        if attempt(c):
          changed = True
          break
    for name in sorted(best.sizes):
      v = best.sizes[name]
      for smaller in sorted({1, 0, v // 2, v - 1}):
        if 0 <= smaller < v:
          c = clone(best)
          c.sizes[name] = smaller
          if attempt(c):
            changed = True
            break
    for k in range(len(best.facts) - 1, -1, -1):
      c = clone(best)
      del c.facts[k]
      changed |= attempt(c)
    for u in sorted(best.uses):
      c = clone(best)
      c.uses.discard(u)
      changed |= attempt(c)
    if best.specialize:
      c = clone(best)
      c.specialize = False
      changed |= attempt(c)
  return best


def write_failure(outdir, case, seed, index, rt, cfg, sym, out, command=None, mode=""):
  """Writes the minimised case with a header; `command(case)` gives the kiln subcommand and its
  arguments after FILE:fuzz (default: `run` on the runtime with cfg), `mode` the fuzzer's
  option that found it (`--grad`)."""
  os.makedirs(outdir, exist_ok=True)
  slug = re.sub(r"[^a-z0-9]+", "_", sym.lower()).strip("_")
  tag = "_tile0" if "TILE=0" in cfg else "_" + cfg[-1] if cfg else ""
  name = "seed%d_case%d_%s_%s%s.toml" % (seed, index, rt, slug, tag)
  path = os.path.join(outdir, name)
  verb, args = command(case) if command else ("run", ["--runtime", rt] + cfg + case.extra_args())
  rel = os.path.relpath(path, ROOT)
  head = ["# Found by tests/fuzz/diff_fuzz.py%s --seed %d (case %d), minimised." %
          (" " + mode if mode else "", seed, index),
          "# Runtime: %s; symptom: %s." % (" ".join([rt] + cfg), sym),
          "# Reproduce: build/kiln %s %s:fuzz %s" % (verb, rel, " ".join(args))]
  tail = [l for l in out.strip().splitlines() if l.strip()][-4:]
  head += ["# Output: " + l[:160] for l in tail]
  with open(path, "w") as f:
    f.write("\n".join(head) + "\n" + case.render(path))
  return path


def replay(kiln, folder, timeout):
  """Runs every fixed failure of folder again; 1 when one fails."""
  bad = 0
  with tempfile.TemporaryDirectory(prefix="kiln-fuzz-") as work:
    env = dict(os.environ, KILN_CACHE=os.path.join(work, "cache"))
    for name in sorted(os.listdir(folder)):
      path = os.path.join(folder, name)
      with open(path) as f:
        m = re.search(r"^# Reproduce: \S+ (run|grad) (\S+) (.*)$", f.read(), re.M)
      if not name.endswith(".toml") or not m:
        continue
      cmd = [kiln, m.group(1), os.path.join(folder, name) + ":fuzz"] + m.group(3).split()
      try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           timeout=timeout, cwd=ROOT)
        rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
      except subprocess.TimeoutExpired:
        rc, out = None, "timed out"
      print("%s: %s" % (name, "PASS" if rc == 0 else "FAIL (exit %s)" % rc))
      if rc != 0:
        bad += 1
        print(out)
  return 1 if bad else 0
