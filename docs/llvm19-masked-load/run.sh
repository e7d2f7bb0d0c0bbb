#!/usr/bin/env bash
# Shows the LLVM 19 miscompile of reduced.ll: correct without the loop vectoriser, a segfault
# after `opt -passes=loop-vectorize`. Needs clang-19 and opt from LLVM 19 (Debian: clang-19,
# llvm-19). Exit 0 when the bug shows. Look for `phi i64 [ poison, %vector.body ]` feeding a
# getelementptr of llvm.masked.load in the vectorised IR (opt ... -S).
set -u
cd "$(dirname "$0")"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
opt=/usr/lib/llvm-19/bin/opt
clang-19 -c -O2 harness.c -o "$d/h.o" || exit 2
clang-19 -O2 -mavx2 -fno-unroll-loops -fno-vectorize -c reduced.ll -o "$d/a.o" || exit 2
clang-19 "$d/h.o" "$d/a.o" -o "$d/plain" || exit 2
echo "without the loop vectoriser: $("$d/plain")"
$opt -passes=loop-vectorize -mattr=+avx2 reduced.ll -o "$d/v.bc" || exit 2
clang-19 -O2 -mavx2 -fno-unroll-loops -fno-vectorize -c "$d/v.bc" -o "$d/v.o" || exit 2
clang-19 "$d/h.o" "$d/v.o" -o "$d/vec" || exit 2
"$d/vec"
rc=$?
echo "with it: exit $rc"
[ "$rc" -eq 139 ]
