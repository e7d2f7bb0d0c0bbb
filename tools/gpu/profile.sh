#!/bin/bash
# Nsight Compute metrics of the kernels behind issue 13's GPU targets (docs/performance.md):
# achieved bandwidth, tensor-pipe and FMA-pipe use, occupancy, shared-memory bank conflicts,
# spills and the warps' stall reasons, one launch of each kernel after two warm-ups.
#   bash tools/gpu/profile.sh [BUNDLE [ROW...]] > profile.md
# ROWs (mul_add_mul, softmax, ..., stacked_layernorm) pick some of the rows; default all.
# BUNDLE is a folder from tools/gpu/bundle.sh (default .gpu/bundle); ncu must be on PATH or in
# /usr/local/cuda/bin. ncu locks the clocks to base: read the durations as relative only.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle=$(realpath -m "${1:-$root/.gpu/bundle}")
shift $(($# > 0 ? 1 : 0))
only=" $* "
kiln="$bundle/kiln"
ops="$bundle/share/kiln/ops"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "profile.sh: no ncu" >&2; exit 2; }
export KILN_CACHE=$(mktemp -d)
metrics=(
  gpu__time_duration.sum
  dram__throughput.avg.pct_of_peak_sustained_elapsed
  dram__bytes.sum.per_second
  sm__warps_active.avg.pct_of_peak_sustained_active
  launch__registers_per_thread
  sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
  smsp__issue_active.avg.pct_of_peak_sustained_active
  smsp__inst_executed.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum
  smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
  smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
  smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
  smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
  smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
)
csv=$(mktemp)
prof() {  # NAME SKIP COUNT -- kiln bench arguments: COUNT launches after SKIP
  local name=$1 skip=$2 count=$3
  shift 3
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  "$ncu" --csv --metrics "$(IFS=,; echo "${metrics[*]}")" --launch-skip "$skip" \
    --launch-count "$count" --kernel-name regex:kiln_ "$kiln" bench "$@" --runtime cuda \
    --repeat 1 2>/dev/null | grep '^"' | sed "s/^/\"$name\",/" >>"$csv"
}
prof mul_add_mul 2 1 "$ops/math.toml:mul_add_mul" --test N=67108864
prof softmax 2 1 "$ops/nn.toml:softmax" --test N=4096 --batch 8192
prof layernorm 2 1 "$ops/nn.toml:layernorm" --test N=4096 --batch 8192
prof sgemm 2 1 "$ops/nn.toml:matmul" --test M=4096,K=4096,N=4096
prof hgemm 2 1 "$ops/nn.toml:matmul" --dtype T=f16 --test M=4096,K=4096,N=4096
prof attention 2 1 "$ops/nn.toml:attention" --dtype T=f16 --test B=8,H=16,L=2048,S=2048,D=64
prof attention_causal 2 1 "$ops/nn.toml:attention" --dtype T=f16 --attr causal=true \
  --test B=8,H=16,L=2048,S=2048,D=64
# The three kernels of the graph row, launched one by one (the warm-ups' nine launches skipped).
KILN_CUDA_GRAPHS=0 prof stacked_layernorm 9 3 \
  "$bundle/share/kiln/tests/regressions/stacked_layernorm.toml:stacked_layernorm_8" \
  --test N=64 --batch 8
# Issue 29: the GPT-2 block written as one composite, f32; each of its kernels once, after one
# warm-up run (its kernels are the first launches).
KILN_CUDA_GRAPHS=0 prof gpt2_block 14 14 \
  "$bundle/share/kiln/tests/regressions/transformer_block.toml:gpt2_block" --attr heads=12 \
  --test S=1024,C=768 --warmup 1
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
python3 - "$csv" "$gpu" "$(cat "$bundle/share/kiln/COMMIT" 2>/dev/null)" <<'PY'
import csv, sys
path, gpu, commit = sys.argv[1:4]
rows, names, units, col, seen = {}, [], {}, None, {}
for r in csv.reader(open(path)):
    if len(r) > 1 and r[1] == "ID":  # the header: where the metric's name, unit and value are
        col = [r.index(h) for h in ("ID", "Metric Name", "Metric Unit", "Metric Value")]
        continue
    if col is None or len(r) <= max(col):
        continue
    # A row of several kernels: one column each, numbered in launch order.
    launches = seen.setdefault(r[0], [])
    if r[col[0]] not in launches:
        launches.append(r[col[0]])
    name = r[0] if len(launches) == 1 else f"{r[0]} {launches.index(r[col[0]]) + 1}"
    if len(launches) == 2 and r[0] in rows and f"{r[0]} 1" not in rows:
        rows[f"{r[0]} 1"] = rows.pop(r[0])
        names[names.index(r[0])] = f"{r[0]} 1"
    metric, unit, value = r[col[1]], r[col[2]], r[col[3]]
    if name not in rows:
        rows[name] = {}
        names.append(name)
    rows[name][metric] = value
    units[metric] = unit
metrics = list(dict.fromkeys(m for n in names for m in rows[n]))
short = lambda m: m.replace("smsp__average_warps_issue_stalled_", "stall ").replace(
    "_per_issue_active.ratio", "").replace(".avg.pct_of_peak_sustained_active", " %").replace(
    ".avg.pct_of_peak_sustained_elapsed", " %")
print(f"# Nsight Compute metrics: {gpu or 'no GPU'}, commit {commit or 'unknown'}\n")
print("| metric | " + " | ".join(names) + " |")
print("| --- | " + " | ".join("---" for _ in names) + " |")
for m in metrics:
    print(f"| {short(m)} ({units[m]}) | " + " | ".join(rows[n].get(m, "") for n in names) + " |")
PY
