#!/usr/bin/env bash
# Runs the libFuzzer target of the spec front end (docs/testing.md). The seed corpus is every
# .toml of ops/ and tests/ plus tests/fuzz/corpus/; new inputs go to BUILD/spec-fuzz-corpus and
# a crashing input to BUILD/spec-fuzz-crash-*. Extra arguments go to libFuzzer.
# Usage: tests/fuzz/spec_fuzz.sh BUILD_DIR [libFuzzer options, e.g. -runs=200000 -max_total_time=60]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:?usage: tests/fuzz/spec_fuzz.sh BUILD_DIR [libFuzzer options]}"
shift
fuzzer="$build/tests/kiln_spec_fuzzer"
[ -x "$fuzzer" ] || { echo "spec_fuzz: no $fuzzer; configure $build with -DKILN_FUZZ=ON" >&2; exit 2; }
seeds="$build/spec-fuzz-seeds"
corpus="$build/spec-fuzz-corpus"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus"
# seeds named by their path, so that two files of the same name do not collide
find ops tests -name '*.toml' -not -path 'tests/fuzz/failures/*' | while read -r f; do
  cp "$f" "$seeds/$(echo "$f" | tr '/' '_')"
done
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec "$fuzzer" -dict=tests/fuzz/spec.dict -timeout=10 -rss_limit_mb=4096 -max_len=8192 \
  -artifact_prefix="$build/spec-fuzz-" "$@" "$corpus" "$seeds"
