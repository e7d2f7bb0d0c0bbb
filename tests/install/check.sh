#!/usr/bin/env bash
# tests/install/check.sh [BUILD_DIR]: Kiln as a user gets it from `cmake --install`, with the
# source tree moved away (docs/install.md; .ci/run runs it after the suite).
#
#  1. installs BUILD_DIR (default build/) into a temporary prefix;
#  2. moves the source tree aside (it comes back on exit, also on failure or Ctrl-C), so that
#     nothing can read it;
#  3. builds tests/install/consumer with find_package(Kiln) and with pkg-config, and runs it on a
#     spec of its own that uses the installed standard library, on the shipped clang runtime and
#     on a runtime registered by name through KILN_RUNTIME_PATH;
#  4. runs the installed `kiln` from a folder of its own: run with --input/--save/--no-check,
#     test, runtimes, rules check, cache ls, KILN_DEBUG, KILN_DUMP, KILN_CACHE=off, show
#     --format dot, run --trace and an error with a suggestion; then the same prefix moved;
#  5. configures a build with KILN_BUILD_TESTS=OFF and doctest hidden.
# Prints one line per check; exits 1 on the first failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
build=$(cd "${1:-$root/build}" && pwd -P)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install-XXXXXX")
away="$root.moved-by-install-check.$$"
restore() {
  if [ -d "$away" ] && [ ! -e "$root" ]; then mv "$away" "$root"; fi
  rm -rf "$work"
}
trap restore EXIT
trap 'exit 130' INT TERM

step() { echo "install check: $*"; }
fail() {
  echo "install check: FAILED: $*" >&2
  exit 1
}
# expect TEXT PATTERN WHAT: TEXT contains the fixed string PATTERN.
expect() { grep -qF -- "$2" <<<"$1" || fail "$3: no '$2' in:"$'\n'"$1"; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cp -r "$root/tests/install/consumer" "$work/consumer"
mkdir -p "$work/user" "$work/runtimes"
cp "$work/consumer/rows.toml" "$work/user/rows.toml"
# A runtime registered by name from outside the install: the shipped cc plugin, other flags.
cat >"$work/runtimes/cc_o1.toml" <<'TOML'
name = "cc_o1"
backend = "c"
plugin = "kiln_runtime_cc"
flags = ["-O1", "-std=c11"]
TOML
step "installed into $prefix"

cd "$work"
mv "$root" "$away"
step "source tree moved to $away"

# Only what a user has: no KILN_HOME, no plugin path, a cache of its own.
unset KILN_HOME KILN_PLUGIN_PATH KILN_RUNTIME_PATH KILN_DEBUG KILN_DUMP
export KILN_CACHE=$work/cache

cmake -S "$work/consumer" -B "$work/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  >/dev/null
ninja -C "$work/consumer/build" >/dev/null
out=$("$work/consumer/build/consumer" user/rows.toml hot_softmax clang)
expect "$out" "hot_softmax on clang: 5 rows, each sums to 1" "find_package(Kiln) program"
out=$(KILN_RUNTIME_PATH=$work/runtimes "$work/consumer/build/consumer" user/rows.toml hot_softmax cc_o1)
expect "$out" "hot_softmax on cc_o1: 5 rows, each sums to 1" "a runtime from KILN_RUNTIME_PATH"
step "find_package(Kiln): built and ran on clang and on cc_o1 (KILN_RUNTIME_PATH)"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
c++ -std=c++17 -o "$work/consumer_pc" "$work/consumer/main.cpp" $(pkg-config --cflags --libs kiln) \
  -Wl,-rpath,"$(pkg-config --variable=libdir kiln)"
out=$(KILN_DEBUG=1 "$work/consumer_pc" user/rows.toml hot_softmax clang 2>&1)
expect "$out" "hot_softmax on clang: 5 rows, each sums to 1" "pkg-config program"
expect "$out" "cache hit" "KILN_DEBUG=1 in an API program"
step "pkg-config kiln: built and ran; KILN_DEBUG=1 printed the build line"

kiln=$prefix/bin/kiln
out=$("$kiln" run user/rows.toml:hot_softmax --runtime clang --save saved)
expect "$out" "PASS" "kiln run on a user spec"
[ -f saved/y.npy ] || fail "kiln run --save wrote no saved/y.npy"
out=$("$kiln" run user/rows.toml:hot_softmax --runtime clang --input x=saved/y.npy --no-check)
expect "$out" "in  x : f32[" "kiln run --input"
out=$("$kiln" test user/rows.toml --runtime cc)
expect "$out" "passed, 0 failed" "kiln test"
out=$(KILN_RUNTIME_PATH=$work/runtimes "$kiln" runtimes)
expect "$out" "runtimes in $work/runtimes, $prefix/share/kiln/runtimes:" "kiln runtimes"
expect "$out" "$prefix/lib/kiln/libkiln_runtime_cc.so" "kiln runtimes: the installed plugin"
expect "$out" "cc_o1" "kiln runtimes: a runtime from KILN_RUNTIME_PATH"
out=$("$kiln" rules check)
expect "$out" "share/kiln/ops/nn.toml:softmax" "kiln rules check: the installed composites"
out=$("$kiln" cache ls)
expect "$out" "hot_softmax" "kiln cache ls"
out=$(KILN_DUMP=$work/dump KILN_CACHE=off "$kiln" run std:nn.toml:softmax --runtime cc --debug 1 2>&1) ||
  fail "kiln run std:nn.toml:softmax: $out"
expect "$out" "cache off" "KILN_CACHE=off"
ls "$work"/dump/* >/dev/null 2>&1 || fail "KILN_DUMP wrote nothing into $work/dump"
out=$("$kiln" show user/rows.toml:hot_softmax --stage kernels --format dot)
expect "$out" "cluster_" "kiln show --format dot"
"$kiln" run user/rows.toml:hot_softmax --runtime clang --trace trace.json >/dev/null
expect "$(cat trace.json)" '"traceEvents"' "kiln run --trace"
set +e
out=$("$kiln" run user/rows.toml:hot_sofmax 2>&1)
code=$?
set -e
[ "$code" -ne 0 ] || fail "an unknown composite exited 0"
expect "$out" "did you mean hot_softmax?" "a suggestion for an unknown composite"
# A new runtime as a plugin author starts one: scaffolded, built against the install, checked.
"$kiln" new-runtime mine --from cc --dir "$work" >/dev/null
cmake -S "$work/mine" -B "$work/mine/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
ninja -C "$work/mine/build" >/dev/null
out=$("$kiln" test-runtime "$work/mine/mine.toml" --ops std:nn.toml:softmax std:math.toml:add \
  --report "$work/mine.md")
expect "$out" "passed, 0 failed, 0 in programs that did not compile" "kiln test-runtime"
expect "$(cat "$work/mine.md")" "| nn.toml:softmax | pass (6) |" "the test-runtime report"
step "kiln new-runtime --from cc: built with find_package(Kiln); test-runtime passed"
step "kiln from $prefix/bin: run --save/--input/--no-check, test, runtimes, rules check, cache ls,"
step "  KILN_DUMP, KILN_CACHE=off, show --format dot, run --trace, did-you-mean"

moved=$work/elsewhere
mv "$prefix" "$moved"
out=$("$moved/bin/kiln" run user/rows.toml:hot_softmax --runtime clang --test N=5)
expect "$out" "PASS" "kiln from a moved prefix"
export PKG_CONFIG_PATH=$moved/lib/pkgconfig
expect "$(pkg-config --variable=libdir kiln)" "$moved/lib" "kiln.pc of a moved prefix"
step "the prefix moved to $moved still runs"

mv "$away" "$root"
step "source tree back at $root"
notests=$work/notests
cmake -S "$root" -B "$notests" -G Ninja --no-warn-unused-cli -DKILN_BUILD_TESTS=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON \
  >/dev/null
if ninja -C "$notests" -t targets all | grep -q "kiln_unit_tests"; then
  fail "KILN_BUILD_TESTS=OFF still defines the test suites"
fi
step "KILN_BUILD_TESTS=OFF configures without doctest"
echo "install check: ok"
