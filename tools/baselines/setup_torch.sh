#!/usr/bin/env bash
# A Python virtual environment with PyTorch for `kiln bench --vs torch` (a baseline only: Kiln
# never needs PyTorch). Usage: tools/baselines/setup_torch.sh [VENV]   (default: .venv-torch; an
# existing environment, such as build/venv, gets PyTorch added)
# then: KILN_PYTHON=VENV/bin/python kiln bench ops/nn.toml:softmax --vs torch
set -euo pipefail
venv=${1:-.venv-torch}
# An existing environment (build/venv of tools/setup.sh, README "From Python") is kept as it is:
# made again by another python3 it would lose the interpreter its packages were built for.
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv" 2>/dev/null || python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet torch numpy
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "in", "'"$venv"'")'
