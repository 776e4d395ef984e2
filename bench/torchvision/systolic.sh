#!/usr/bin/env bash
# torchvision's models of issue 28 on the simulated systolic target
# (docs/systolic.md "The ops of newer CNNs"): kilnc's bf16 training step at
# batch 8 on 224x224 images, torchvision's own architectures (1000 classes;
# export_torchvision.py --published, TRAINING except efficientnet_b0's
# PRESERVE), planned by --kiln-convert-to-sa without its batch-norm fusion
# (fuse=0, the schedule before it) and with it (kilnc's default), one timed
# step of each in kiln-sim, one simulation at a time. systolic_report.py
# prints the table: images/s, MXU utilization and HBM bytes, before -> after.
#
#   bench/torchvision/systolic.sh [MODELS] [BATCH]
#     MODELS  comma-separated (default: the ten of issue 28)
#     KILN_BIN=DIR  the tools to use (default build/bin), e.g. a copy taken
#                   at one commit while the tree changes under a long run
#   results in build/bench/torchvision/systolic/ (MODEL_fuse=0.json, ...)
set -euo pipefail
cd "$(dirname "$0")/../.."
models=${1:-resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,densenet121,vgg11_bn,squeezenet1_1,shufflenet_v2_x1_0,regnet_y_400mf}
batch=${2:-8}
bin=${KILN_BIN:-build/bin}
out=build/bench/torchvision/systolic
mkdir -p "$out"
echo "$(git rev-parse --short HEAD)$(git diff --quiet -- systolic passes compiler || echo ' with local changes')" \
  >"$out/commit"

for model in ${models//,/ }; do
  mode=train
  [[ $model == efficientnet_b0 ]] && mode=preserve
  # run.sh's export of the same model, when it has written one.
  onnx=build/bench/torchvision/$model.onnx
  [[ -f $onnx ]] || /usr/bin/python3 test/onnx/torch/export_torchvision.py "$model" $mode \
    "$onnx" --classes 1000 --image-size 224 --published
  # kilnc's training step for the systolic target, then its back half
  # (compileSystolic) by hand, which is where the fusion option lives.
  step=$out/${model}_train.mlir
  $bin/kilnc "$onnx" --target=systolic --precision=bf16 --batch="$batch" --emit=train \
    -o "$step" 2>"$out/${model}.log"
  for config in fuse=0 fuse=1; do
    base=$out/${model}_$config
    if $bin/kiln-opt "$step" --kiln-specialize-batch=batch="$batch" \
          "--kiln-convert-to-sa=$config" -o "$base.mlir" 2>>"$out/${model}.log" &&
        $bin/kiln-translate --export-sa-program "$base.mlir" -o "$base.ksap" \
          2>>"$out/${model}.log" &&
        $bin/kiln-sim "$base.ksap" --report=none --json="$base.json" 2>>"$out/${model}.log"; then
      echo "$model $config: done"
    else
      echo "$model $config: failed, see $out/${model}.log"
    fi
    rm -f "$base.mlir" "$base.ksap"
  done
  rm -f "$step"
done
/usr/bin/python3 bench/torchvision/systolic_report.py "$out" "${models//,/ }"
