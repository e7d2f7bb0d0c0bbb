"""The differential fuzzer's generator: one random composite (a Case) from a random.Random.

Inputs bound to odd, prime, 1 and 0 sizes; elementwise math over mixed dtypes with casts; views;
reductions; index notation (contractions, strided and dilated windows); calls to ops/ composites.
Integer values carry a bound on |value| so that no kernel overflows; `exact` marks values that
every runtime computes bit for bit alike (comparisons and float-to-integer casts read only those).
"""

from fuzz_case import (FLOATS, INTS, MAX_ELEMS, SIZES, Case, Val, broadcast, dims_text, is_float,
                       is_int, is_unsigned, umax)
from fuzz_lang import LangGen


class Gen(LangGen):
  """Generates one Case from a random.Random."""

  def __init__(self, rng):
    self.r = rng
    self.case = Case()
    self.vals = []
    self.nv = 0
    self.nidx = 0

  # ---- helpers -------------------------------------------------------------------------------
  def size_var(self, lo_pool=None):
    letters = "ABCDEFGHJKLMNPQRSUVWXYZ"
    n = len(self.case.sizes)
    # Past the letters (a case with many convolutions): A2, B2, ...
    name = letters[n % len(letters)] + ("" if n < len(letters) else str(n // len(letters) + 1))
    pool = lo_pool or SIZES
    self.case.sizes[name] = self.r.choice(pool)
    return (name, self.case.sizes[name])

  def fresh(self, prefix="v"):
    self.nv += 1
    return "%s%d" % (prefix, self.nv)

  def idx(self):
    self.nidx += 1
    return "i%d" % self.nidx

  def add_input(self, dtype, shape, rng_range=None, const=False):
    name = "x%d" % len(self.case.inputs)
    self.case.inputs.append((name, ("const " if const else "") + dtype + dims_text(shape)))
    if rng_range:
      self.case.ranges[name] = rng_range
    bound = 8 if is_int(dtype) else None
    if rng_range and is_int(dtype):
      bound = max(abs(rng_range[0]), abs(rng_range[1]))
    v = Val(name, dtype, shape, True, bound)
    self.vals.append(v)
    return v

  def emit(self, text_fn, dtype, shape, exact, bound=None):
    name = self.fresh()
    self.case.stmts.append(text_fn(name))
    self.case.vtypes[name] = dtype
    v = Val(name, dtype, shape, exact, bound)
    if v.numel() <= MAX_ELEMS:
      self.vals.append(v)
    return v

  def pick(self, pred=lambda v: True):
    cands = [v for v in self.vals if pred(v)]
    if not cands:
      return None
    # favour recent values so that statements chain
    w = [1 + k for k in range(len(cands))]
    return self.r.choices(cands, weights=w)[0]

  def literal(self, dt):
    if is_float(dt):
      return self.r.choice(["0.5", "2.0", "-1.5", "0.25", "3.0", "1.0"])
    return str(self.r.choice([1, 2, 3, 5, 7]))

  # ---- inputs --------------------------------------------------------------------------------
  def make_inputs(self):
    nvars = self.r.randint(1, 4)
    dims = [self.size_var() for _ in range(nvars)]
    total = 1
    for _, v in dims:
      total *= max(v, 1)
    while total > MAX_ELEMS and dims:
      big = max(range(len(dims)), key=lambda k: dims[k][1])
      name = dims[big][0]
      self.case.sizes[name] = max(1, self.case.sizes[name] // 4)
      dims[big] = (name, self.case.sizes[name])
      total = 1
      for _, v in dims:
        total *= max(v, 1)
    for _ in range(self.r.randint(1, 3)):
      dt = self.r.choice(FLOATS + FLOATS + INTS + ["bool"])
      shape = list(dims)
      roll = self.r.random()
      if roll < 0.25 and shape:
        shape = shape[self.r.randint(0, len(shape)):]  # a suffix: broadcasts
      elif roll < 0.4 and shape:
        k = self.r.randrange(len(shape))
        shape[k] = ("1", 1)
      elif roll < 0.5 and len(shape) > 1:
        self.r.shuffle(shape)
      rr = None
      if is_unsigned(dt):
        rr = (0, 8) if self.r.random() < 0.7 else (0, min(umax(dt), 65535))
      elif is_int(dt):
        rr = (-8, 8)
      elif is_float(dt) and self.r.random() < 0.2:
        rr = (-4.0, 4.0)
      self.add_input(dt, shape, rr, const=self.r.random() < 0.1)

  # ---- statements ----------------------------------------------------------------------------
  def st_unary_float(self):
    a = self.pick(lambda v: is_float(v.dtype))
    if not a:
      return False
    n = a.name
    forms = [("sin(%s)", False), ("exp2(sin(%s))", False), ("sqrt(%s * %s + 1.0)", False),
             ("log2(%s * %s + 1.0)", False), ("recip(%s * %s + 1.0)", False), ("-%s", True),
             ("%s * 2.0 + 0.5", False), ("%s ** 2", False), ("%s ** 3", False),
             ("maximum(%s, 0.25)", True), ("min(%s, -0.25)", True), ("mulacc(%s, %s, 0.5)", False),
             ("tanh(%s)", False), ("sigmoid(%s)", False), ("relu(%s)", True), ("gelu(%s)", False),
             ("silu(%s)", False), ("erf(%s)", False), ("abs(%s)", True), ("exp(sin(%s))", False),
             ("softplus(%s)", False), ("leaky_relu(%s, alpha=0.2)", False),
             ("clamp(%s, lo=-0.5, hi=0.5)", True), ("rsqrt(%s * %s + 1.0)", False),
             ("%s % 0.75", False), ("copy(%s)", True), ("mish(%s)", False)]
    f, keeps_exact = self.r.choice(forms)
    if f.startswith("%s %") and not a.exact:
      return False
    if any(f.startswith(c) for c in ("tanh", "sigmoid", "relu", "gelu", "silu", "erf", "abs",
                                     "exp(", "softplus", "leaky", "clamp", "rsqrt", "mish")):
      if a.rank == 0:
        return False  # ops/ composites take T[..., N]
      self.case.uses.add("math.toml")
    text = f.replace("%s", n)
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, a.shape, a.exact and keeps_exact)
    return True

  def st_binary(self):
    a = self.pick(lambda v: v.dtype != "bool")
    if not a:
      return False
    cands = [v for v in self.vals
             if v.dtype == a.dtype and broadcast(a.shape, v.shape) is not None]
    b = self.r.choice(cands)
    shape = broadcast(a.shape, b.shape)
    if is_float(a.dtype):
      op = self.r.choice(["+", "-", "*", "/", "max", "where"])
      if op == "/":
        text = "%s / (%s * %s + 1.0)" % (a.name, b.name, b.name)
      elif op == "max":
        text = "maximum(%s, %s)" % (a.name, b.name)
      elif op == "where":
        if not (a.exact and b.exact):
          return False
        text = "where(%s > %s, %s, %s * 0.5)" % (a.name, b.name, b.name, a.name)
      else:
        text = "%s %s %s" % (a.name, op, b.name)
      exact = a.exact and b.exact and op in ("max", "where")
      self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, exact)
      return True
    # integers: keep |values| small so that no kernel overflows
    ba, bb = a.bound, b.bound
    uns = is_unsigned(a.dtype)
    if uns:  # unsigned arithmetic wraps: any bound will do, the result's is at most the dtype's
      ba, bb = ba or umax(a.dtype), bb or umax(a.dtype)
    if ba is None or bb is None:
      return False
    op = self.r.choice(["+", "-", "*", "&", "|", "^", "<<", ">>", "//", "%", "max", "min"])
    lim = (umax(a.dtype) if uns else 100 if a.dtype == "i8" else 30000 if a.dtype == "i16" else
           1 << 24)
    if op in ("+", "-"):
      bound = ba + bb
    elif op == "*":
      bound = ba * bb
    elif op in ("&", "|", "^"):
      bound = 2 * max(ba, bb) + 1
    elif op == "<<":
      bound = ba * 8
    elif op in (">>", "//", "%"):
      bound = ba
    else:
      bound = max(ba, bb)
    if uns and (op == "-" or bound > lim):
      bound = lim  # wrapped
    if bound > lim:
      return False
    if op == "<<":
      text = "%s << (%s & 3)" % (a.name, b.name)
    elif op == ">>":
      text = "%s >> (%s & 3)" % (a.name, b.name)
    elif op in ("//", "%"):
      text = "%s %s ((%s & 7) | 1)" % (a.name, op, b.name)
    elif op in ("max", "min"):
      text = "%s(%s, %s)" % (op, a.name, b.name)
    else:
      text = "%s %s %s" % (a.name, op, b.name)
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, True, bound)
    return True

  def st_compare(self):
    a = self.pick(lambda v: v.exact and v.dtype != "bool")
    if not a:
      return False
    lit = self.literal(a.dtype) if is_int(a.dtype) else self.r.choice(["0.0", "0.25", "-0.5"])
    op = self.r.choice(["<", "<=", ">", ">=", "==", "!="])
    c = self.emit(lambda o: "%s = %s %s %s" % (o, a.name, op, lit), "bool", a.shape, True)
    if self.r.random() < 0.5:
      b = self.pick(lambda v: v.dtype == "bool" and broadcast(v.shape, c.shape) is not None)
      if b:
        op2 = self.r.choice(["&", "|", "^"])
        self.emit(lambda o: "%s = !(%s %s %s)" % (o, c.name, op2, b.name), "bool",
                  broadcast(c.shape, b.shape), True)
    return True

  def st_where(self):
    c = self.pick(lambda v: v.dtype == "bool")
    if not c:
      return False
    a = self.pick(lambda v: v.dtype != "bool" and broadcast(v.shape, c.shape) is not None)
    if not a:
      return False
    b = self.pick(lambda v: v.dtype == a.dtype and broadcast(v.shape, broadcast(a.shape, c.shape))
                  is not None)
    shape = broadcast(broadcast(a.shape, c.shape), b.shape)
    bound = max(a.bound, b.bound) if a.bound is not None and b.bound is not None else None
    self.emit(lambda o: "%s = where(%s, %s, %s)" % (o, c.name, a.name, b.name), a.dtype, shape,
              a.exact and b.exact, bound)
    return True

  def st_cast(self):
    a = self.pick()
    if not a:
      return False
    if is_float(a.dtype):
      if a.exact and self.r.random() < 0.5:
        dt = self.r.choice(INTS[:3] + INTS[4:] + ["bool"])
        scale = "8.0"
        if is_unsigned(dt) and a.dtype != "f16" and self.r.random() < 0.4:
          # past the dtype's range: the cast saturates, negatives give 0 (a power of 2 keeps the
          # product exact; f16 would overflow to inf in the interpreter only)
          scale = "1048576.0"
        text = "cast(%s * %s, %s)" % (a.name, scale, dt)
        bound = 64 if dt != "bool" else 1
        if a.name in self.case.ranges:
          bound = 8 * 4 + 1
        if scale != "8.0":
          bound = umax(dt)
        return bool(self.emit(lambda o: "%s = %s" % (o, text), dt, a.shape, True, bound))
      dt = self.r.choice(["f32", "f64", "f16", "bf16"])
      exact = a.exact and dt == "f64" or (a.exact and dt == a.dtype)
      self.emit(lambda o: "%s = cast(%s, %s)" % (o, a.name, dt), dt, a.shape, exact)
      return True
    dt = self.r.choice(["f32", "f64", "f16", "bf16", "i64", "i32", "u8", "u16", "u32", "u64"])
    bound = a.bound if a.dtype != "bool" else 1
    if is_int(dt) and a.dtype == "bool":
      bound = 1
    elif is_unsigned(dt) and (bound is None or bound > umax(dt) or not is_unsigned(a.dtype)):
      bound = umax(dt)  # a negative value wraps
    elif is_int(dt) and bound is not None and bound > 1 << 30:
      bound = None
    exact = is_int(dt) or dt in ("f32", "f64") and (bound or 1 << 30) < 256
    self.emit(lambda o: "%s = cast(%s, %s)" % (o, a.name, dt), dt, a.shape, exact,
              bound if is_int(dt) else None)
    return True

  def axes_subset(self, rank):
    k = self.r.randint(1, rank)
    axes = sorted(self.r.sample(range(rank), k))
    return [ax - rank if self.r.random() < 0.3 else ax for ax in axes], axes

  def st_reduce(self):
    a = self.pick(lambda v: v.rank >= 1 and v.dtype != "bool")
    if not a:
      return False
    op = self.r.choice(["sum", "max", "min", "prod", "sum", "max"])
    written, axes = self.axes_subset(a.rank)
    keep = self.r.random() < 0.4
    red = 1
    for ax in axes:
      red *= a.shape[ax][1]
    bound = a.bound
    if is_unsigned(a.dtype):
      bound = umax(a.dtype) if op in ("sum", "prod") else bound  # wraps
    elif is_int(a.dtype):
      if bound is None:
        return False
      if op == "sum":
        bound = bound * max(red, 1)
      elif op == "prod":
        return False
      if bound > (100 if a.dtype == "i8" else 1 << 24):
        return False
    if op == "prod" and red > 24:
      op = "sum"
    if op == "prod" and not is_float(a.dtype) and not is_unsigned(a.dtype):
      op = "max"
    if is_float(a.dtype) and op in ("max", "min") and red == 0:
      return False  # an empty max is -inf in both; skip the degenerate case
    shape = []
    for k, d in enumerate(a.shape):
      if k in axes:
        if keep:
          shape.append(("1", 1))
      else:
        shape.append(d)
    if len(axes) == a.rank and self.r.random() < 0.3:
      args = ""
    elif len(written) == 1 and self.r.random() < 0.5:
      args = ", axis=%d" % written[0]
    else:
      args = ", axis=[%s]" % ", ".join(map(str, written))
    if keep:
      args += ", keepdim=true"
    elif self.r.random() < 0.2:
      args += ", keepdim=false"
    exact = a.exact and op in ("max", "min")
    self.emit(lambda o: "%s = %s(%s%s)" % (o, op, a.name, args), a.dtype, shape, exact, bound)
    return True

  def st_view(self):
    a = self.pick(lambda v: v.rank >= 1)
    if not a:
      return False
    kind = self.r.choice(["reshape", "permute", "expand", "squeeze", "unsqueeze", "slice", "pad",
                          "flip", "permute", "slice", "pad"])
    n, sh = a.name, a.shape
    if kind == "reshape":
      if a.rank >= 2 and self.r.random() < 0.6:
        k = self.r.randrange(a.rank - 1)
        (s1, v1), (s2, v2) = sh[k], sh[k + 1]
        p1, p2 = (e if e.isalnum() else "(%s)" % e for e in (s1, s2))
        merged = ("%s * %s" % (p1, p2) if s1 != "1" and s2 != "1" else
                  s1 if s2 == "1" else s2, v1 * v2)
        shape = sh[:k] + [merged] + sh[k + 2:]
      else:
        k = self.r.randint(0, a.rank)
        shape = sh[:k] + [("1", 1)] + sh[k:]
      text = "reshape(%s, %s)" % (n, dims_text(shape))
    elif kind == "permute":
      perm = list(range(a.rank))
      self.r.shuffle(perm)
      shape = [sh[p] for p in perm]
      text = "permute(%s, [%s])" % (n, ", ".join(map(str, perm)))
    elif kind == "expand":
      ones = [k for k, d in enumerate(sh) if d[0] == "1"]
      if not ones:
        return False
      k = self.r.choice(ones)
      target = self.r.choice([d for d in self.case.sizes.items()] + [("1", 1)])
      target = (target[0], target[1])
      shape = sh[:k] + [target] + sh[k + 1:]
      if self.r.random() < 0.3:  # expand may also add leading dimensions
        shape = [self.r.choice(list(self.case.sizes.items()))] + shape
      text = "expand(%s, %s)" % (n, dims_text(shape))
    elif kind == "squeeze":
      ones = [k for k, d in enumerate(sh) if d[0] == "1"]
      if not ones:
        return False
      k = self.r.choice(ones)
      shape = sh[:k] + sh[k + 1:]
      text = "squeeze(%s, %d)" % (n, k)
    elif kind == "unsqueeze":
      k = self.r.randint(0, a.rank)
      shape = sh[:k] + [("1", 1)] + sh[k:]
      text = "unsqueeze(%s, %d)" % (n, k)
    elif kind == "slice":
      k = self.r.randrange(a.rank)
      s, v = sh[k]
      start = self.r.choice([0, 0, 1, 2])
      step = self.r.choice([1, 1, 2, 3])
      if start > v:
        return False
      if self.r.random() < 0.5:
        out = -(-(v - start) // step)
        text = "slice(%s, %d, %d, step=%d)" % (n, k, start, step)
        sym = "(%s - %d + %d) / %d" % (s, start, step - 1, step)
      else:
        cut = self.r.choice([0, 1])
        if start > v - cut:
          return False
        out = -(-(v - cut - start) // step)
        text = "slice(%s, %d, %d, size(%s, %d) - %d, %d)" % (n, k, start, n, k, cut, step)
        sym = "(%s - %d - %d + %d) / %d" % (s, cut, start, step - 1, step)
      shape = sh[:k] + [(sym if (start, step) != (0, 1) or "size" in text else s, out)] + sh[k + 1:]
      if (start, step) == (0, 1) and "size" not in text:
        shape[k] = sh[k]
    elif kind == "pad":
      k = self.r.randrange(a.rank)
      before, after = self.r.choice([0, 1, 2, 3]), self.r.choice([0, 1, 2])
      s, v = sh[k]
      shape = sh[:k] + [("(%s + %d)" % (s, before + after), v + before + after)] + sh[k + 1:]
      ax = k if self.r.random() < 0.7 else k - a.rank
      text = "pad(%s, %d, %d, %d)" % (n, ax, before, after)
    else:
      k = self.r.randrange(a.rank)
      shape = sh
      text = "flip(%s, %d)" % (n, k)
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, a.exact, a.bound)
    return True

  def st_contract(self):
    """Index notation: a contraction or outer product of two values sharing a dimension."""
    a = self.pick(lambda v: is_float(v.dtype) and 1 <= v.rank <= 3)
    if not a:
      return False
    cands = [v for v in self.vals if v.dtype == a.dtype and 1 <= v.rank <= 3 and
             any(d[0] == e[0] and d[0] != "1" for d in v.shape for e in a.shape)]
    if not cands:
      return False
    b = self.r.choice(cands)
    ia = [self.idx() for _ in a.shape]
    shared = [(p, q) for p, d in enumerate(a.shape) for q, e in enumerate(b.shape)
              if d[0] == e[0] and d[0] != "1"]
    p, q = self.r.choice(shared)
    ib = [self.idx() for _ in b.shape]
    ib[q] = ia[p]
    reduce = self.r.random() < 0.7
    left, shape = [], []
    for i, d in zip(ia + ib, a.shape + b.shape):
      if i in left or (reduce and i == ia[p]):
        continue
      left.append(i)
      shape.append(d)
    work = 1
    for d in a.shape + b.shape:
      work *= max(d[1], 1)
    if work > 4 * MAX_ELEMS * 10 or not left:
      return False
    prod = "%s[%s] * %s[%s]" % (a.name, ", ".join(ia), b.name, ", ".join(ib))
    red = self.r.choice(["sum", "sum", "max"])
    rhs = "%s(%s, %s)" % (red, prod, ia[p]) if reduce else prod
    if reduce and len(left) >= 2 and self.r.random() < 0.3:
      # a bound among the free indices: the rest of the box is the reduction's identity
      l1, l2 = self.r.sample(left, 2)
      c = self.r.choice([-1, 0, 0, 1])
      rhs = "%s(%s, %s, %s <= %s%s)" % (red, prod, ia[p], l1, l2, " %s %d" % ("+" if c > 0 else "-", abs(c)) if c else "")
    self.emit(lambda o: "%s[%s] = %s" % (o, ", ".join(left), rhs), a.dtype, shape, False)
    return True

  def st_window(self):
    """Index notation: a strided, dilated, padded window along one axis of a value."""
    a = self.pick(lambda v: is_float(v.dtype) and 1 <= v.rank <= 3)
    if not a:
      return False
    k = self.r.randrange(a.rank)
    s, v = a.shape[k]
    K, st, dil, pd = (self.r.choice([1, 2, 3]), self.r.choice([1, 2, 3]), self.r.choice([1, 2]),
                      self.r.choice([0, 1, 2]))
    span = dil * (K - 1) + 1
    if v + 2 * pd < span:
      return False
    out = (v + 2 * pd - span) // st + 1
    osym = "(%s + %d - %d) / %d + 1" % (s, 2 * pd, span, st)
    idx = [self.idx() for _ in a.shape]
    o, r = idx[k], self.idx()
    sub = list(idx)
    sub[k] = "%s * %d + %s * %d" % (o, st, r, dil)
    base = "pad(%s, %d, %d, %d)" % (a.name, k, pd, pd) if pd else a.name
    wnd = self.fresh()
    self.case.stmts.append("%s = full(1.0, [%d], %s)" % (wnd, K, a.dtype))
    z = self.fresh()
    self.case.stmts.append("%s = full(0.0, [%s], %s)" % (z, osym, a.dtype))
    red = self.r.choice(["sum", "max"])
    shape = list(a.shape)
    shape[k] = (osym, out)
    rhs = "%s(%s[%s] * %s[%s], %s) + %s[%s]" % (red, base, ", ".join(sub), wnd, r, r, z, o)
    self.emit(lambda n: "%s[%s] = %s" % (n, ", ".join(idx), rhs), a.dtype, shape, False)
    return True

  def st_call(self):
    """A call to an ops/ composite."""
    kind = self.r.choice(["conv2d", "conv2d", "conv2d", "pool", "matmul", "softmax", "reduce",
                          "norm", "tensor"])
    if kind == "conv2d":
      return self.call_conv()
    if kind == "pool":
      return self.call_pool()
    if kind == "matmul":
      a = self.pick(lambda v: is_float(v.dtype) and v.dtype != "f16" and v.rank == 2)
      if not a:
        return False
      cands = [v for v in self.vals if v.dtype == a.dtype and v.rank == 2 and
               v.shape[0][0] == a.shape[1][0]]
      if not cands:
        n = self.size_var([1, 3, 5, 7, 16, 17])
        b = self.add_input(a.dtype, [a.shape[1], n])
      else:
        b = self.r.choice(cands)
      self.case.uses.add("nn.toml")
      self.emit(lambda o: "%s = matmul(%s, %s)" % (o, a.name, b.name), a.dtype,
                [a.shape[0], b.shape[1]], False)
      return True
    if kind == "softmax":
      a = self.pick(lambda v: is_float(v.dtype) and v.rank >= 1)
      if not a:
        return False
      f = self.r.choice(["softmax", "log_softmax"])
      self.case.uses.add("nn.toml")
      self.emit(lambda o: "%s = %s(%s)" % (o, f, a.name), a.dtype, a.shape, False)
      return True
    if kind == "reduce":
      a = self.pick(lambda v: is_float(v.dtype) and v.rank >= 1)
      if not a:
        return False
      f = self.r.choice(["mean", "var", "logsumexp", "argmax"])
      written, axes = self.axes_subset(a.rank)
      if f == "argmax":
        ax = self.r.randrange(a.rank)
        written, axes = [ax], [ax]
        attr = "axis=%d" % ax
        if not a.exact:
          return False
      else:
        attr = "axis=[%s]" % ", ".join(map(str, written))
      keep = self.r.random() < 0.4
      if keep:
        attr += ", keepdim=true"
      if any(a.shape[ax][1] == 0 for ax in axes):
        return False
      shape = [("1", 1) if k in axes else d for k, d in enumerate(a.shape) if keep or k not in axes]
      self.case.uses.add("reduce.toml")
      dt = "i64" if f == "argmax" else a.dtype
      self.emit(lambda o: "%s = %s(%s, %s)" % (o, f, a.name, attr), dt, shape, f == "argmax",
                1 << 20 if f == "argmax" else None)
      return True
    if kind == "norm":
      a = self.pick(lambda v: is_float(v.dtype) and v.rank >= 1 and v.shape[-1][0] != "1")
      if not a:
        return False
      g = [v for v in self.vals if v.dtype == a.dtype and v.shape == a.shape[-1:]]
      gamma = self.r.choice(g) if g else self.add_input(a.dtype, a.shape[-1:], const=True)
      self.case.uses.add("nn.toml")
      if self.r.random() < 0.5:
        text = "rmsnorm(%s, %s)" % (a.name, gamma.name)
      else:
        text = "layernorm(%s, %s, %s, eps=0.001)" % (a.name, gamma.name, gamma.name)
      self.emit(lambda o: "%s = %s" % (o, text), a.dtype, a.shape, False)
      return True
    a = self.pick(lambda v: v.rank >= 2 and v.dtype in ("f32", "f64", "i32", "i64"))
    if not a:
      return False
    self.case.uses.add("tensor.toml")
    f = self.r.choice(["transpose", "flatten", "concat"])
    sh = a.shape
    if f == "transpose":
      shape = sh[:-2] + [sh[-1], sh[-2]]
      text = "transpose(%s)" % a.name
    elif f == "flatten":
      shape = sh[:-2] + [("%s * %s" % (sh[-2][0], sh[-1][0]), sh[-2][1] * sh[-1][1])]
      text = "flatten(%s)" % a.name
    else:
      b = self.pick(lambda v: v.dtype == a.dtype and v.rank == a.rank and v.shape[:-1] == sh[:-1])
      shape = sh[:-1] + [("(%s + %s)" % (sh[-1][0], b.shape[-1][0]), sh[-1][1] + b.shape[-1][1])]
      text = "concat(%s, %s)" % (a.name, b.name)
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, a.exact, a.bound)
    return True

  def call_conv(self):
    """conv2d on a fresh input pair: random stride, pad, dilation, groups (depthwise too)."""
    dt = self.r.choice(["f32", "f32", "f32", "f64"])
    C = self.r.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32])
    divs = [g for g in range(1, C + 1) if C % g == 0]
    groups = C if self.r.random() < 0.4 else self.r.choice(divs)
    m = self.r.choice([1, 1, 2, 3])
    R, S = self.r.choice([1, 2, 3, 3, 5]), self.r.choice([1, 2, 3, 3, 5])
    stride, pad, dil = self.r.choice([1, 2, 2, 3]), self.r.choice([0, 1, 1, 2]), self.r.choice(
        [1, 1, 2])
    B = self.r.choice([1, 2, 3])
    H, W = self.r.randint(1, 40), self.r.randint(1, 40)
    while B * C * H * W > MAX_ELEMS:
      H, W = max(1, H // 2), max(1, W // 2)
    if H + 2 * pad < dil * (R - 1) + 1 or W + 2 * pad < dil * (S - 1) + 1:
      return False
    names = {}
    for nm, val in (("B", B), ("C", C), ("H", H), ("W", W)):
      names[nm] = self.size_var([val])
    x = self.add_input(dt, [names[k] for k in "BCHW"])
    if self.r.random() < 0.5:
      fdim = (names["C"][0], C) if m == 1 and groups == C else None
    else:
      fdim = None
    if fdim is None:
      fdim = self.size_var([groups * m])
    rdim = self.size_var([R]) if self.r.random() < 0.5 else (str(R), R)
    sdim = self.size_var([S]) if self.r.random() < 0.5 else (str(S), S)
    cg = ("%s / %d" % (names["C"][0], groups), C // groups)
    w = self.add_input(dt, [fdim, cg, rdim, sdim], const=self.r.random() < 0.5)
    attrs = []
    for k, v, d in (("stride", stride, 1), ("pad", pad, 0), ("dilation", dil, 1), ("groups", groups,
                                                                                 1)):
      if v != d or self.r.random() < 0.3:
        attrs.append("%s=%d" % (k, v))
    oh = (H + 2 * pad - dil * (R - 1) - 1) // stride + 1
    ow = (W + 2 * pad - dil * (S - 1) - 1) // stride + 1
    shape = [names["B"], fdim, ("(%s + %d - %d * (%s - 1) - 1) / %d + 1" % (
        names["H"][0], 2 * pad, dil, rdim[0], stride), oh), ("(%s + %d - %d * (%s - 1) - 1) / %d + 1"
                                                            % (names["W"][0], 2 * pad, dil, sdim[0],
                                                               stride), ow)]
    self.case.uses.add("nn.toml")
    self.emit(lambda o: "%s = conv2d(%s)" % (o, ", ".join([x.name, w.name] + attrs)), dt, shape,
              False)
    return True

  def call_pool(self):
    a = self.pick(lambda v: is_float(v.dtype) and v.rank == 4)
    if not a:
      dt = self.r.choice(["f32", "f64"])
      dims = [self.size_var([self.r.choice([1, 2, 3])]), self.size_var([self.r.choice([1, 3, 5])]),
              self.size_var([self.r.randint(1, 30)]), self.size_var([self.r.randint(1, 30)])]
      a = self.add_input(dt, dims)
    kernel, stride, pad = self.r.choice([1, 2, 3]), self.r.choice([1, 2, 3]), self.r.choice([0, 1])
    if pad * 2 > kernel:
      pad = 0
    H, W = a.shape[2][1], a.shape[3][1]
    if H + 2 * pad < kernel or W + 2 * pad < kernel:
      return False
    f = self.r.choice(["maxpool2d", "avgpool2d"])
    oh = (H + 2 * pad - kernel) // stride + 1
    ow = (W + 2 * pad - kernel) // stride + 1
    shape = a.shape[:2] + [("(%s + %d - %d) / %d + 1" % (a.shape[2][0], 2 * pad, kernel, stride), oh),
                           ("(%s + %d - %d) / %d + 1" % (a.shape[3][0], 2 * pad, kernel, stride), ow)]
    self.case.uses.add("nn.toml")
    self.emit(lambda o: "%s = %s(%s, kernel=%d, stride=%d, pad=%d)" % (o, f, a.name, kernel, stride,
                                                                      pad), a.dtype, shape,
              a.exact and f == "maxpool2d")
    return True

  def generate(self):
    self.make_inputs()
    kinds = [(self.st_unary_float, 5), (self.st_binary, 5), (self.st_compare, 2),
             (self.st_where, 2), (self.st_cast, 3), (self.st_reduce, 4), (self.st_view, 6),
             (self.st_contract, 2), (self.st_window, 2), (self.st_call, 4), (self.st_scan, 3),
             (self.st_bounded, 3), (self.st_gather, 3)]
    want = self.r.randint(1, 8)
    tries = 0
    while len(self.case.stmts) < want and tries < 200:
      tries += 1
      fn = self.r.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]
      fn()
    made = [v for v in self.vals if not v.name.startswith("x")]
    if not made:
      made = self.vals
    outs = self.r.sample(made[-4:], k=min(len(made[-4:]), self.r.randint(1, 3)))
    for k, v in enumerate(outs):
      self.case.outputs.append(("y%d" % k, v.name, v.dtype))
    self.case.specialize = self.r.random() < 0.15
    if self.r.random() < 0.2:
      self.add_facts()
    return self.case
