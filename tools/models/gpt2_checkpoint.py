#!/usr/bin/env python3
"""Writes a randomly initialised GPT-2 checkpoint as a safetensors file, with the tensor names,
shapes and layout Hugging Face's GPT-2 checkpoints use (`model.safetensors` of `gpt2`: wte.weight,
wpe.weight, h.{i}.ln_1.weight, h.{i}.attn.c_attn.weight as [C, 3C] (Conv1D: input-major), ...,
ln_f.bias), so that what reads it (`kiln run --weights`, kiln::Weights, docs/api.md) reads a real
checkpoint the same way. Initialised as GPT-2 is: weights N(0, 0.02), biases 0, norm gains 1.

  python3 tools/models/gpt2_checkpoint.py -o gpt2.safetensors                # GPT-2 small, f32
  python3 tools/models/gpt2_checkpoint.py --layers 2 --embd 64 --vocab 100 -o tiny.safetensors

NumPy is used where it is installed (GPT-2 small's 124 M values take seconds); without it the
standard library writes the same format (slowly: fine for small configurations).
"""
import argparse
import json
import random
import struct
import sys

try:
    import numpy as np
except ImportError:  # the standard library alone
    np = None


def tensors(layers, embd, vocab, positions):
    """(name, shape, kind) in Hugging Face's order; kind: normal, zeros or ones."""
    out = [("wte.weight", [vocab, embd], "normal"), ("wpe.weight", [positions, embd], "normal")]
    for i in range(layers):
        h = f"h.{i}."
        out += [
            (h + "ln_1.weight", [embd], "ones"), (h + "ln_1.bias", [embd], "zeros"),
            (h + "attn.c_attn.weight", [embd, 3 * embd], "normal"),
            (h + "attn.c_attn.bias", [3 * embd], "zeros"),
            (h + "attn.c_proj.weight", [embd, embd], "normal"),
            (h + "attn.c_proj.bias", [embd], "zeros"),
            (h + "ln_2.weight", [embd], "ones"), (h + "ln_2.bias", [embd], "zeros"),
            (h + "mlp.c_fc.weight", [embd, 4 * embd], "normal"),
            (h + "mlp.c_fc.bias", [4 * embd], "zeros"),
            (h + "mlp.c_proj.weight", [4 * embd, embd], "normal"),
            (h + "mlp.c_proj.bias", [embd], "zeros"),
        ]
    return out + [("ln_f.weight", [embd], "ones"), ("ln_f.bias", [embd], "zeros")]


def values(shape, kind, dtype, rng):
    n = 1
    for d in shape:
        n *= d
    if np is not None:
        a = {"normal": lambda: rng.normal(0.0, 0.02, n), "zeros": lambda: np.zeros(n),
             "ones": lambda: np.ones(n)}[kind]()
        return a.astype("<f4" if dtype == "F32" else "<f2").tobytes()
    v = [rng.gauss(0.0, 0.02) for _ in range(n)] if kind == "normal" else \
        [0.0 if kind == "zeros" else 1.0] * n
    return struct.pack("<%d%s" % (n, "f" if dtype == "F32" else "e"), *v)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--embd", type=int, default=768)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--positions", type=int, default=1024)
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    if min(a.layers, a.embd, a.vocab, a.positions) < 0 or a.embd == 0:
        sys.exit("gpt2_checkpoint: sizes must be positive")
    dtype = a.dtype.upper()
    rng = np.random.default_rng(a.seed) if np is not None else random.Random(a.seed)
    header, blobs, offset = {}, [], 0
    for name, shape, kind in tensors(a.layers, a.embd, a.vocab, a.positions):
        b = values(shape, kind, dtype, rng)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    header["__metadata__"] = {"format": "pt", "written_by": "kiln tools/models/gpt2_checkpoint.py",
                              "n_layer": str(a.layers), "n_embd": str(a.embd)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(a.output, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    print(f"wrote {a.output}: {len(blobs)} tensors, {offset} bytes of {a.dtype}")


if __name__ == "__main__":
    main()
