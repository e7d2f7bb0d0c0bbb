#!/bin/bash
# The matrix unit's figures of docs/performance.md ("bf16 and int8 contractions on AMX tiles"):
# bf16 and int8 1024³ products on AMX tiles against vector tiles, f32 and PyTorch, alternated
# (--vs torch) and back to back. Usage: tools/perf/matrix_unit.sh [KILN] (KILN_PYTHON: a Python
# with PyTorch, e.g. the venv of tools/baselines/setup_torch.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
K=${1:-build/kiln}
export KILN_CACHE=${KILN_CACHE:-$(mktemp -d)}
S=M=1024,K=1024,N=1024
b() {
  echo "== $*"
  "$K" bench "$@" --json | python3 -c 'import sys, json
d = json.loads(sys.stdin.read())
print("kiln %.3f ms, baseline %s ms, ratio %s" % (d["median_ms"], d.get("baseline_median_ms", "-"), d.get("ratio", "-")))'
}
for run in 1 2; do
  b ops/nn.toml:matmul --dtype T=bf16 --runtime openmp --config THREADS=2 --test $S --vs torch
  b ops/nn.toml:matmul --dtype T=bf16 --runtime openmp --config THREADS=2,MATRIX=0 --test $S --vs torch
  b ops/nn.toml:matmul --dtype T=bf16 --runtime openmp --config THREADS=2 --test $S
  b ops/nn.toml:matmul --dtype T=bf16 --runtime openmp --config THREADS=2,MATRIX=0 --test $S
  b ops/nn.toml:matmul --dtype T=bf16 --runtime clang --test $S --vs torch
  b ops/quant.toml:matmul_i8 --runtime openmp --config THREADS=2 --test $S
  b ops/nn.toml:matmul --runtime openmp --config THREADS=2 --test $S
  b ops/quant.toml:matmul_i8 --runtime clang --test $S
  b ops/nn.toml:matmul --runtime clang --test $S
  b ops/quant.toml:linear_i8 --runtime openmp --config THREADS=2 --test $S
done
"${KILN_PYTHON:-python3}" - <<'PY'
import time
import torch
torch.set_num_threads(2)
n = 1024
for dt in (torch.bfloat16, torch.float32):
    a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
    for _ in range(5):
        a @ b
    ts = []
    for _ in range(30):
        t = time.perf_counter()
        a @ b
        ts.append(time.perf_counter() - t)
    ts.sort()
    print("torch a @ b back to back, 2 threads,", dt, "%.3f ms" % (ts[15] * 1e3))
PY
