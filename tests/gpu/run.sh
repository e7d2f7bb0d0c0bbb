#!/usr/bin/env bash
# tests/gpu/run.sh [BUNDLE] [all|tests|bench|python|sweep]: everything Kiln checks and measures on a
# GPU machine, in one call (all), or in parts under a 10-minute limit per call: `tests` (steps 1,
# 2, 3 and 5) and `bench` (steps 1, 4 and 5); `python` is steps 1, 3 and 5, `sweep` steps 1, 2
# and 5 (the composites without Python: 60 s on an H200 machine's 16 cores, 2026-11-30).
#
#  1. the folder of tools/gpu/bundle.sh (with the GPU suite, KILN_BUNDLE_TESTS=1): BUNDLE, else
#     .gpu/bundle, built here when missing (a GPU machine without Kiln's build dependencies needs
#     it carried: build it on the development machine first);
#  2. tests/gpu (kiln_gpu_tests): every composite of ops/ through NVRTC, then on the GPU against
#     the interpreter at every size of its test table, for every dtype and batch shape, and
#     again with CHECK=1, split over up to 12 processes side by side ($KILN_SWEEP_SHARDS, else
#     one per core); one line per composite, dtype and batch goes to sweep.tsv;
#  3. the Python package on the GPU: the extension built here with this machine's python3 and
#     nanobind against the bundle's libkiln (cmake -S python -DKILN_PREFIX=BUNDLE), then
#     tests/gpu/python (pytest: CUDA tensors, streams, every ops/ composite) to python.log and
#     tools/perf/python_overhead.py --runtime cuda to python_overhead.txt;
#  4. the GPU benchmarks (kiln bench --json, one line each to bench.jsonl);
#  5. results.md: the date, the GPU, the commit the bundle was built from, the benchmark table,
#     the Python package's results and the per-composite table.
#
# Results go to $KILN_GPU_RESULTS, else $OUT (the device tool's folder), else .gpu/results.
# Exits non-zero when a test failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle=$(realpath -m "${1:-$root/.gpu/bundle}")
part=${2:-all}
case "$part" in all | tests | bench | python | sweep) ;; *)
  echo "usage: tests/gpu/run.sh [BUNDLE] [all|tests|bench|python|sweep]" >&2
  exit 2
  ;;
esac
out=$(realpath -m "${KILN_GPU_RESULTS:-${OUT:-$root/.gpu/results}}")
mkdir -p "$out"
if [ ! -x "$bundle/bin/kiln_gpu_tests" ]; then
  KILN_BUNDLE_TESTS=1 bash "$root/tools/gpu/bundle.sh" "$bundle" || exit 1
fi
kiln="$bundle/kiln"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
commit=$(cat "$bundle/share/kiln/COMMIT" 2>/dev/null || echo unknown)
export KILN_CACHE=$(mktemp -d)  # a fresh cache: every compile a real one
# Each part starts its own file afresh and keeps the other's (results.md shows both).
case "$part" in all | tests | sweep) rm -f "$out/sweep.tsv" ;; esac
case "$part" in all | bench) rm -f "$out/bench.jsonl" ;; esac
case "$part" in all | tests | python) rm -f "$out/python.log" "$out/python_overhead.txt" ;; esac
echo "== $(date -u +%F) on ${gpu:-no GPU found}, commit $commit"
"$kiln" run "$bundle/share/kiln/ops/nn.toml:softmax" --runtime cuda --test N=1000 --debug 1

tests_rc=0
if [ "$part" = all ] || [ "$part" = tests ] || [ "$part" = sweep ]; then
  echo "== tests/gpu"
  start=$(date +%s)
  # The sweep's programs split over processes side by side (KILN_SWEEP_SHARD, tests/support/
  # runtime_sweep.h): NVRTC and the interpreter are CPU-bound, the GPU runs short.
  shards=${KILN_SWEEP_SHARDS:-$(nproc)}
  [ "$shards" -gt 12 ] && shards=12
  pids=()
  for ((i = 0; i < shards; i++)); do
    (cd "$bundle/share/kiln" && KILN_SWEEP_SHARD="$i/$shards" KILN_SWEEP_REPORT="$out/sweep.$i.tsv" \
      "$bundle/bin/kiln_gpu_tests" --no-intro=true --duration=true) >"$out/gpu_tests.$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < shards; i++)); do
    wait "${pids[$i]}" || tests_rc=1
  done
  cat "$out"/sweep.*.tsv >"$out/sweep.tsv" 2>/dev/null
  rm -f "$out"/sweep.*.tsv
  for ((i = 0; i < shards; i++)); do
    echo "-- shard $i/$shards"
    cat "$out/gpu_tests.$i.log"
  done >"$out/gpu_tests.log"
  rm -f "$out"/gpu_tests.*.log
  grep -E "^(\[doctest\] (test cases|assertions)|-- shard)|ERROR|FAILED" "$out/gpu_tests.log" | tail -n 60
  echo "tests/gpu: exit $tests_rc in $(($(date +%s) - start)) s"
fi

if [ "$part" != bench ] && [ "$part" != sweep ]; then
  echo "== python"
  start=$(date +%s)
  pybuild=$(mktemp -d)
  if cmake -S "$root/python" -B "$pybuild" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DKILN_PREFIX="$bundle" -DPython_EXECUTABLE="$(command -v python3)" >"$out/python.log" 2>&1 &&
    ninja -C "$pybuild" >>"$out/python.log" 2>&1; then
    export PYTHONPATH="$pybuild${PYTHONPATH:+:$PYTHONPATH}"
    # libkiln's carried isl and GMP (tools/gpu/bundle.sh)
    export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    (cd "$root" && PYTHONUNBUFFERED=1 python3 -m pytest -q -p no:cacheprovider \
      tests/gpu/python) >>"$out/python.log" 2>&1 || tests_rc=1
    python3 "$root/tools/perf/python_overhead.py" --runtime cuda >"$out/python_overhead.txt" 2>&1 ||
      tests_rc=1
  else
    echo "python: the extension did not build" >>"$out/python.log"
    tests_rc=1
  fi
  tail -n 15 "$out/python.log"
  cat "$out/python_overhead.txt" 2>/dev/null
  echo "python: $(($(date +%s) - start)) s"
fi

touch "$out/bench.jsonl"
[ "$part" = tests ] || [ "$part" = python ] || [ "$part" = sweep ] || {
echo "== benchmarks"
ops="$bundle/share/kiln/ops"
bench() {  # NAME ENV... -- kiln bench arguments
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  local line
  if line=$(timeout 120 env "${envs[@]}" "$kiln" bench "$@" --runtime cuda --json 2>"$out/bench.err"); then
    echo "{\"name\": \"$name\", \"result\": $line}" >>"$out/bench.jsonl"
    echo "$name: $line"
  else
    echo "$name: FAILED: $(head -c 400 "$out/bench.err")"
    echo "{\"name\": \"$name\", \"error\": true}" >>"$out/bench.jsonl"
  fi
}
bench softmax_8192x4096 -- "$ops/nn.toml:softmax" --test N=4096 --batch 8192
bench layernorm_8192x4096 -- "$ops/nn.toml:layernorm" --test N=4096 --batch 8192
bench add_2e26 -- "$ops/math.toml:add" --test N=67108864
bench matmul_1024 -- "$ops/nn.toml:matmul" --test M=1024,K=1024,N=1024
# Issue 13's targets, each against its baseline in the same process, alternated: PyTorch (eager
# and torch.compile, on this GPU), the device copy of the same bytes, cuBLAS through PyTorch.
bench softmax_vs_torch -- "$ops/nn.toml:softmax" --test N=4096 --batch 8192 --vs torch
bench softmax_vs_torch_compile -- "$ops/nn.toml:softmax" --test N=4096 --batch 8192 \
  --vs torch.compile
bench layernorm_vs_torch -- "$ops/nn.toml:layernorm" --test N=4096 --batch 8192 --vs torch
bench mul_add_mul_vs_copy -- "$ops/math.toml:mul_add_mul" --test N=67108864 --vs copy
bench sgemm_4096_vs_torch -- "$ops/nn.toml:matmul" --test M=4096,K=4096,N=4096 --vs torch \
  --repeat 5
bench hgemm_4096_vs_torch -- "$ops/nn.toml:matmul" --dtype T=f16 --test M=4096,K=4096,N=4096 \
  --vs torch --repeat 5
# GEMM layouts and batches on the tensor cores (wgmma on sm_90a; docs/performance.md).
bench hgemm_8192_vs_torch -- "$ops/nn.toml:matmul" --dtype T=f16 --test M=8192,K=8192,N=8192 \
  --vs torch --repeat 3
bench bf16gemm_4096_vs_torch -- "$ops/nn.toml:matmul" --dtype T=bf16 --test M=4096,K=4096,N=4096 \
  --vs torch --repeat 5
tc="$bundle/share/kiln/tests/regressions/tensor_core_contractions.toml"
bench linear_gelu_f16_4096_vs_torch -- "$tc:tc_linear" --dtype T=f16 --test M=4096,K=4096,N=4096 \
  --vs torch --repeat 5
bench at_b_f16_4096_vs_torch -- "$tc:tc_at_b" --dtype T=f16 --test M=4096,K=4096,N=4096 \
  --vs torch --repeat 5
bench bmm_f16_32x512_vs_torch -- "$ops/nn.toml:bmm" --dtype T=f16 --test B=32,M=512,K=512,N=512 \
  --vs torch --repeat 5
bench gpt2_mlp_f16_vs_torch -- "$bundle/share/kiln/tests/regressions/gpt2_mlp_half.toml:gpt2_mlp_half" \
  --dtype T=f16 --test S=8192,C=768,F=3072 --vs torch --repeat 3
bench attention_f16_vs_torch -- "$ops/nn.toml:attention" --dtype T=f16 \
  --test B=8,H=16,L=2048,S=2048,D=64 --vs torch --repeat 3
bench attention_d128_f16_vs_torch -- "$ops/nn.toml:attention" --dtype T=f16 \
  --test B=8,H=16,L=2048,S=2048,D=128 --specialize --vs torch --repeat 3
bench attention_d128_runtime_f16_vs_torch -- "$ops/nn.toml:attention" --dtype T=f16 \
  --test B=8,H=16,L=2048,S=2048,D=128 --vs torch --repeat 3
bench attention_bf16_vs_torch -- "$ops/nn.toml:attention" --dtype T=bf16 \
  --test B=8,H=16,L=2048,S=2048,D=64 --vs torch --repeat 3
bench attention_causal_f16_vs_torch -- "$ops/nn.toml:attention" --dtype T=f16 --attr causal=true \
  --test B=8,H=16,L=2048,S=2048,D=64 --vs torch --repeat 3
bench causal_attention_f16_vs_torch -- "$ops/nn.toml:causal_attention" --dtype T=f16 \
  --test B=8,H=16,L=2048,D=64 --vs torch --repeat 3
bench cumsum_2e20_f32_vs_copy -- "$ops/reduce.toml:cumsum" --test N=1048576 --batch 1 --vs copy
bench cumsum_4096x4096_f32_vs_torch -- "$ops/reduce.toml:cumsum" --test N=4096 --batch 4096 \
  --vs torch
bench scatter_add_4096x4096_f32_vs_torch -- "$ops/index.toml:scatter_add" \
  --test M=4096,N=4096 --batch 4096 --vs torch
# Attention as users write it (tests/regressions/attention_variants.toml), f16, 8x16x2048, D = 64,
# each against SDPA with the equivalent mask (eager PyTorch for the soft-cap).
variants="$bundle/share/kiln/tests/regressions/attention_variants.toml"
for v in bias softcap alibi blhd gqa mask window vexpr dropout; do
  attr=()
  sizes=B=8,H=16,L=2048,S=2048,D=64
  [ "$v" = window ] && attr=(--attr W=256) && sizes=B=8,H=16,L=2048,D=64
  [ "$v" = gqa ] && sizes=B=8,H=16,G=8,L=2048,S=2048,D=64
  bench "attn_${v}_f16_vs_torch" -- "$variants:attn_$v" --dtype T=f16 \
    --test "$sizes" "${attr[@]}" --vs torch --repeat 3
done
# Issue 28: a GPT-2 block written as one composite (tests/regressions/transformer_block.toml)
# against the same block in PyTorch eager, GPT-2 small's width and heads, f32 (the spec's types
# are f32 and f64).
block="$bundle/share/kiln/tests/regressions/transformer_block.toml:gpt2_block"
bench gpt2_block_1024x768_f32_vs_torch -- "$block" --attr heads=12 --test S=1024,C=768 --vs torch
bench stacked_layernorm_graph KILN_CUDA_GRAPHS=1 -- \
  "$bundle/share/kiln/tests/regressions/stacked_layernorm.toml:stacked_layernorm_8" \
  --test N=64 --batch 8
bench stacked_layernorm_launches KILN_CUDA_GRAPHS=0 -- \
  "$bundle/share/kiln/tests/regressions/stacked_layernorm.toml:stacked_layernorm_8" \
  --test N=64 --batch 8
}

python3 - "$out" "$gpu" "$commit" "$tests_rc" <<'PY'
import json, sys, datetime
out, gpu, commit, rc = sys.argv[1:5]
lines = [f"# GPU results: {datetime.date.today()} on {gpu or 'no GPU'}, commit {commit}", ""]
lines += ["## Benchmarks (kiln bench --runtime cuda --json; medians)", "",
          "| work | sizes | median ms | GB/s | GFLOP/s | device median ms | device GB/s | compile ms "
          "| baseline | baseline ms | ratio (baseline / kiln) | baseline device ms | device ratio |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for l in (open(f"{out}/bench.jsonl") if __import__("os").path.exists(f"{out}/bench.jsonl") else []):
    b = json.loads(l)
    if b.get("error"):
        lines.append(f"| {b['name']} | failed | | | | | | | | | | | |")
        continue
    r = b["result"]
    sizes = ",".join(f"{k}={v}" for k, v in r["sizes"].items())
    dev = lambda k: "-" if r.get(k) is None else f"{r[k]:.4g}"
    lines.append(f"| {b['name']} | {sizes} | {r['median_ms']:.4g} | {r['gbps']:.4g} | "
                 f"{r['gflops']:.4g} | {dev('device_median_ms')} | {dev('device_gbps')} | "
                 f"{r['compile_ms']:.4g} ({'hit' if r['cache_hit'] else 'miss'}) | "
                 f"{r.get('baseline') or '-'} | {dev('baseline_median_ms')} | {dev('ratio')} | "
                 f"{dev('baseline_device_median_ms')} | {dev('device_ratio')} |")
rows = [l.rstrip("\n").split("\t") for l in open(f"{out}/sweep.tsv")] if \
    __import__("os").path.exists(f"{out}/sweep.tsv") else []
bad = sum(int(r[5]) > 0 or r[7] != "" for r in rows)
import os
if os.path.exists(f"{out}/python.log"):
    log = open(f"{out}/python.log").read().splitlines()
    summary = next((l for l in reversed(log) if " passed" in l or " failed" in l or "error" in l),
                   "no pytest summary")
    lines += ["", "## The Python package on CUDA tensors (tests/gpu/python; "
              "tools/perf/python_overhead.py --runtime cuda)", "", f"pytest: {summary.strip('= ')}",
              "", "```"]
    if os.path.exists(f"{out}/python_overhead.txt"):
        lines += open(f"{out}/python_overhead.txt").read().splitlines()
    lines += ["```"]
lines += ["", f"## Every composite against the interpreter (tests/gpu: exit {rc}; "
          f"{len(rows)} programs, {sum(int(r[4]) for r in rows)} runs, {bad} failing)", "",
          "| runtime | composite | dtype | batch rank | cases | failed | max rel err | note |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
for r in rows:
    r[1] = r[1].split("/share/kiln/")[-1]
    lines.append("| " + " | ".join(x.replace("|", "/") for x in r) + " |")
open(f"{out}/results.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines[:20]))
PY
exit "$tests_rc"
