#!/usr/bin/env bash
# Creates build/interop-venv, a virtual environment of Debian's python3 with
# the pinned packages of scripts/interop-requirements.txt from PyPI (the
# real TensorBoard, safetensors, ... that test/interop checks Kiln's files
# against). It sees Debian's site packages too, for python3-torch and
# python3-torchvision (scripts/install-deps.sh); its own pins come first. Kept
# while the requirements are unchanged; pip's cache (~/.cache/pip) makes a
# fresh clone's venv a matter of seconds after the first download. Never
# needed to build or run Kiln.
#
#   scripts/interop-venv.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
venv=$build/interop-venv
requirements=scripts/interop-requirements.txt
stamp=$venv/requirements.sha256
want=$(sha256sum <"$requirements" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements"
# pip check would judge Debian's packages too; the pins' imports are the test.
"$venv/bin/python" -c "import tensorboard.backend.event_processing.event_accumulator, safetensors.numpy, onnxruntime, tensorflow"
echo "$want" >"$stamp"
echo "interop-venv: $venv ready ($(grep -c '==' "$requirements") packages)"
