#!/usr/bin/env bash
# Issue 28's targets for a GPT-2 block (tests/regressions/transformer_block.toml), each a ratio
# of medians measured in this run (baseline time / Kiln time; above 1: Kiln is faster):
#
#   block vs parts        gpt2_block as one composite against the six block_* composites a
#                         framework would call, run back to back on the activations the one
#                         before wrote, through the C++ API, rounds alternating one block run
#                         and one pass of the parts (tools/perf/gpt2_parts.cpp; built here); the
#                         two outputs must agree. Weights as GPT-2 initialises them.
#   block vs torch        gpt2_block against its baseline.torch in PyTorch eager (kiln bench --vs
#                         torch; needs KILN_PYTHON, tools/baselines/setup_torch.sh)
#   views vs contiguous   block_attention (q, k, v split from qkv by views) against
#                         block_attention_contiguous (the same attention on [1, H, S, D] inputs)
#   cold compile          the block's compile on an empty cache
#
# Usage: [KILN=build/kiln] [BUILD=build] [ROUNDS=30] tools/perf/gpt2_block.sh [RUNTIME [THREADS...]]
# (default: openmp on 1 and 2 threads). GPT-2 small's width and heads, 256 tokens, f32.
set -euo pipefail
cd "$(dirname "$0")/../.."
kiln=${KILN:-./build/kiln}
rounds=${ROUNDS:-30}
build=${BUILD:-build}
ninja -C "$build" gpt2_parts > /dev/null
runtime=${1:-openmp}
shift || true
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2)
spec=tests/regressions/transformer_block.toml
S=256
C=768
H=12
D=$((C / H))
export KILN_CACHE=${KILN_CACHE:-$(mktemp -d)}

median() {  # TARGET ARGS...: the median ms of one kiln bench
  "$kiln" bench "$spec:$1" --runtime "$runtime" "${@:2}" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])'
}

# The cold compile first, on an empty cache of its own.
cold=$(KILN_CACHE=$(mktemp -d) "$kiln" bench "$spec:gpt2_block" --runtime "$runtime" \
  --attr heads=$H --test S=$S,C=$C --repeat 1 --warmup 1 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["compile_ms"])')
echo "cold compile of gpt2_block on $runtime (S=$S, C=$C, heads=$H): $cold ms"
echo
echo "| threads | block ms | parts ms (back to back) | parts / block | torch ms | torch / block | views ms | contiguous ms | contiguous / views |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for t in "${threads[@]}"; do
  cfg=(--config "THREADS=$t")
  # One line: "... block median B ms ..., parts back to back P ms ..."; exits 1 if they differ.
  line=$("$build/tools/perf/gpt2_parts" "$spec" "$runtime" "$t" $S $C $H "$rounds")
  att=$(median block_attention "${cfg[@]}" --attr heads=$H --test S=$S,C=$C)
  contig=$(median block_attention_contiguous "${cfg[@]}" --test H=$H,S=$S,D=$D)
  torch="-"
  if [ -n "${KILN_PYTHON:-}" ]; then
    torch=$("$kiln" bench "$spec:gpt2_block" --runtime "$runtime" "${cfg[@]}" --attr heads=$H \
      --test S=$S,C=$C --vs torch --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["baseline_median_ms"], j["median_ms"])')
  fi
  python3 - "$t" "$torch" "$att" "$contig" "$line" <<'PY'
import re, sys
t, torch, att, contig, line = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
b = float(re.search(r"block median ([0-9.]+) ms", line).group(1))
parts = float(re.search(r"parts back to back ([0-9.]+) ms", line).group(1))
if torch == "-":
    tcol = "- | -"
else:
    tb, tk = map(float, torch.split())
    tcol = f"{tb:.4g} | {tb / tk:.3g} (block {tk:.4g} ms in that run)"
print(f"| {t} | {b:.4g} | {parts:.4g} | {parts / b:.3g} | {tcol} | {att:.4g} | {contig:.4g} | "
      f"{contig / att:.3g} |")
PY
done
