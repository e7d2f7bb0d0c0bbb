#!/usr/bin/env bash
# Issue 30's CPU targets, each a `kiln bench` against its baseline in the same run (medians of
# alternated runs), printed as markdown rows: command, Kiln median, baseline median, ratio
# (baseline time / Kiln time; > 1: Kiln is faster). f32 contractions run against both OpenBLAS
# and PyTorch (the target is the faster of the two). PyTorch rows need KILN_PYTHON
# (tools/baselines/setup_torch.sh). Usage: [KILN=build/kiln] [ROWS=regex] tools/perf/cpu_generality.sh
cd "$(dirname "$0")/../.."
kiln=${KILN:-./build/kiln}
export KILN_CACHE=${KILN_CACHE:-$(mktemp -d)}
one="--runtime clang"
two="--runtime openmp --config THREADS=2"
mm="ops/nn.toml:matmul"
lt="tests/regressions/linear_layouts.toml:linear_t"
lp="tools/perf/layouts.toml:linear_t_plain"
at="tools/perf/layouts.toml:matmul_at"
bt="tools/perf/layouts.toml:bmm_bt"
conv="ops/nn.toml:conv2d --test B=8,C=64,H=56,W=56,F=64,R=3,S=3 --attr pad=1"
attn="--test B=1,H=8,L=1024,S=1024,D=64"
rows=()
for n in 1024 2048; do
  for t in "$one" "$two"; do
    for f in $mm $lt $lp $at; do
      for vs in openblas torch; do rows+=("$f $t --test M=$n,N=$n,K=$n --vs $vs"); done
    done
    rows+=("ops/nn.toml:bmm $t --test B=4,M=$n,N=$n,K=$n --vs torch")
    rows+=("$bt $t --test B=4,M=$n,N=$n,K=$n --vs torch")
  done
done
# A decode step: one row against a 4096² weight (b read where it lies, direct row tiles).
for d in f32 f16; do
  for t in "$one" "$two"; do
    rows+=("$mm $t --dtype T=$d --test M=1,N=4096,K=4096 --vs torch")
  done
done
for d in f16 bf16; do
  for t in "$one" "$two"; do
    rows+=("$mm $t --dtype T=$d --test M=1024,N=1024,K=1024 --vs torch")
    rows+=("$lp $t --dtype T=$d --test M=1024,N=1024,K=1024 --vs torch")
  done
done
for t in "$one" "$two"; do
  rows+=("ops/quant.toml:matmul_i8 $t --dtype A=u8 --test M=1024,N=1024,K=1024 --vs torch")
  rows+=("ops/quant.toml:matmul_i8 $t --dtype A=i8 --test M=1024,N=1024,K=1024 --vs torch")
done
rows+=("ops/nn.toml:attention $two $attn --vs torch")
rows+=("ops/nn.toml:attention $two $attn --attr causal=true --vs torch")
rows+=("ops/nn.toml:causal_attention $two --test B=1,H=8,L=1024,D=64 --vs torch")
rows+=("$conv $one --vs torch")
rows+=("$conv $two --vs torch")
rows+=("ops/nn.toml:softmax $two --test N=4096 --batch 4096 --vs copy")
echo "| command | Kiln median | baseline median | ratio |"
echo "| --- | --- | --- | --- |"
for r in "${rows[@]}"; do
  [[ -n ${ROWS:-} && ! $r =~ $ROWS ]] && continue
  if [[ $r == *"--vs torch"* && -z ${KILN_PYTHON:-} ]]; then
    echo "| \`kiln bench $r\` | skipped: KILN_PYTHON is not set | | |"
    continue
  fi
  # shellcheck disable=SC2086
  out=$($kiln bench $r --json 2>&1) || { echo "| \`kiln bench $r\` | failed: ${out%%$'\n'*} | | |"; continue; }
  python3 - "$r" "$out" <<'PY'
import json, sys
r, j = sys.argv[1], json.loads(sys.argv[2])
print(f"| `kiln bench {r}` | {j['median_ms']:.4g} ms ({j['gflops']:.4g} GFLOP/s) "
      f"| {j['baseline_median_ms']:.4g} ms ({j['baseline']}) | {j['ratio']:.3g} |", flush=True)
PY
done
