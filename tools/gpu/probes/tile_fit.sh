#!/usr/bin/env bash
# tools/gpu/probes/tile_fit.sh [BUNDLE]: the data scheduler/tile_choice.h's constants are fitted
# to, on the GPU machine — each warpgroup tile shape pinned (--config GPU_WGMMA=RxLxS) on a set of
# f16 products and products with an epilogue, device medians; then GPU_WGMMA's default list (the
# shape each launch takes) against cuBLAS through PyTorch. One line per run on stdout:
#   problem  shape  device-ms  [tiles taken]  [torch device-ms  device ratio]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bundle=$(realpath -m "${1:-$root/.gpu/bundle}")
kiln="$bundle/kiln"
share="$bundle/share/kiln"
export KILN_CACHE=$(mktemp -d)
mm="$share/ops/nn.toml:matmul"
tc="$share/tests/regressions/tensor_core_contractions.toml:tc_linear"
problems=(
  "mm4096 $mm M=4096,K=4096,N=4096"
  "mm2048 $mm M=2048,K=2048,N=2048"
  "mm1024 $mm M=1024,K=1024,N=1024"
  "mm512 $mm M=512,K=512,N=512"
  "mm8192x768x768 $mm M=8192,K=768,N=768"
  "mm8192x3072x768 $mm M=8192,K=3072,N=768"
  "mm8192x768x3072 $mm M=8192,K=768,N=3072"
  "mm1536x1024x2816 $mm M=1536,K=1024,N=2816"
  "mm128x4096x4096 $mm M=128,K=4096,N=4096"
  "bmm32x512 $share/ops/nn.toml:bmm B=32,M=512,K=512,N=512"
  "lin4096 $tc M=4096,K=4096,N=4096"
  "lin8192x768x3072 $tc M=8192,K=768,N=3072"
  "lin1024x768x3072 $tc M=1024,K=768,N=3072"
)
line() {  # NAME SHAPE-LABEL kiln-bench-arguments...
  local name=$1 label=$2
  shift 2
  local out
  out=$(timeout 120 "$kiln" bench "$@" --runtime cuda --dtype T=f16 2>&1)
  local dev tiles base ratio
  dev=$(echo "$out" | sed -n 's/^ *device *median *\([0-9.e-]*\) ms.*/\1/p' | head -1)
  tiles=$(echo "$out" | sed -n 's/^ *tiles *\([^ ]*\).*/\1/p' | paste -sd, -)
  ratio=$(echo "$out" | sed -n 's/^ *device *ratio *\([0-9.e-]*\).*/\1/p' | head -1)
  echo "$name $label ${dev:-FAILED} ${tiles:--} ${ratio:--}"
  [ -n "$dev" ] || echo "  $(echo "$out" | tail -2 | tr '\n' ' ')"
}
for shape in ${SHAPES:-128x256x4 128x256x3 128x128x4 128x128x3 256x128x4 128x64x4 128x64x8}; do
  for p in "${problems[@]}"; do
    set -- $p
    line "$1" "$shape" "$2" --test "$3" --config GPU_WGMMA=$shape --repeat 3
  done
done
for p in "${problems[@]}"; do
  set -- $p
  line "$1" default "$2" --test "$3" --vs torch --repeat 5
done
