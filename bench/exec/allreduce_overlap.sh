#!/usr/bin/env bash
# The share of gradient-allreduce time hidden behind the backward pass, for 2
# ranks on this machine (one thread each): compiles a model, trains it under
# mpirun on synthetic data and prints the runtime's overlap report.
#
#   bench/exec/allreduce_overlap.sh [MODEL] [BATCH] [STEPS] [BUCKET_BYTES]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-models/fmnist_resnet20.mlir}
batch=${2:-64}
steps=${3:-40}
bucket=${4:-262144}
out=build/bench/allreduce
mkdir -p "$out"
build/bin/kilnc "$model" --batch="$batch" --bucket-bytes="$bucket" -o "$out/train"
mpirun -np 2 --oversubscribe --allow-run-as-root "$out/train" --synthetic \
  --synthetic-batches 4 --steps "$steps" --threads 1 --log-every 0 |
  grep -E "allreduce|done"
