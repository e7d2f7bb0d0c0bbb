#!/usr/bin/env bash
# tools/gpu/probes/attention_profile.sh [BUNDLE]: on the GPU machine, Nsight Compute figures for
# Kiln's fused attention kernel (f16, B=8, H=16, L=S=2048, D=64; backends/cuda_attention.cpp)
# beside PyTorch's scaled_dot_product_attention at the same sizes: duration, pipe utilisation
# (tensor, FMA, ALU, XU for exp2), instructions, registers, occupancy and the warp stall
# reasons — to place the gap to SDPA before the kernel is rebuilt from the GEMM's staging and
# warpgroup machinery (issue 29 item 2). Results on stdout and under $OUT.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=$(realpath -m "${1:-$here/../../../.gpu/bundle}")
out=${OUT:-/tmp/attention_profile}
mkdir -p "$out"
export KILN_CACHE=$(mktemp -d)
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section InstructionStats --section Occupancy --section SchedulerStats"
show() { grep -vE "^==PROF==|^ *-+ *$|^$|^    (OPT|INF|WRN)|^          " "$1" | tail -"${2:-70}"; }
echo "== kiln attention f16 8x16x2048x64"
KILN_CUDA_GRAPHS=0 ncu --clock-control none -k regex:kiln_attention --launch-skip 2 --launch-count 1 $sections \
  "$bundle/kiln" bench "$bundle/share/kiln/ops/nn.toml:attention" --runtime cuda --dtype T=f16 \
  --test B=8,H=16,L=2048,S=2048,D=64 --repeat 3 >"$out/ncu_kiln_attention.txt" 2>&1
show "$out/ncu_kiln_attention.txt"
echo "== torch sdpa f16 8x16x2048x64"
cat >"$out/sdpa.py" <<'PY'
import torch, torch.nn.functional as F
q, k, v = (torch.randn(8, 16, 2048, 64, device="cuda", dtype=torch.float16) for _ in range(3))
for _ in range(4):
    F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
ncu --clock-control none -k regex:"flash|fmha|attention|sdpa|cudnn" --launch-skip 2 --launch-count 1 \
  $sections python3 "$out/sdpa.py" \
  >"$out/ncu_sdpa.txt" 2>&1
show "$out/ncu_sdpa.txt"
"$bundle/kiln" compile "$bundle/share/kiln/ops/nn.toml:attention" --runtime cuda --dtype T=f16 \
  -o "$out/kiln_attention.cu" >/dev/null
