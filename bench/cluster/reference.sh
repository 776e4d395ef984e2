#!/usr/bin/env bash
# Kiln's ResNet-50 (batch 48 per worker) on the reference cluster, simulated
# at 1 to 256 nodes (docs/scaling.md): compiles the model, records a
# one-rank --comm-trace of a few steps on this machine, and replays it with
# each worker's compute set to the reference run's own (1.214 s per step:
# 48 images at 16,400 / 0.81 / 512 images/s). The 256-node point simulates
# 512 ranks and takes the longest (tens of minutes).
#
#   bench/cluster/reference.sh [NODES,...]
set -euo pipefail
cd "$(dirname "$0")/../.."
nodes=${1:-1,2,4,8,16,32,64,128,256}
out=build/bench/cluster
exe=$out/resnet50
trace=$out/resnet50-1rank.jsonl
mkdir -p "$out"
if [[ ! -x $exe || models/resnet50.mlir -nt $exe ]]; then
  build/bin/kilnc models/resnet50.mlir --batch=48 -o "$exe"
fi
if [[ ! -s $trace || $exe -nt $trace ]]; then
  "$exe" --synthetic --synthetic-batches 1 --steps 4 --log-every 0 \
    --comm-trace "$trace"
fi
/usr/bin/python3 bench/cluster/sweep.py "$out" --trace "$trace" --step-compute 1.214 \
  --batch 48 --nodes "$nodes"
