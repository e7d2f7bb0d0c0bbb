#!/usr/bin/env bash
# Issue 33's decode target: greedy decode tokens/s of GPT-2 after a prompt, B = 1, Kiln's
# `kiln generate ops/gpt2.toml:gpt2_step` (the KV cache double-buffered, docs/models.md
# "Generating") against PyTorch eager with a KV cache (tools/models/gpt2_reference.py, GPT-2
# written by hand from the same checkpoint), both on THREADS CPU threads, one after the other;
# the two greedy token lists must be equal. Random weights as GPT-2 initialises them
# (tools/models/gpt2_checkpoint.py, written once to $CKPT).
#
# Usage: KILN_PYTHON=/path/to/python-with-torch [KILN=build/kiln] [CKPT=/tmp/gpt2_small.safetensors]
#        tools/perf/gpt2_decode.sh [PROMPT_TOKENS [NEW_TOKENS [THREADS [LAYERS [EMBD]]]]]
# (default: 128 128 2 12 768, GPT-2 small); ROUNDS (default 3) runs of each, alternating, and
# their medians. The rate is over the decode steps (one token each; the first token, which comes
# from the prompt's call, not counted).
set -euo pipefail
cd "$(dirname "$0")/../.."
kiln=${KILN:-./build/kiln}
python=${KILN_PYTHON:?set KILN_PYTHON to a Python with torch}
prompt_len=${1:-128}
tokens=${2:-128}
threads=${3:-2}
layers=${4:-12}
embd=${5:-768}
ckpt=${CKPT:-/tmp/gpt2_l${layers}_c${embd}.safetensors}
[ -f "$ckpt" ] || "$python" tools/models/gpt2_checkpoint.py --layers "$layers" --embd "$embd" -o "$ckpt"
prompt=$("$python" -c "import random; r = random.Random(1); print(','.join(str(r.randrange(50257)) for _ in range($prompt_len)))")
echo "GPT-2 L=$layers C=$embd, prompt $prompt_len tokens, $tokens new, $threads threads ($(nproc) cores)"
# Warm the compile cache first, so the rate below is the steps alone.
"$kiln" generate ops/gpt2.toml:gpt2_step --weights "$ckpt" --attr layers="$layers" --prompt 1 \
  --tokens 2 --runtime openmp --config THREADS="$threads" > /dev/null
rounds=${ROUNDS:-3}
kiln_rates=() torch_rates=()
for round in $(seq "$rounds"); do  # alternating, so that a busy spell of the machine hits both
  kiln_out=$(OMP_NUM_THREADS=$threads "$kiln" generate ops/gpt2.toml:gpt2_step --weights "$ckpt" \
    --attr layers="$layers" --prompt "$prompt" --tokens "$tokens" --runtime openmp \
    --config THREADS="$threads")
  torch_out=$("$python" tools/models/gpt2_reference.py "$ckpt" --prompt "$prompt" \
    --tokens "$tokens" --threads "$threads")
  kiln_tokens=$(grep '^tokens:' <<< "$kiln_out")
  torch_tokens=$(grep '^tokens:' <<< "$torch_out")
  if [ "$kiln_tokens" != "$torch_tokens" ]; then
    echo "greedy tokens: DIFFERENT"; echo "kiln  $kiln_tokens"; echo "torch $torch_tokens"; exit 1
  fi
  kiln_rates+=("$(grep -o '[0-9.]* tokens/s' <<< "$kiln_out" | cut -d' ' -f1)")
  torch_rates+=("$(grep -o '[0-9.]* tokens/s' <<< "$torch_out" | cut -d' ' -f1)")
  echo "round $round: kiln $(tail -1 <<< "$kiln_out")"
  echo "         torch $(tail -1 <<< "$torch_out")"
done
echo "greedy tokens: equal ($tokens) in every round"
"$python" - "${kiln_rates[*]}" "${torch_rates[*]}" <<'PY'
import statistics, sys
k = statistics.median(float(v) for v in sys.argv[1].split())
t = statistics.median(float(v) for v in sys.argv[2].split())
print(f"median decode tokens/s: kiln {k:.2f}, torch eager {t:.2f}, kiln / torch {k / t:.2f}")
PY
