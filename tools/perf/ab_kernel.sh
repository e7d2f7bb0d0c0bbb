#!/bin/bash
# A/B of the code two Kiln builds generate for one single-kernel composite: each build's
# `kiln compile` writes its source, both compile with the clang runtime's flags, and
# tools/perf/ab_kernel.c times them alternately in one process. The clang-19 binary lacks the
# libmvec variants the clang runtime adds (runtimes/clang/libmvec_variants.h: exp2f, log2f ...),
# so a kernel that calls them runs them one element at a time here: A/B such kernels with
# `kiln bench` instead.
#   tools/perf/ab_kernel.sh KILN_A KILN_B FILE:COMPOSITE "KILN OPTIONS" REPEATS BYTES SIZE...
# e.g. (stacked layer normalisation, k = 1, f32[4096, 256]; sizes in size-variable order):
#   tools/perf/stacked_layernorm.py --emit 1 --use $PWD/ops/math.toml > /tmp/ln1.toml
#   tools/perf/ab_kernel.sh OLD/kiln build/kiln /tmp/ln1.toml "--batch 4096" 400 4194304 4096 256
set -euo pipefail
a=$1 b=$2 target=$3 opts=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags="-O2 -march=native -fno-math-errno -std=c11 -fveclib=libmvec -fno-unroll-loops -mprefer-vector-width=256"
for side in a b; do
  kiln=${!side}
  # shellcheck disable=SC2086
  "$kiln" compile "$target" --runtime clang $opts -o "$dir/$side.c" >/dev/null
  symbol=$(grep -o '^void kiln_[A-Za-z0-9_]*' "$dir/$side.c" | head -1 | cut -d' ' -f2)
  clang-19 $flags -c "$dir/$side.c" "-D$symbol=kernel_$side" -o "$dir/$side.o"
done
clang-19 -O2 "$(dirname "$0")/ab_kernel.c" "$dir/a.o" "$dir/b.o" -o "$dir/ab"
"$dir/ab" "$@"
