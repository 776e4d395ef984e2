#!/bin/sh
# Times one ResNet-50 v1.5 training step (bf16, batch 128 per core) on the
# simulated TPUv3-like core, with and without the space-to-depth stem and
# tap packing, and prints images/s and MXU utilization (docs/systolic.md).
#
#   bench/sim/resnet50.sh [BUILD_DIR] [BATCH]
set -eu
BUILD=${1:-build}
BATCH=${2:-128}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$BUILD/bin/kiln-opt" "$ROOT/models/resnet50.mlir" --kiln-bf16 \
  --kiln-build-train-step --kiln-specialize-batch=batch="$BATCH" -o "$OUT/step.mlir"
for config in "" "space-to-depth-stem=1" "pack-taps=0" \
              "pack-taps=0 space-to-depth-stem=1"; do
  start=$(date +%s.%N)
  "$BUILD/bin/kiln-opt" "$OUT/step.mlir" "--kiln-convert-to-sa=$config" \
    -o "$OUT/sa.mlir"
  "$BUILD/bin/kiln-translate" --export-sa-program "$OUT/sa.mlir" \
    -o "$OUT/step.ksap"
  compiled=$(date +%s.%N)
  "$BUILD/bin/kiln-sim" "$OUT/step.ksap" --report=none --json="$OUT/report.json"
  done=$(date +%s.%N)
  python3 - "$OUT/report.json" "${config:-default}" "$start" "$compiled" "$done" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["step"]
conv1 = [o for o in r["ops"] if o["layer"] == "conv1" and o["kind"] == "conv2d"][0]
print("%-36s %7.1f images/s  MXU %5.1f%% of the step (%5.1f%% busy)  "
      "conv1 fwd %5.1f%% util %9d MXU cycles  compile %.1f s, simulate %.1f s" %
      (sys.argv[2], s["images_per_second"], 100 * s["mxu_utilization"],
       100 * s["mxu_busy_utilization"], 100 * conv1["mxu_utilization"],
       conv1["mxu_busy_cycles"], float(sys.argv[4]) - float(sys.argv[3]),
       float(sys.argv[5]) - float(sys.argv[4])))
PY
done
