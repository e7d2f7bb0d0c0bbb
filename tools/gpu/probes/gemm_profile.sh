#!/usr/bin/env bash
# tools/gpu/probes/gemm_profile.sh [BUNDLE]: on the GPU machine, Nsight Compute figures for Kiln's
# hgemm 4096³ kernel (wgmma on sm_90a) beside the standalone probe of the same design
# (wgmma_gemm.py), to place the gap between them: duration, tensor-pipe activity, instructions
# executed, registers, and the warp stall reasons. Results on stdout and under $OUT.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=$(realpath -m "${1:-$here/../../../.gpu/bundle}")
out=${OUT:-/tmp/gemm_profile}
mkdir -p "$out"
export KILN_CACHE=$(mktemp -d)
python3 "$here/wgmma_gemm.py" >"$out/w.cu" &&
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a "$out/w.cu" -lcublas -o "$out/w" 2>/dev/null
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section InstructionStats --section Occupancy"
echo "== probe (first variant: n256, b N-major, 4 stages, one group in flight)"
ncu --clock-control none -k regex:gemm --launch-skip 1 --launch-count 1 $sections \
  "$out/w" >"$out/ncu_probe.txt" 2>&1; grep -vE "^==PROF==|^ *-+ *$|^$" "$out/ncu_probe.txt" | tail -60
echo "== kiln hgemm 4096"
KILN_CUDA_GRAPHS=0 ncu --clock-control none -k regex:kiln_matmul --launch-skip 2 --launch-count 1 $sections \
  "$bundle/kiln" bench "$bundle/share/kiln/ops/nn.toml:matmul" --runtime cuda --dtype T=f16 \
  --test M=4096,K=4096,N=4096 --repeat 3 >"$out/ncu_kiln.txt" 2>&1; grep -vE "^==PROF==|^ *-+ *$|^$" "$out/ncu_kiln.txt" | tail -60
"$bundle/kiln" compile "$bundle/share/kiln/ops/nn.toml:matmul" --runtime cuda --dtype T=f16 -o "$out/kiln_hgemm.cu" >/dev/null
