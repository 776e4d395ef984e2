#!/usr/bin/env bash
# Which gradient buckets Kiln should choose on the reference cluster
# (docs/scaling.md): ResNet-50 compiled with 6.25 to 50 MiB buckets and
# with one bucket for all 97.5 MiB, each traced on one rank (batch 8, one
# thread: the step's shape, not its length, matters; the compute is scaled
# to the reference run's 1.214 s per step) and replayed at NODES.
#
#   bench/cluster/buckets.sh [NODES,...] [ring|grid]
set -euo pipefail
cd "$(dirname "$0")/../.."
nodes=${1:-256}
allreduce=${2:-grid}
out=build/bench/cluster
mkdir -p "$out/buckets"
traces=()
for mib in 6.25 12.5 25 50 400; do
  exe=$out/buckets/resnet50-b8-$mib
  bytes=$(/usr/bin/python3 -c "print(int($mib * 1048576))")
  if [[ ! -x $exe || models/resnet50.mlir -nt $exe ]]; then
    build/bin/kilnc models/resnet50.mlir --batch=8 --bucket-bytes=$bytes -o "$exe"
  fi
  if [[ ! -s $exe.jsonl || $exe -nt $exe.jsonl ]]; then
    "$exe" --synthetic --synthetic-batches 1 --steps 3 --log-every 0 \
      --threads 1 --comm-trace "$exe.jsonl"
  fi
  traces+=("$mib=$exe.jsonl")
done
/usr/bin/python3 bench/cluster/sweep.py "$out" --step-compute 1.214 --batch 48 \
  --nodes "$nodes" --allreduce "$allreduce" \
  --buckets "$(IFS=,; echo "${traces[*]}")"
