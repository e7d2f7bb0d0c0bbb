#!/usr/bin/env python3
"""GPT-2 in PyTorch, written by hand from a safetensors checkpoint with Hugging Face's names (what
tools/models/gpt2_checkpoint.py writes, or a real `model.safetensors`): the reference that
`kiln generate` is checked against, and the torch-eager baseline of docs/performance.md's decode
figure. Greedy generation with a KV cache (each layer's keys and values of the positions so far,
grown by one row a step, as Hugging Face's eager GPT-2 keeps them), f32 on the CPU.

  python tools/models/gpt2_reference.py CKPT --prompt 464,3290,318 --tokens 8
  python tools/models/gpt2_reference.py CKPT --prompt ... --tokens 8 --logits-at 5  # prefill
                                                        # logits at position 5, one per line

Prints the new token ids on one line (`tokens: ...`), then the prefill and decode times. Needs
torch (KILN_PYTHON=/work/venv-torch/bin/python, tools/baselines/setup_torch.sh).
"""
import argparse
import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


def load(path):
    """The checkpoint's tensors by name (copied out of the file: the reference's own memory)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[8 + n + a:8 + n + b]), dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).float()
    return out


class GPT2:
    """The forward pass over new tokens at positions pos.. with a per-layer KV cache."""

    def __init__(self, w, head_dim=64):
        self.w, self.head_dim = w, head_dim
        self.layers = sum(1 for k in w if k.endswith(".ln_1.weight"))
        self.C = w["wte.weight"].shape[1]
        self.H = self.C // head_dim

    def step(self, ids, cache):
        """Logits of every new position; `cache` (a list of (k, v) per layer, [H, T, D]) grows."""
        w, C, H, D = self.w, self.C, self.H, self.head_dim
        pos = cache[0][0].shape[1] if cache else 0
        S = ids.shape[0]
        x = w["wte.weight"][ids] + w["wpe.weight"][pos:pos + S]
        new_cache = []
        for l in range(self.layers):
            p = f"h.{l}."
            h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"])
            qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = (t.reshape(S, H, D).transpose(0, 1) for t in qkv.split(C, dim=1))
            if cache:
                k = torch.cat([cache[l][0], k], dim=1)
                v = torch.cat([cache[l][1], v], dim=1)
            new_cache.append((k, v))
            score = (q @ k.transpose(1, 2)) / math.sqrt(D)
            T = k.shape[1]
            mask = torch.arange(T)[None, :] <= (pos + torch.arange(S))[:, None]
            score = score.masked_fill(~mask, float("-inf"))
            a = (score.softmax(-1) @ v).transpose(0, 1).reshape(S, C)
            x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"])
            u = F.gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
            x = x + u @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        h = F.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"])
        return h @ w["wte.weight"].T, new_cache


def generate(model, prompt, tokens):
    """Greedy tokens, and the prefill and decode seconds."""
    out, cache = [], []
    ids = torch.tensor(prompt, dtype=torch.long)
    t0 = time.perf_counter()
    prefill = decode = 0.0
    for k in range(tokens):
        logits, cache = model.step(ids, cache)
        nxt = int(torch.argmax(logits[-1]))
        t1 = time.perf_counter()
        if k == 0:
            prefill = t1 - t0
        else:
            decode += t1 - t0
        t0 = t1
        out.append(nxt)
        ids = torch.tensor([nxt], dtype=torch.long)
    return out, prefill, decode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--prompt", required=True, help="token ids, e.g. 464,3290,318")
    p.add_argument("--tokens", type=int, default=8)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    p.add_argument("--logits-at", type=int, default=-1,
                   help="print the logits after prompt + generated tokens up to this position")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    prompt = [int(t) for t in a.prompt.split(",")]
    with torch.no_grad():
        model = GPT2(load(a.checkpoint))
        toks, prefill, decode = generate(model, prompt, a.tokens)
        print("tokens: " + " ".join(str(t) for t in toks))
        n = max(a.tokens - 1, 0)
        print(f"prefill {len(prompt)} tokens {prefill * 1e3:.1f} ms; decode {n} tokens "
              f"{decode * 1e3:.1f} ms, {n / decode if decode else 0:.2f} tokens/s")
        if a.logits_at >= 0:
            seq = torch.tensor((prompt + toks)[:a.logits_at + 1], dtype=torch.long)
            logits, _ = model.step(seq, [])
            for v in logits[-1].tolist():
                print(repr(v))


if __name__ == "__main__":
    sys.exit(main())
