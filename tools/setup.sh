#!/usr/bin/env bash
# Installs what Kiln needs on Debian 12 (when missing) and builds it into ./build.
# Usage: tools/setup.sh [BUILD_DIR [extra cmake args...]]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config
          libtomlplusplus-dev libisl-dev doctest-dev libcli11-dev nettle-dev nlohmann-json3-dev
          llvm-19-dev libclang-19-dev libclang-cpp19-dev clang-19 libomp-19-dev
          libopenblas-dev
          ocl-icd-libopencl1 pocl-opencl-icd)
# (the opencl runtime dlopens the ICD loader, libOpenCL.so.1, and tests on PoCL's CPU device)
# the libFuzzer build (-DKILN_FUZZ=ON, docs/testing.md) needs clang's runtime libraries too and
# builds the fuzz target alone
targets=()
case " $* " in *" -DKILN_FUZZ=ON "*) packages+=(libclang-rt-19-dev); targets=(kiln_spec_fuzzer kiln_safetensors_fuzzer) ;; esac
# The Python package (python/, docs/python.md) is built with the default build: a virtual
# environment BUILD/venv from Debian's Python with nanobind, scikit-build-core, NumPy and pytest
# from PyPI. Not for the sanitizer and fuzzing builds, nor with -DKILN_PYTHON=OFF.
python=1
case " $* " in *" -DKILN_SANITIZE=ON "* | *" -DKILN_FUZZ=ON "* | *" -DKILN_PYTHON=OFF "*) python=0 ;; esac
[ $python -eq 0 ] || packages+=(python3-venv python3-dev)
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
python_args=()
if [ $python -eq 1 ]; then
  venv="$build_dir/venv"
  if ! "$venv/bin/python" -c "import nanobind, numpy, pytest, scikit_build_core" 2>/dev/null; then
    echo "setup: making $venv (nanobind, scikit-build-core, numpy, pytest from PyPI)"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "nanobind==3.1.0" \
      "scikit-build-core>=0.10" numpy pytest ||
      { echo "setup: pip failed; for a build without the Python package pass -DKILN_PYTHON=OFF" >&2; exit 1; }
  fi
  python_args=(-DPython_EXECUTABLE="$(cd "$venv" && pwd)/bin/python")
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python_args[@]}" "$@" >/dev/null
ninja -C "$build_dir" "${targets[@]}"
