#!/usr/bin/env bash
# Installs what Kiln needs on Debian 12 (when missing) and builds it into ./build.
# Usage: tools/setup.sh [BUILD_DIR [extra cmake args...]]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config
          libtomlplusplus-dev libisl-dev doctest-dev libcli11-dev nettle-dev
          llvm-19-dev libclang-19-dev libclang-cpp19-dev clang-19 libomp-19-dev
          libopenblas-dev)
# the libFuzzer build (-DKILN_FUZZ=ON, docs/testing.md) needs clang's runtime libraries too and
# builds the fuzz target alone
targets=()
case " $* " in *" -DKILN_FUZZ=ON "*) packages+=(libclang-rt-19-dev); targets=(kiln_spec_fuzzer) ;; esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir="${1:-build}"
shift || true
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$build_dir" "${targets[@]}"
