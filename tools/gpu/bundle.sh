#!/usr/bin/env bash
# tools/gpu/bundle.sh OUT_DIR: builds a Release kiln without LLVM and lays out a self-contained
# folder (at most 64 MiB) to copy to a machine that has no LLVM, isl, toml++ or Nettle:
#
#   OUT_DIR/kiln                    sh wrapper: LD_LIBRARY_PATH=OUT_DIR/lib, then bin/kiln
#   OUT_DIR/bin/kiln                stripped; isl linked in statically; RUNPATH $ORIGIN/../lib
#   OUT_DIR/lib/                    libtomlplusplus.so.3, libnettle.so.8, and libkiln's shared isl
#                                   and GMP (Debian's archives are not PIC) (found with ldd)
#   OUT_DIR/lib/kiln/               the plugins without LLVM: kiln_runtime_cc (and _cuda, _opencl if built)
#   OUT_DIR/share/kiln/             rules/, runtimes/ (descriptors of bundled plugins), ops/, baselines/
#   OUT_DIR/lib/libkiln.so.V        the public C++ API (include/kiln/kiln.h), by its soname
#   OUT_DIR/include/kiln/           its headers: python/ builds the Python extension against them
#                                   on the GPU machine (cmake -S python -DKILN_PREFIX=OUT_DIR)
#   with KILN_BUNDLE_TESTS=1 also:  bin/kiln_gpu_tests, share/kiln/tests/regressions/ and tests/data/warpgroup_shapes.toml, the GPU
#                                   conformance suite, run from share/kiln (tests/gpu/run.sh)
#
# The moved binary finds share/kiln and lib/kiln next to itself (ir/data_dirs.h; README
# "A self-contained folder"). Environment: KILN_BUNDLE_BUILD (build folder, default
# build-bundle/), KILN_BUNDLE_JOBS (ninja -j). Uses ccache when it is installed.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: tools/gpu/bundle.sh OUT_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$1
build=${KILN_BUNDLE_BUILD:-$root/build-bundle}
limit=$((64 * 1024 * 1024))

if [ -e "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -x "$out/bin/kiln" ]; then
  echo "bundle.sh: $out exists and is not an earlier bundle; give an empty or new folder" >&2
  exit 2
fi

# Release, and no LLVM: the clang and openmp plugins carry LLVM and stay out of the bundle.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# RUNPATH $ORIGIN/../lib: bin/kiln finds lib/ without the wrapper too.
# shellcheck disable=SC2016
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON -DCMAKE_DISABLE_FIND_PACKAGE_Clang=ON \
  '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' "${launcher[@]}" >/dev/null
plugins=()
# The list first: `grep -q` closing the pipe early would fail the pipeline under pipefail.
targets=$(ninja -C "$build" -t targets all)
for p in kiln_runtime_cc kiln_runtime_cuda kiln_runtime_opencl; do
  if grep -q "^$p:" <<<"$targets"; then plugins+=("$p"); fi
done
tests=()
if [ "${KILN_BUNDLE_TESTS:-0}" = 1 ]; then tests=(kiln_gpu_tests); fi
nice ninja -C "$build" ${KILN_BUNDLE_JOBS:+-j"$KILN_BUNDLE_JOBS"} kiln kiln_shared "${plugins[@]}" \
  "${tests[@]}"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/kiln" "$out/share/kiln/rules" "$out/share/kiln/runtimes" \
  "$out/share/kiln/ops" "$out/share/kiln/baselines" "$out/include/kiln"
out=$(cd "$out" && pwd -P)
strip -o "$out/bin/kiln" "$build/kiln"
soname=$(readelf -d "$build/driver/libkiln.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
strip -o "$out/lib/${soname:-libkiln.so}" "$build/driver/libkiln.so"
cp "$root"/include/kiln/*.h "$out/include/kiln/"
if [ ${#tests[@]} -gt 0 ]; then
  strip -o "$out/bin/kiln_gpu_tests" "$build/tests/kiln_gpu_tests"
  mkdir -p "$out/share/kiln/tests/regressions" "$out/share/kiln/tests/data"
  cp "$root"/tests/regressions/*.toml "$out/share/kiln/tests/regressions/"
  cp "$root"/tests/data/warpgroup_shapes.toml "$out/share/kiln/tests/data/"
fi
for p in "${plugins[@]}"; do
  strip -o "$out/lib/kiln/lib$p.so" "$build/runtimes/lib$p.so"
done

# The libraries the GPU machine lacks, by the paths the build machine's loader picks.
carried=(libtomlplusplus.so.3 libnettle.so.8)
for lib in libtomlplusplus.so.3 libnettle.so.8; do
  path=$(ldd "$build/kiln" | awk -v l="$lib" '$1 == l { print $3 }')
  if [ -z "$path" ] || [ ! -f "$path" ]; then
    echo "bundle.sh: kiln does not link $lib, or ldd cannot find it" >&2
    exit 1
  fi
  cp -L "$path" "$out/lib/$lib"
done
# libkiln links isl and GMP as shared libraries (the static archives are not position-independent).
while read -r lib path; do
  cp -L "$path" "$out/lib/$lib"
  carried+=("$lib")
done < <(ldd "$build/driver/libkiln.so" | awk '$1 ~ /^lib(isl|gmp)\.so/ { print $1, $3 }')

cp "$root"/simplifier/rules/*.toml "$out/share/kiln/rules/"
# What the bundle was built from, for tests/gpu/run.sh's results table.
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit with uncommitted changes"
fi
echo "$commit" >"$out/share/kiln/COMMIT"
cp "$root"/ops/*.toml "$out/share/kiln/ops/"
cp "$root"/tools/baselines/*.py "$out/share/kiln/baselines/"
# Only the descriptors whose plugin is in the bundle.
for d in "$root"/runtimes/*.toml; do
  plugin=$(sed -n 's/^plugin *= *"\([^"]*\)".*/\1/p' "$d")
  if [ -f "$out/lib/kiln/lib$plugin.so" ]; then cp "$d" "$out/share/kiln/runtimes/"; fi
done

cat >"$out/kiln" <<'WRAPPER'
#!/bin/sh
# kiln from a folder made by tools/gpu/bundle.sh: its own libraries first.
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$here/bin/kiln" "$@"
WRAPPER
chmod +x "$out/kiln"

# Every remaining dependency must be the C and C++ runtime, which every Linux machine has, or a
# library copied above, loaded from lib/ through the RUNPATH (no LD_LIBRARY_PATH here); isl and
# the system's toml++ and Nettle must not appear.
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|/lib/ld-linux-aarch64\.so\.1|ld-linux.*|libc\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0)$'
bad=0
for f in "$out"/bin/* "$out"/lib/libkiln.so* "$out"/lib/kiln/*.so; do
  echo "ldd ${f#"$out"/}:"
  if [[ $f == */libkiln.so* ]]; then
    # The carried isl finds its GMP through the loader's path, not libkiln's RUNPATH (which
    # covers libkiln's own needs only): the extension runs with LD_LIBRARY_PATH=OUT_DIR/lib.
    deps=$(env LD_LIBRARY_PATH="$out/lib" ldd "$f")
  else
    deps=$(env -u LD_LIBRARY_PATH ldd "$f")
  fi
  echo "$deps" | sed 's/^/  /'
  while read -r name _ path _; do
    [ -z "$name" ] && continue
    if [[ " ${carried[*]} " == *" $name "* ]]; then
      if [ "$(readlink -f "$path")" != "$out/lib/$name" ]; then
        echo "bundle.sh: ${f#"$out"/} loads $name from $path, not from lib/" >&2
        bad=1
      fi
    elif ! [[ $name =~ $allowed ]]; then
      echo "bundle.sh: ${f#"$out"/} needs $name, which the bundle does not carry" >&2
      bad=1
    fi
  done <<<"$deps"
  if echo "$deps" | grep -q "not found"; then
    echo "bundle.sh: ${f#"$out"/} has a dependency that is not found" >&2
    bad=1
  fi
done
[ "$bad" = 0 ] || exit 1

# A smoke run of the moved binary, through the wrapper and alone: every shipped composite
# type-checks, with no KILN_HOME.
env -i PATH=/usr/bin:/bin "$out/kiln" check "$out"/share/kiln/ops/*.toml >/dev/null
env -i PATH=/usr/bin:/bin "$out/bin/kiln" check "$out"/share/kiln/ops/*.toml >/dev/null

bytes=$(du -sb "$out" | cut -f1)
echo "bundle: $out, $bytes bytes ($((bytes / 1024)) KiB); plugins: ${plugins[*]}"
if [ "$bytes" -gt "$limit" ]; then
  echo "bundle.sh: the bundle is larger than 64 MiB ($limit bytes)" >&2
  exit 1
fi
