"""kiln.Weights: a safetensors file mapped, its tensors as NumPy arrays and PyTorch tensors over
the mapping, a kernel run on them, and one clear error per bad file (docs/python.md)."""

import json
import struct

import numpy as np
import pytest

import kiln


def write(path, tensors, metadata=None):
    """A safetensors file of (name, dtype spelling, ndarray) as the safetensors library lays it out."""
    header, blobs, offset = {}, [], 0
    for name, dtype, a in tensors:
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return path


def test_tensors_are_arrays_over_the_mapping(tmp_path):
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    bf = np.array([0x3F80, 0xC000], dtype=np.uint16)  # bf16 1.0 and -2.0
    path = write(tmp_path / "w.safetensors",
                 [("b", "F32", b), ("h.bf", "BF16", bf), ("ids", "I64", np.array([3, -1]))],
                 {"format": "pt"})
    w = kiln.Weights(path)
    assert w.keys() == ["b", "h.bf", "ids"] and len(w) == 3 and "b" in w and "c" not in w
    assert w.metadata == {"format": "pt"}
    assert w.dtype("h.bf") == "bf16" and w.shape("b") == (3, 2)
    a = w["b"]
    assert a.dtype == np.float32 and np.array_equal(a, b) and not a.flags.writeable
    assert w["h.bf"].dtype == np.uint16 and list(w["h.bf"]) == [0x3F80, 0xC000]
    assert list(w["ids"]) == [3, -1]
    # An array keeps the mapping alive after the Weights is gone.
    del w
    assert a[2, 1] == 5.0
    # A kernel runs on the array as it lies in the mapping.
    matmul = kiln.load("std:nn.toml").compile("matmul")
    x = np.array([[1, 0, 0], [0, 1, 1]], dtype=np.float32)
    assert np.array_equal(matmul(x, a), x @ b)
    with pytest.raises(KeyError, match="no tensor named 'c'"):
        kiln.Weights(path)["c"]


def test_torch_tensors_over_the_mapping(tmp_path):
    torch = pytest.importorskip("torch")
    bf = np.array([0x3F80, 0xC000], dtype=np.uint16)
    path = write(tmp_path / "w.safetensors", [("h.bf", "BF16", bf), ("f", "F16", np.ones(3, np.float16))])
    w = kiln.Weights(path)
    t = w.tensor("h.bf")
    assert t.dtype == torch.bfloat16 and t.tolist() == [1.0, -2.0]
    f = w.tensor("f")
    f += 1  # copy-on-write: this process's pages, not the file
    assert f.tolist() == [2.0, 2.0, 2.0]
    assert kiln.Weights(path).tensor("f").tolist() == [1.0, 1.0, 1.0]


def test_a_bad_file_is_one_value_error(tmp_path):
    path = write(tmp_path / "w.safetensors", [("b", "F32", np.zeros(4, np.float32))])
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match=r"cut.safetensors: tensor 'b': data offsets \[0, 16\) reach past"):
        kiln.Weights(cut)
    with pytest.raises(ValueError, match="cannot open it"):
        kiln.Weights(tmp_path / "none.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00[1,2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        kiln.Weights(tmp_path / "junk.safetensors")


def test_a_checkpoint_runs_gpt2_through_inputs_for(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    path = tmp_path / "gpt2.safetensors"
    subprocess.run([sys.executable, str(ROOT / "tools" / "models" / "gpt2_checkpoint.py"),
                    "--layers", "2", "--embd", "64", "--vocab", "11", "--positions", "8",
                    "-o", str(path)], check=True, capture_output=True)
    w = kiln.Weights(path)
    spec = kiln.load("std:gpt2.toml")
    gpt2 = spec.compile("gpt2")
    reference = spec.compile("gpt2", "interp")
    ids = np.array([3, 1, 4, 1, 5], dtype=np.int32)
    args = w.inputs_for(gpt2, ids=ids)
    assert [a.shape for a in args[:4]] == [(5,), (11, 64), (8, 64), (2, 64)]
    logits = gpt2(*args)
    assert logits.shape == (5, 11)
    assert np.allclose(logits, reference(*args), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="no tensor for input 'ids' of 'gpt2', and it is not given"):
        w.inputs_for(gpt2)
    w2 = write(tmp_path / "gap.safetensors",
               [("h.0.w", "F32", np.zeros(2, np.float32)), ("h.2.w", "F32", np.zeros(2, np.float32))])
    with pytest.raises(ValueError, match="block 1 is missing"):
        kiln.Weights(w2).inputs_for(type("K", (), {"inputs": ["h_w"], "composite": "k"})())
