#!/bin/sh
# Times one ResNet-50 v1.5 training step (bf16, batch 128 per core) on the
# simulated TPUv3-like core, fused (the default) and unfused, with and
# without the space-to-depth stem and tap packing, and prints images/s, MXU
# utilization, HBM traffic and the on-chip peak (docs/systolic.md).
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
for config in "" "fuse=0" "space-to-depth-stem=1" "pack-taps=0" \
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
print("%-36s %7.1f images/s  MXU %5.1f%% of the step (%5.1f%% busy, busy "
      "%4.1f%% of the step)  HBM %5.1f GB read %5.1f GB written  on-chip "
      "peak %4.1f MiB  conv1 fwd %5.1f%% util %9d MXU cycles  compile %.1f s, "
      "simulate %.1f s" %
      (sys.argv[2], s["images_per_second"], 100 * s["mxu_utilization"],
       100 * s["mxu_busy_utilization"],
       100 * s["mxu_utilization"] / s["mxu_busy_utilization"],
       s["hbm_bytes_read"] / 1e9, s["hbm_bytes_written"] / 1e9,
       s["onchip_peak_bytes"] / 2**20, 100 * conv1["mxu_utilization"],
       conv1["mxu_busy_cycles"], float(sys.argv[4]) - float(sys.argv[3]),
       float(sys.argv[5]) - float(sys.argv[4])))
# Time (share of the sum of op spans) and HBM bytes by op kind.
kinds = {}
for o in r["ops"]:
    k = kinds.setdefault(o["kind"], [0, 0])
    k[0] += o["span_cycles"]
    k[1] += o["hbm_bytes"]
total = sum(v[0] for v in kinds.values())
print("    " + ", ".join("%s %.1f%% %.1f GB" % (k, 100 * v[0] / total, v[1] / 1e9)
                         for k, v in sorted(kinds.items(),
                                            key=lambda kv: -kv[1][0])
                         if v[0] > 0.005 * total))
PY
done
