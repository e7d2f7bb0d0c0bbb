#!/usr/bin/env bash
# Runs the libFuzzer target of the safetensors reader (docs/testing.md): seeds from
# tests/fuzz/safetensors_seed/, the dictionary tests/fuzz/safetensors.dict; new inputs go to
# BUILD/safetensors-fuzz-corpus and a crashing input to BUILD/safetensors-fuzz-crash-*.
# Usage: tests/fuzz/safetensors_fuzz.sh BUILD_DIR [libFuzzer options, e.g. -max_total_time=20]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:?usage: tests/fuzz/safetensors_fuzz.sh BUILD_DIR [libFuzzer options]}"
shift
fuzzer="$build/tests/kiln_safetensors_fuzzer"
[ -x "$fuzzer" ] || { echo "safetensors_fuzz: no $fuzzer; configure $build with -DKILN_FUZZ=ON" >&2; exit 2; }
corpus="$build/safetensors-fuzz-corpus"
mkdir -p "$corpus"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec "$fuzzer" -dict=tests/fuzz/safetensors.dict -timeout=10 -rss_limit_mb=4096 -max_len=4096 \
  -artifact_prefix="$build/safetensors-fuzz-" "$@" "$corpus" tests/fuzz/safetensors_seed
