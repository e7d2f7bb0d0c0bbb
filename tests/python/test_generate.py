"""kiln.generate: greedy tokens from a step composite over its KV cache, each the argmax of the
prefill logits over what came before (as the C++ API's kiln::generate, docs/models.md
"Generating"); weights from a checkpoint or a dict; the bad inputs, one ValueError each."""

import subprocess
import sys

import numpy as np
import pytest

import kiln


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from conftest import ROOT

    path = tmp_path_factory.mktemp("gpt2") / "gpt2.safetensors"
    subprocess.run([sys.executable, str(ROOT / "tools" / "models" / "gpt2_checkpoint.py"),
                    "--layers", "2", "--embd", "64", "--vocab", "23", "--positions", "16",
                    "-o", str(path)], check=True, capture_output=True)
    spec = kiln.load("std:gpt2.toml")
    return kiln.Weights(path), spec, spec.compile("gpt2_step"), spec.compile("gpt2")


def test_tokens_are_the_greedy_argmax_of_the_prefill_logits(model):
    w, spec, step, prefill = model
    seen = []
    g = kiln.generate(step, w, [3, 14, 15], 5, on_token=seen.append)
    assert isinstance(g, kiln.Generation) and seen == g.tokens and len(g.tokens) == 5
    assert g.prefill_seconds > 0 and g.decode_seconds > 0
    seq = [3, 14, 15]
    for t in g.tokens:
        logits = prefill(*w.inputs_for(prefill, ids=np.array(seq, dtype=np.int32)))
        assert t == int(np.argmax(logits[-1]))
        seq.append(t)
    # The one-token calls on the step compiled for S = 1, and the weights as a dict: the same.
    one = spec.compile("gpt2_step", specialize={"S": 1})
    again = kiln.generate(step, w.arrays_for(step), [3, 14, 15], 5, decode_step=one)
    assert again.tokens == g.tokens


def test_bad_inputs_are_one_value_error_each(model):
    w, _, step, _ = model
    arrays = w.arrays_for(step)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        kiln.generate(step, w, [3, 23], 2)
    with pytest.raises(ValueError, match="empty|prompt"):
        kiln.generate(step, w, [], 2)
    wrong = dict(arrays, wte_weight=arrays["wte_weight"].astype(np.float64))
    with pytest.raises(ValueError, match="input 'wte_weight' of 'gpt2_step' is f32"):
        kiln.generate(step, wrong, [3], 2)
    short = dict(arrays, wpe_weight=arrays["wpe_weight"][:, :32])
    with pytest.raises(ValueError, match="binds size C to 32"):
        kiln.generate(step, short, [3], 2)
    with pytest.raises(ValueError, match="has no input 'nope'"):
        kiln.generate(step, dict(arrays, nope=np.zeros(1, np.float32)), [3], 2)
    missing = {k: v for k, v in arrays.items() if k != "wpe_weight"}
    with pytest.raises(ValueError, match="wpe_weight"):
        kiln.generate(step, missing, [3], 2)

    def stop(t):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        kiln.generate(step, w, [3], 2, on_token=stop)
