#!/usr/bin/env bash
# The CPU targets of docs/performance.md ("CPU targets"), each a `kiln bench` against its
# baseline in one run, printed as markdown rows: command, Kiln median, baseline median, ratio
# (baseline time / Kiln time). PyTorch rows need KILN_PYTHON (tools/baselines/setup_torch.sh);
# without it they are skipped. Usage: [KILN=build/kiln] tools/perf/cpu_targets.sh
cd "$(dirname "$0")/../.."
kiln=${KILN:-./build/kiln}
export KILN_CACHE=${KILN_CACHE:-$(mktemp -d)}
conv="--test B=8,C=64,H=56,W=56,F=64,R=3,S=3 --attr pad=1"
dw="--test B=8,C=256,H=56,W=56,F=256,R=3,S=3 --attr pad=1 --attr groups=256"
rows=(
  "ops/nn.toml:matmul --runtime clang --test M=1024,N=1024,K=1024 --vs openblas"
  "ops/nn.toml:matmul --runtime clang --test M=2048,N=2048,K=2048 --vs openblas"
  "ops/nn.toml:matmul --runtime openmp --config THREADS=2 --test M=1024,N=1024,K=1024 --vs openblas"
  "ops/nn.toml:matmul --runtime openmp --config THREADS=2 --test M=2048,N=2048,K=2048 --vs openblas"
  "ops/nn.toml:dense_gelu --runtime clang --test M=1024,K=1024,N=4096 --vs torch"
  "ops/nn.toml:conv2d --runtime clang $conv --vs torch"
  "ops/nn.toml:conv2d --runtime clang $dw --vs torch"
  "ops/math.toml:mul_add_mul --runtime clang --test N=16777216 --vs copy"
  "ops/nn.toml:softmax --runtime openmp --config THREADS=2 --test N=4096 --batch 4096 --vs copy"
  "ops/nn.toml:layernorm --runtime openmp --config THREADS=2 --test N=4096 --batch 4096 --vs copy"
  "ops/nn.toml:rmsnorm --runtime openmp --config THREADS=2 --test N=4096 --batch 4096 --vs copy"
)
echo "| command | Kiln median | baseline median | ratio |"
echo "| --- | --- | --- | --- |"
for r in "${rows[@]}"; do
  if [[ $r == *"--vs torch"* && -z ${KILN_PYTHON:-} ]]; then
    echo "| \`kiln bench $r\` | skipped: KILN_PYTHON is not set | | |"
    continue
  fi
  # shellcheck disable=SC2086
  out=$($kiln bench $r --json 2>&1) || { echo "| \`kiln bench $r\` | failed: $out | | |"; continue; }
  python3 - "$r" "$out" <<'PY'
import json, sys
r, j = sys.argv[1], json.loads(sys.argv[2])
print(f"| `kiln bench {r}` | {j['median_ms']:.4g} ms ({j['gflops']:.4g} GFLOP/s, {j['gbps']:.4g} GB/s) "
      f"| {j['baseline_median_ms']:.4g} ms ({j['baseline']}) | {j['ratio']:.3g} |")
PY
done
# Cold compile of the tiled matmul (a fresh cache), then its load from the cache: kiln bench's
# compile time is the whole build of the executable (schedule, render, compile, load).
d=$(mktemp -d)
for run in cold cached; do
  out=$(KILN_CACHE=$d $kiln bench ops/nn.toml:matmul --runtime clang --test M=1024,N=1024,K=1024 \
    --repeat 1 --warmup 1 --json)
  echo "$run: $(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(j["compile_ms"], "ms, cache hit:", j["cache_hit"])' "$out")"
done
rm -rf "$d"
