#!/usr/bin/env bash
# A Python virtual environment with PyTorch for `kiln bench --vs torch` (a baseline only: Kiln
# never needs PyTorch). Usage: tools/baselines/setup_torch.sh [VENV]   (default: .venv-torch)
# then: KILN_PYTHON=VENV/bin/python kiln bench ops/nn.toml:softmax --vs torch
set -euo pipefail
venv=${1:-.venv-torch}
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet torch numpy
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "in", "'"$venv"'")'
