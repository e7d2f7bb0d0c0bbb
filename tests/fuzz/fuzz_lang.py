"""The differential fuzzer's productions for scans, bounded reductions and gathers.

A mixin of fuzz_gen.Gen (which supplies pick, emit, idx, fresh, size_var and add_input): `scan`
and the std cum* composites, index-notation reductions over triangles, bands and reversed
subscripts, and data-dependent reads (tensor subscripts, `take_along`, ops/index.toml). Signed
integers keep their bound on |value| so that no kernel overflows; unsigned ones wrap, exactly.
"""

from fuzz_case import MAX_ELEMS, broadcast, dims_text, is_float, is_int, is_unsigned, umax

SCAN_OPS = {"float": ["add", "add", "mul", "max", "min"],
            "int": ["add", "add", "mul", "max", "min", "and", "or", "xor"],
            "bool": ["max", "min", "and", "or", "xor"]}
CUM = {"add": "cumsum", "mul": "cumprod", "max": "cummax", "min": "cummin"}


def kind_of(dt):
  return "float" if is_float(dt) else "int" if is_int(dt) else "bool"


def int_limit(dt):
  """The largest |value| a signed kernel of dt may reach (the generator's margin)."""
  return 100 if dt == "i8" else 30000 if dt == "i16" else 1 << 24


class LangGen:
  """Scans, bounded reductions and gathers for Gen."""

  def axis_text(self, k, rank):
    return str(k - rank if self.r.random() < 0.3 else k)

  # ---- scans ---------------------------------------------------------------------------------
  def st_scan(self):
    """`scan(x, op, axis, exclusive)` or a std cum* call along one axis."""
    a = self.pick(lambda v: v.rank >= 1)
    if not a:
      return False
    kind = kind_of(a.dtype)
    op = self.r.choice(SCAN_OPS[kind])
    k = self.r.randrange(a.rank)
    n = a.shape[k][1]
    excl = self.r.random() < 0.3
    src, bound, exact = a.name, a.bound, a.exact or kind != "float"
    if kind == "float":
      exact = a.exact and op in ("max", "min")
      if op == "mul":  # keep products small: factors in [2^-1/8, 2^1/8]; f16 rounds them apart
        if a.dtype not in ("f32", "f64"):
          return False
        src = "exp2(sin(%s) * 0.125)" % a.name
    elif kind == "int" and not is_unsigned(a.dtype):
      if bound is None:
        return False
      if op == "mul" and bound > 1 and bound**max(n, 1) > int_limit(a.dtype):
        src, bound = "(%s & 1)" % a.name, 1
      bound = {"add": bound * max(n, 1), "and": 2 * bound + 1, "or": 2 * bound + 1,
               "xor": 2 * bound + 1}.get(op, bound)
      if bound > int_limit(a.dtype):
        return False
      if excl and op in ("max", "min"):
        bound = None  # the identity is the dtype's lowest or highest value
    elif kind == "int":
      bound = umax(a.dtype) if op in ("add", "mul", "min") else bound
    cum = CUM.get(op) if kind != "bool" and self.r.random() < 0.35 else None
    if cum and excl and op in ("max", "min"):
      cum = None  # cummax and cummin have no exclusive form
    args = []
    if k != a.rank - 1 or self.r.random() < 0.3:
      args.append("axis=" + self.axis_text(k, a.rank))
    if excl or (self.r.random() < 0.1 and not (cum and op in ("max", "min"))):
      args.append("exclusive=" + ("true" if excl else "false"))
    if cum:
      self.case.uses.add("reduce.toml")
      text = "%s(%s)" % (cum, ", ".join([src] + args))
    else:
      text = "scan(%s)" % ", ".join([src, '"%s"' % op] + args)
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, a.shape, exact, bound)
    return True

  # ---- bounded reductions --------------------------------------------------------------------
  def st_bounded(self):
    """A reduction over a triangle, a band or a reversed subscript along one axis of a value."""
    if self.r.random() < 0.2:
      return self.call_bounded()
    a = self.pick(lambda v: 1 <= v.rank <= 3 and v.dtype != "bool" and
                  (is_float(v.dtype) or is_unsigned(v.dtype) or v.bound is not None))
    if not a:
      return False
    k = self.r.randrange(a.rank)
    s, n = a.shape[k]
    idx = [self.idx() for _ in a.shape]
    i, j = idx[k], self.idx()
    form = self.r.choice(["prefix", "prefix", "strict", "suffix", "window", "window", "reverse"])
    sub = list(idx)
    sub[k] = "%s - %s" % (i, j) if form == "reverse" else j
    conds = {"prefix": ["%s <= %s" % (j, i)], "strict": ["%s < %s" % (j, i)],
             "suffix": ["%s >= %s" % (j, i)], "reverse": ["%s <= %s" % (j, i)]}.get(form)
    if form == "window":
      conds = ["%s <= %s" % (j, i), "%s > %s - %d" % (j, i, self.r.choice([1, 2, 3, 4]))]
      self.r.shuffle(conds)
    red = self.r.choice(["sum", "sum", "max"])
    if red == "max" and form == "strict":
      red = "sum"  # the empty first element would be the lowest value
    bound = a.bound
    if is_float(a.dtype):
      exact = a.exact and red == "max"
    else:
      exact = True
      if is_unsigned(a.dtype):
        bound = umax(a.dtype) if red == "sum" else bound
      elif red == "sum":
        bound = bound * max(n, 1)
        if bound > int_limit(a.dtype):
          return False
    left = list(idx)
    left[k] = "%s < %s" % (i, s)  # the left bound gives i its range
    rhs = "%s(%s[%s], %s)" % (red, a.name, ", ".join(sub), ", ".join(conds))
    self.emit(lambda o: "%s[%s] = %s" % (o, ", ".join(left), rhs), a.dtype, a.shape, exact, bound)
    return True

  def call_bounded(self):
    """prefix_sum_bounded of ops/reduce.toml or causal_attention of ops/nn.toml."""
    if self.r.random() < 0.5:
      a = self.pick(lambda v: v.rank >= 1 and v.dtype in ("f32", "f64", "i64", "i32") and
                    (is_float(v.dtype) or v.bound is not None))
      if not a:
        return False
      bound = a.bound * max(a.shape[-1][1], 1) if is_int(a.dtype) else None
      if bound is not None and bound > int_limit(a.dtype):
        return False
      self.case.uses.add("reduce.toml")
      self.emit(lambda o: "%s = prefix_sum_bounded(%s)" % (o, a.name), a.dtype, a.shape,
                is_int(a.dtype), bound)
      return True
    q = self.pick(lambda v: v.rank == 4 and v.dtype in ("f32", "f64"))
    if not q:
      dims = [self.size_var([1, 2]), self.size_var([1, 3]), self.size_var([0, 1, 5, 17, 33]),
              self.size_var([1, 4, 8, 16])]
      q = self.add_input(self.r.choice(["f32", "f64"]), dims)
    kv = [self.pick(lambda v: v.dtype == q.dtype and v.shape == q.shape) for _ in range(2)]
    self.case.uses.add("nn.toml")
    self.emit(lambda o: "%s = causal_attention(%s, %s, %s)" % (o, q.name, kv[0].name, kv[1].name),
              q.dtype, q.shape, False)
    return True

  # ---- gathers -------------------------------------------------------------------------------
  def positions(self, n, shape=None, dtypes=None):
    """An integer value to index an axis of n: an existing exact one, or a new input that holds
    positions in and around [0, n) (outside reads 0)."""
    if shape is None:
      old = self.pick(lambda v: is_int(v.dtype) and v.exact and 1 <= v.rank <= 2 and
                      (dtypes is None or v.dtype in dtypes))
      if old and self.r.random() < 0.4:
        return old
      names = list(self.case.sizes.items())
      shape = [self.r.choice(names) for _ in range(self.r.randint(1, 2))]
    dt = self.r.choice(dtypes or ["i32", "i64", "i16", "i8", "u8", "u16", "u32", "u64"])
    lo = 0 if is_unsigned(dt) else self.r.choice([-2, -1, 0])
    hi = min(n + self.r.choice([0, 0, 1, 2]), 127 if dt == "i8" else 255 if dt == "u8" else 1 << 30)
    if hi <= lo:
      hi = lo + 1
    return self.add_input(dt, shape, (lo, hi))

  def st_gather(self):
    kind = self.r.choice(["subscript", "subscript", "take_along", "take_along", "embedding",
                          "take_along_axis", "scatter_add"])
    if kind == "subscript":
      return self.gather_subscript()
    if kind == "take_along":
      return self.gather_take_along()
    return self.call_index(kind)

  def gather_subscript(self):
    """`y[p..., q...] = x[q..., ids[p...], q...]`: a tensor subscript of one axis."""
    a = self.pick(lambda v: 1 <= v.rank <= 3)
    if not a:
      return False
    k = self.r.randrange(a.rank)
    ids = self.positions(a.shape[k][1])
    pi = [self.idx() for _ in ids.shape]
    qi = [self.idx() for _ in a.shape]
    sub = list(qi)
    sub[k] = "%s[%s]" % (ids.name, ", ".join(pi))
    if self.r.random() < 0.3:  # an expression of positions; an unsigned 0 - 1 wraps out of range
      sub[k] += self.r.choice([" - 1", " + 1", " * 2"])
    del qi[k]
    shape = ids.shape + a.shape[:k] + a.shape[k + 1:]
    if self.numel(shape) > MAX_ELEMS:
      return False
    self.emit(lambda o: "%s[%s] = %s[%s]" % (o, ", ".join(pi + qi), a.name, ", ".join(sub)),
              a.dtype, shape, a.exact, a.bound)
    return True

  def gather_take_along(self):
    """`take_along(x, idx, axis)`: idx of x's rank, its own size along axis, broadcasting."""
    a = self.pick(lambda v: v.rank >= 1)
    if not a:
      return False
    k = self.r.randrange(a.rank)
    ishape = list(a.shape)
    ishape[k] = self.r.choice(list(self.case.sizes.items()) + [("1", 1)])
    if a.rank > 1 and self.r.random() < 0.3:
      ishape[self.r.choice([m for m in range(a.rank) if m != k])] = ("1", 1)
    ids = self.positions(a.shape[k][1], ishape)
    shape = broadcast(a.shape, ishape[:k] + [a.shape[k]] + ishape[k + 1:])
    shape[k] = ishape[k]
    if self.numel(shape) > MAX_ELEMS:
      return False
    text = "take_along(%s, %s, %s)" % (a.name, ids.name, self.axis_text(k, a.rank))
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, a.exact, a.bound)
    return True

  def call_index(self, f):
    """embedding, take_along_axis or scatter_add of ops/index.toml."""
    ids_types = ["i32", "i64"]
    if f == "embedding":
      a = self.pick(lambda v: v.dtype in ("f32", "f16", "bf16", "f64") and v.rank == 2)
      if not a:
        return False
      ids = self.positions(a.shape[0][1], None, ids_types)
      shape, text = ids.shape + a.shape[1:], "embedding(%s, %s)" % (a.name, ids.name)
    elif f == "take_along_axis":
      a = self.pick(lambda v: v.dtype in ("f32", "f16", "bf16", "f64", "i64", "i32") and
                    v.rank >= 2)
      if not a:
        return False
      shape = a.shape[:-1] + [self.r.choice(list(self.case.sizes.items()))]
      ids = self.positions(a.shape[-1][1], shape, ids_types)
      text = "take_along_axis(%s, %s)" % (a.name, ids.name)
    else:
      a = self.pick(lambda v: v.dtype in ("f32", "f64", "i32", "i64") and v.rank >= 1 and
                    (is_float(v.dtype) or v.bound is not None))
      if not a:
        return False
      src = self.pick(lambda v: v.dtype == a.dtype and v.shape[:-1] == a.shape[:-1] and
                      v.rank == a.rank and (is_float(v.dtype) or v.bound is not None))
      ids = self.positions(a.shape[-1][1], src.shape, ids_types)
      if is_int(a.dtype):
        bound = a.bound + src.bound * max(src.shape[-1][1], 1)
        if bound > int_limit(a.dtype):
          return False
      shape, text = a.shape, "scatter_add(%s, %s, %s)" % (a.name, ids.name, src.name)
      self.case.uses.add("index.toml")
      self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, is_int(a.dtype),
                bound if is_int(a.dtype) else None)
      return True
    if self.numel(shape) > MAX_ELEMS:
      return False
    self.case.uses.add("index.toml")
    self.emit(lambda o: "%s = %s" % (o, text), a.dtype, shape, a.exact, a.bound)
    return True

  @staticmethod
  def numel(shape):
    n = 1
    for _, v in shape:
      n *= v
    return n

  # ---- shape facts ---------------------------------------------------------------------------
  def add_facts(self):
    """`where` facts that hold for the bound sizes: an equality of two sizes with one value, a
    lower bound, a divisibility; lowering may use them to prove shape checks."""
    names = sorted(self.case.sizes)
    facts = []
    for _ in range(self.r.randint(0, 2)):
      x = self.r.choice(names)
      y = self.r.choice(names)
      vx, vy = self.case.sizes[x], self.case.sizes[y]
      cands = ["%s >= %d" % (x, self.r.randint(0, vx))]
      if x != y and vx == vy:
        cands.append("%s == %s" % (x, y))
      if vy > 0 and vx % vy == 0:
        cands.append("%s %% %s == 0" % (x, y))
      if x != y:
        cands.append("%s + %s >= %s" % (x, y, x))
      facts.append(self.r.choice(cands))
    self.case.facts = facts
