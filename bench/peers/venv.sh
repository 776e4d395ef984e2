#!/usr/bin/env bash
# Creates build/peers-venv: Debian's python3 with the pinned packages of
# bench/peers/requirements.txt from PyPI (PyTorch 2, torchvision, Keras 3,
# TensorFlow, JAX), apart from Debian's site packages so that Debian's torch
# 1.13 cannot shadow PyPI's. Kept while the requirements are unchanged (a
# stamp of their hash); pip's cache makes a rebuild a matter of a minute.
# Only bench/peers/run.sh needs it: never the README's set-up or the tests.
#
#   bench/peers/venv.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
venv=$build/peers-venv
requirements=bench/peers/requirements.txt
stamp=$venv/requirements.sha256
want=$(sha256sum <"$requirements" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements"
# The check that matters: each framework imports and takes a training step.
"$venv/bin/python" - <<'PY'
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import torch
model = torch.nn.Conv2d(3, 8, 3)
model(torch.randn(2, 3, 8, 8)).sum().backward()
assert model.weight.grad is not None and not torch.cuda.is_available()
import torchvision, tensorflow, jax, keras
print(f"peers-venv: torch {torch.__version__}, torchvision {torchvision.__version__}, "
      f"tensorflow {tensorflow.__version__}, jax {jax.__version__}, keras {keras.__version__}")
PY
echo "$want" >"$stamp"
