#!/usr/bin/env bash
# tools/gpu/probes/contractions.sh [BUNDLE] [tests|bench|all]: the GPU contractions alone, on the
# GPU machine — every tensor-core regression and ops/ product against the interpreter (plain and
# CHECK=1), then GEMM layouts, batched products and the GPT-2 MLP against PyTorch, device times.
# A quick check between full tests/gpu/run.sh runs; results on stdout.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bundle=$(realpath -m "${1:-$root/.gpu/bundle}")
part=${2:-all}
kiln="$bundle/kiln"
share="$bundle/share/kiln"
export KILN_CACHE=$(mktemp -d)
rc=0
if [ "$part" != bench ]; then
  for t in tests/regressions/tensor_core_contractions.toml tests/regressions/gpt2_mlp_half.toml \
    ops/nn.toml:matmul ops/nn.toml:bmm ops/nn.toml:dense_gelu; do
    for cfg in ${CHECKS:-CHECK=0 CHECK=1}; do
      line=$("$kiln" test "$share/$t" --runtime cuda --config "$cfg" 2>&1 | tail -1)
      echo "$t $cfg: $line"
      case "$line" in *" 0 failed"* | *"all "*) ;; *) rc=1 ;; esac
    done
  done
fi
if [ "$part" != tests ]; then
  b() {
    local out
    out=$(timeout 120 "$kiln" bench "$@" --runtime cuda --vs torch --repeat 5 2>&1)
    echo "$*: $(echo "$out" | grep -E "device +(median|ratio)" | sed 's/(the runtime.s events around the kernels)//; s/ (torch device median/ (torch/' | tr '\n' ' ')"
    echo "$out" | grep -q "device +ratio" || echo "  $(echo "$out" | tail -3 | tr '\n' ' ')"
  }
  b "$share/ops/nn.toml:matmul" --dtype T=f16 --test M=4096,K=4096,N=4096
  b "$share/ops/nn.toml:matmul" --dtype T=f16 --test M=8192,K=8192,N=8192
  b "$share/ops/nn.toml:matmul" --dtype T=bf16 --test M=4096,K=4096,N=4096
  b "$share/tests/regressions/tensor_core_contractions.toml:tc_linear" --dtype T=f16 --test M=4096,K=4096,N=4096
  b "$share/tests/regressions/tensor_core_contractions.toml:tc_at_b" --dtype T=f16 --test M=4096,K=4096,N=4096
  b "$share/ops/nn.toml:bmm" --dtype T=f16 --test B=32,M=512,K=512,N=512
  b "$share/tests/regressions/gpt2_mlp_half.toml:gpt2_mlp_half" --dtype T=f16 --test S=8192,C=768,F=3072
fi
exit $rc
