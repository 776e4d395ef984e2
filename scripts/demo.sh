#!/usr/bin/env bash
# The main job: installs what Kiln needs, builds it, and runs the most complete
# user path that exists today on data that ships with Debian.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin=build/bin

echo "== ResNet-50 v1.5 (models/resnet50.mlir): size and cost"
"$bin/kiln-opt" models/resnet50.mlir --kiln-model-stats -o /dev/null

if [[ -x "$bin/kiln-data" ]]; then
  out=${KILN_DEMO_DIR:-/tmp/kiln-demo}/fashion-mnist
  echo "== Fashion-MNIST IDX -> sharded TFRecord ($out)"
  "$bin/kiln-data" idx --input /usr/share/datasets/fashion-mnist --output "$out"
fi
