"""The differential fuzzer's cases: a generated composite (Case), its values (Val) and shapes.

A Case renders itself as a TOML spec file with one composite, `fuzz`, and its test bindings;
fuzz_gen.py builds Cases at random, fuzz_run.py runs and minimises them, diff_fuzz.py drives both.
"""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLOATS = ["f32", "f32", "f32", "f64", "f16", "bf16"]
SIGNED = ["i32", "i64", "i16", "i8"]
UNSIGNED = ["u8", "u16", "u32", "u64"]
INTS = SIGNED + UNSIGNED
SIZES = [0, 1, 1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 31, 33, 64, 97]
MAX_ELEMS = 60000


class Val:
  """A value of the body: its name, dtype, shape as (size expression, concrete size) pairs."""

  def __init__(self, name, dtype, shape, exact, bound=None):
    self.name, self.dtype, self.shape, self.exact = name, dtype, list(shape), exact
    self.bound = bound  # for integers: a bound on |value| (None: unknown, avoid arithmetic)

  @property
  def rank(self):
    return len(self.shape)

  def numel(self):
    n = 1
    for _, v in self.shape:
      n *= v
    return n


def is_float(dt):
  return dt in ("f32", "f64", "f16", "bf16")


def is_int(dt):
  return dt in INTS


def is_unsigned(dt):
  """Unsigned integers wrap modulo 2^bits in C and in the interpreter alike: exact, no overflow."""
  return dt in UNSIGNED


def umax(dt):
  """The largest value of an unsigned dtype."""
  return (1 << int(dt[1:])) - 1


def dims_text(shape):
  return "[" + ", ".join(s for s, _ in shape) + "]"


def broadcast(a, b):
  """The broadcast shape of a and b by size expression (a literal 1 expands), or None."""
  out = []
  for k in range(1, max(len(a), len(b)) + 1):
    x = a[-k] if k <= len(a) else None
    y = b[-k] if k <= len(b) else None
    if x is None:
      out.append(y)
    elif y is None or x[0] == y[0]:
      out.append(x)
    elif y[0] == "1":
      out.append(x)
    elif x[0] == "1":
      out.append(y)
    else:
      return None
  return out[::-1]


class Case:
  """A generated composite: inputs, size bindings, statements, outputs, run options."""

  def __init__(self):
    self.sizes = {}  # size variable -> concrete size
    self.inputs = []  # (name, type string)
    self.ranges = {}  # input -> (lo, hi)
    self.stmts = []  # statement text
    self.outputs = []  # (name, value name, dtype)
    self.specialize = False
    self.uses = set()  # ops/ files used
    self.vtypes = {}  # value name -> dtype
    self.facts = []  # `where` shape facts over sizes

  def render(self, path):
    """The spec text, with [meta] use paths relative to path's folder."""
    lines = []
    if self.uses:
      rel = [os.path.relpath(os.path.join(ROOT, "ops", f), os.path.dirname(os.path.abspath(path)))
             for f in sorted(self.uses)]
      lines += ["[meta]", "use = [" + ", ".join('"%s"' % r for r in rel) + "]", ""]
    lines.append("[fuzz]")
    lines.append('doc   = "A random composite of the differential fuzzer."')
    lines.append("in    = { " + ", ".join('%s = "%s"' % io for io in self.inputs) + " }")
    lines.append("out   = { " + ", ".join('%s = "%s"' % (o, dt) for o, _, dt in self.outputs) + " }")
    named = set(re.findall(r"[A-Z]\w*", " ".join(t for _, t in self.inputs)))
    facts = [f for f in self.facts if set(re.findall(r"[A-Z]\w*", f)) <= named]
    if facts:
      lines.append("where = [" + ", ".join('"%s"' % f for f in facts) + "]")
    body = list(self.stmts) + ["%s = copy(%s)" % (o, v) for o, v, _ in self.outputs]
    lines.append('body  = """\n' + "\n".join(body) + '\n"""')
    sizes = ", ".join("%s = %d" % kv for kv in sorted(self.sizes.items()) if kv[0] in named)
    rng = ", ".join("%s = [%s, %s]" % (k, lo, hi) for k, (lo, hi) in self.ranges.items()
                    if k in dict(self.inputs))
    # The interpreter rounds every node to its dtype, compiled code keeps f16 and bf16 in float
    # between fused operations: a result that cancels to near 0 (erf(x - x) = 1 - p with p near
    # 1) differs by the rounding of its intermediates, about one ulp of 1 in the narrowest type.
    types = set(self.vtypes.values()) | {t.split()[-1].split("[")[0] for _, t in self.inputs}
    atol = "5e-2" if "bf16" in types else "1e-2" if "f16" in types else "1e-4"
    test = "sizes = { %s }, rtol = 1e-3, atol = %s" % (sizes, atol)
    if rng:
      test += ", range = { %s }" % rng
    lines.append("test  = { %s }" % test)
    return "\n".join(lines) + "\n"

  def extra_args(self):
    return ["--specialize"] if self.specialize else []


def clone(case):
  c = Case()
  c.sizes, c.inputs, c.ranges = dict(case.sizes), list(case.inputs), dict(case.ranges)
  c.stmts, c.outputs = list(case.stmts), list(case.outputs)
  c.specialize, c.uses, c.vtypes = case.specialize, set(case.uses), case.vtypes
  c.facts = list(case.facts)
  return c


def used_names(case):
  text = "\n".join(case.stmts + [v for _, v, _ in case.outputs])
  return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
