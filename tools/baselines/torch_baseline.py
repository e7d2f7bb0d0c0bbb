#!/usr/bin/env python3
"""The PyTorch side of `kiln bench --vs torch`: runs a composite's `baseline.torch` expression.

Kiln starts this script with the Python of KILN_PYTHON (default python3) and talks to it over
stdin and stdout, one line at a time:

  kiln -> one JSON object: {"expr", "where", "mode": "eager" | "compile", "device": "cpu" | "cuda",
          "threads" (0: PyTorch's own choice), "inputs" and "outputs": [{"name", "dtype", "shape",
          "path"}], "attrs", "sizes"}
  here -> "ready" once the inputs are loaded and one run has written each output's bytes
          (row-major, native byte order) to its path; "error: MESSAGE" and exit 1 on any failure
  kiln -> "run": one run, answered with its time in milliseconds, measured here ("error: ..."
          on a failure), and on a GPU a second number: the device time between CUDA events
          recorded around the call; "quit" or the end of input ends the script.

The expression sees `torch`, `F` (torch.nn.functional), `math`, then the sizes, the attributes and
the inputs by name (each shadows the ones before it), and returns a tensor or a tuple of tensors
in the order of the composite's outputs. An integer size or attribute named like one of the
modules (conv2d's filter count F, an MLP's hidden size F) is that integer with the module's
attributes besides, so `F.linear(x, w)` and `x.shape[-1] == F` both read as meant. It becomes the body of a function of the inputs, so that
`torch.compile` (mode "compile") traces it as it would a user's model.
"""
import json
import math
import sys
import time

DTYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
    "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "u16": "uint16", "u32": "uint32",
    "u64": "uint64", "bool": "bool",
}


def fail(message):
    print("error: " + " ".join(str(message).split()), flush=True)
    sys.exit(1)


def load(torch, spec, device):
    dtype = getattr(torch, DTYPES[spec["dtype"]])
    shape = spec["shape"]
    with open(spec["path"], "rb") as f:
        data = bytearray(f.read())
    if not data:
        return torch.empty(shape, dtype=dtype, device=device)
    # A copy in PyTorch's own memory: frombuffer's view of the bytes is as aligned as Python's
    # bytearray happens to be (16 bytes), and oneDNN runs slower on such tensors than on the
    # 64-byte aligned ones a user's model holds.
    return torch.frombuffer(data, dtype=dtype).reshape(shape).to(device).clone()


def save(torch, value, spec, where):
    if not isinstance(value, torch.Tensor):
        fail(f"{where}: output '{spec['name']}' is a {type(value).__name__}, not a tensor")
    if list(value.shape) != spec["shape"]:
        fail(f"{where}: output '{spec['name']}' has shape {list(value.shape)}; "
             f"the composite's is {spec['shape']}")
    value = value.detach().to("cpu", getattr(torch, DTYPES[spec["dtype"]])).contiguous()
    with open(spec["path"], "wb") as f:
        f.write(value.view(-1).view(torch.uint8).numpy().tobytes())


class SizeAndModule(int):
    """An integer named like a module of the expression's scope, whose attributes are the
    module's: `F` is 3072 in `h[:, :F]` and torch.nn.functional in `F.silu(h)`."""

    def __new__(cls, value, module):
        self = int.__new__(cls, value)
        self._module = module
        return self

    def __getattr__(self, name):
        return getattr(self._module, name)


def main():
    request = json.loads(sys.stdin.readline())
    where = request["where"]
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch cannot be imported by {sys.executable} ({e}); set KILN_PYTHON to a Python "
             "that has it, e.g. the venv of tools/baselines/setup_torch.sh")
    device = request["device"]
    if request["threads"] > 0:
        torch.set_num_threads(request["threads"])
    names = [i["name"] for i in request["inputs"]]
    scope = {"torch": torch, "F": torch.nn.functional, "math": math}
    for values in (request["sizes"], request["attrs"]):
        for name, value in values.items():
            module = scope.get(name)
            if isinstance(value, int) and type(module).__name__ == "module":
                value = SizeAndModule(value, module)
            scope[name] = value
    source = f"def baseline({', '.join(names)}):\n    return ({request['expr']})\n"
    try:
        exec(compile(source, where, "exec"), scope)
        inputs = [load(torch, i, device) for i in request["inputs"]]
    except Exception as e:  # a syntax error in the expression, a bad input file
        fail(f"{where}: {type(e).__name__}: {e}")
    fn = scope["baseline"]
    if request["mode"] == "compile":
        fn = torch.compile(fn)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def once():
        with torch.inference_mode():
            out = fn(*inputs)
        sync()
        return out

    try:
        out = once()
    except Exception as e:
        fail(f"{where}: {type(e).__name__}: {e}")
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(request["outputs"]):
        fail(f"{where}: the expression gives {len(outs)} outputs; the composite has "
             f"{len(request['outputs'])}")
    for value, spec in zip(outs, request["outputs"]):
        save(torch, value, spec, where)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        try:
            if device == "cuda":  # also the device time, as Kiln's runtime measures its own
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                t0 = time.perf_counter()
                start.record()
                with torch.inference_mode():
                    fn(*inputs)
                end.record()
                sync()
                ms = (time.perf_counter() - t0) * 1e3
                print(f"{ms!r} {start.elapsed_time(end)!r}", flush=True)
                continue
            t0 = time.perf_counter()
            once()
            ms = (time.perf_counter() - t0) * 1e3
        except Exception as e:
            fail(f"{where}: {type(e).__name__}: {e}")
        print(repr(ms), flush=True)


if __name__ == "__main__":
    main()
