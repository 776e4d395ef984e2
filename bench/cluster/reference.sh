#!/usr/bin/env bash
# Kiln's ResNet-50 (batch 48 per worker) on the reference cluster, simulated
# at 1 to 256 nodes (docs/scaling.md): compiles the model, records a
# one-rank --comm-trace of a few steps on this machine, and replays it with
# each worker's compute set to the reference run's own (1.214 s per step:
# 48 images at 16,400 / 0.81 / 512 images/s): Kiln's ring to 128 nodes,
# its torus allreduce on the node/leaf grid to 256, and at 256 nodes the
# same with stragglers drawn from a 13-step run's step times.
#
#   bench/cluster/reference.sh [GRID_NODES,...] [RING_NODES,...]
set -euo pipefail
cd "$(dirname "$0")/../.."
grid_nodes=${1:-1,2,4,8,16,32,64,128,256}
ring_nodes=${2:-1,2,4,8,16,32,64,128}
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
# Stragglers: Kiln's own step times, batch 8 (cheaper; the step's shape is
# what is drawn from), one thread, 13 steps.
jexe=$out/buckets/resnet50-b8-25
jitter=$out/jitter-resnet50-b8.jsonl
mkdir -p "$out/buckets"
if [[ ! -x $jexe ]]; then
  build/bin/kilnc models/resnet50.mlir --batch=8 -o "$jexe"
fi
if [[ ! -s $jitter || $jexe -nt $jitter ]]; then
  "$jexe" --synthetic --synthetic-batches 1 --steps 13 --log-every 0 \
    --threads 1 --comm-trace "$jitter"
fi
sweep() {
  /usr/bin/python3 bench/cluster/sweep.py "$out" --trace "$trace" \
    --step-compute 1.214 --batch 48 "$@"
}
sweep --allreduce ring --nodes "$ring_nodes"
sweep --allreduce grid --nodes "$grid_nodes"
sweep --allreduce grid --nodes 256 --jitter "$jitter" --steps 3
