#!/usr/bin/env bash
# The main job: installs what Kiln needs, builds it, compiles the Fashion-MNIST
# ResNet-20 into a training executable, converts Debian's Fashion-MNIST files
# with kiln-data and trains, printing test accuracy at the end.
#
#   KILN_DEMO_EPOCHS (default 3)  KILN_DEMO_DIR (default /tmp/kiln-demo)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin=$PWD/build/bin
dir=${KILN_DEMO_DIR:-/tmp/kiln-demo}
epochs=${KILN_DEMO_EPOCHS:-3}
mkdir -p "$dir"

echo "== ResNet-50 v1.5 (models/resnet50.mlir): size and cost"
"$bin/kiln-opt" models/resnet50.mlir --kiln-model-stats -o /dev/null

echo "== Fashion-MNIST IDX -> sharded TFRecord ($dir/data)"
[[ -f "$dir/data/validation-00003-of-00004" ]] ||
  "$bin/kiln-data" idx --input /usr/share/datasets/fashion-mnist --output "$dir/data"

# The recipe of a standard PyTorch reference for this model: batch 128, SGD
# with Nesterov momentum 0.9, weight decay 5e-4, LR 0.1 with one epoch of
# linear warmup then cosine decay; 2-pixel pad + random crop + flip. The
# lengths are in epochs: the executable turns them into steps from the data
# it trains on (468 steps of 128 per epoch here, the partial batch dropped;
# fewer per rank under mpirun), so the cosine ends with the last epoch.
echo "== kilnc: models/fmnist_resnet20.mlir -> $dir/fmnist_train"
"$bin/kilnc" models/fmnist_resnet20.mlir -o "$dir/fmnist_train" --batch=128 \
  --nesterov=true --momentum=0.9 --weight-decay=5e-4 \
  --schedule=cosine_decay --lr=0.1 --warmup-epochs=1 \
  --decay-epochs="$epochs" --print-stats

echo "== training $epochs epochs"
"$dir/fmnist_train" --data "$dir/data" --epochs "$epochs" --pad-crop 2 --flip \
  --model-dir "$dir/run" --eval --eval-every-epoch --log-every 100
