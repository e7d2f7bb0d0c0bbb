#!/usr/bin/env bash
# Cold NVRTC compile times of docs/performance.md ("Cold NVRTC compile"): for each module, the
# source `kiln compile --runtime cuda` writes, compiled RUNS times (default 5), each in a fresh
# process by tools/perf/nvrtc_probe.c with the plugin's options, for $KILN_CUDA_ARCH (default
# sm_90a); prints the median and the range of dlopen + first compile, and the median split of
# NVRTC's phases (--time: front end, NVVM, ptxas) in ms.
# Usage: [RUNS=N] [KILN=build/kiln] [OPTIONS="..."] tools/perf/nvrtc_times.sh [NAME...]
#   OPTIONS replace the options the plugin adds to its descriptor's (default --split-compile=0;
#   OPTIONS= for none); NAMEs pick modules.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-5}
kiln=${KILN:-build/kiln}
arch=${KILN_CUDA_ARCH:-sm_90a}
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 tools/perf/nvrtc_probe.c -ldl -o "$tmp/probe"
export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

declare -A targets=(
  [hgemm]="ops/nn.toml:matmul --dtype T=f16"
  [tc_linear]="tests/regressions/tensor_core_contractions.toml:tc_linear"
  [gpt2_mlp]="tests/regressions/gpt2_mlp_half.toml:gpt2_mlp_half"
  [attention_f16]="ops/nn.toml:attention --dtype T=f16"
  [attention_f32]="ops/nn.toml:attention"
  [softmax]="ops/nn.toml:softmax"
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(hgemm tc_linear gpt2_mlp attention_f16 attention_f32 softmax)
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo "-" hi}'; }
echo "load $(cut -d' ' -f1-3 /proc/loadavg); $("$kiln" runtimes 2>/dev/null | grep -o 'NVRTC [0-9.]*' | head -1); $arch; plugin options: ${OPTIONS---split-compile=0}"
for name in "${names[@]}"; do
  # shellcheck disable=SC2086
  KILN_CUDA_ARCH=$arch "$kiln" compile ${targets[$name]} --runtime cuda -o "$tmp/$name.cu" >/dev/null
  : >"$tmp/total"; : >"$tmp/fe"; : >"$tmp/nvvm"; : >"$tmp/ptxas"
  for _ in $(seq "$runs"); do
    rm -f "$tmp/time.csv"
    # shellcheck disable=SC2086
    out=$("$tmp/probe" "$tmp/$name.cu" -- "--gpu-architecture=$arch" "-I$cuda/include" \
      --std=c++17 ${OPTIONS---split-compile=0} "--time=$tmp/time.csv")
    echo "$out" | awk '/^dlopen/{d=$2} /^compile/{c=$2} END{print d+c}' >>"$tmp/total"
    grep -h 'Frontend' "$tmp/time.csv" | cut -d, -f3 >>"$tmp/fe"
    grep -h 'NVVM Optimizer' "$tmp/time.csv" | cut -d, -f3 >>"$tmp/nvvm"
    (grep -h 'PTX Translation' "$tmp/time.csv" || echo 0) | cut -d, -f3 >>"$tmp/ptxas"
  done
  printf '%-14s %6s ms (%s)  front end %s, NVVM %s, ptxas %s  [%s bytes of source]\n' "$name" \
    "$(med <"$tmp/total")" "$(range <"$tmp/total")" "$(med <"$tmp/fe")" "$(med <"$tmp/nvvm")" \
    "$(med <"$tmp/ptxas")" "$(wc -c <"$tmp/$name.cu")"
done
