#!/usr/bin/env bash
# Kiln's ResNet-50 on a simulated TPUv3-512 pod (docs/scaling.md, "TPUv3-512
# pod"): compiles the bf16 LARS training step for the systolic target at the
# MLPerf recipe's per-core batch (32,768 over 512 cores), times one core with
# kiln-sim, replays that step on all 512 cores of a 16x16 torus of two-core
# chips under SMPI (kiln-comm-replay --program, the torus allreduce), and
# works out the time to train next to the reference run's 3.51 minutes.
#
#   bench/cluster/tpu-pod.sh [SHAPE [CORES]]     (default 16x16 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
shape=${1:-16x16}
cores=${2:-2}
out=build/bench/cluster/tpu-pod
global_batch=32768
chips=$(( ${shape//x/*} ))
ranks=$(( chips * cores ))
batch=$(( global_batch / ranks ))
(( batch * ranks == global_batch )) || {
  echo "tpu-pod.sh: $ranks cores do not divide the global batch $global_batch" >&2
  exit 2
}
mkdir -p "$out"
ksap=$out/resnet50-b$batch.ksap
if [[ ! -s $ksap || models/resnet50.mlir -nt $ksap || build/bin/kilnc -nt $ksap ]]; then
  build/bin/kilnc models/resnet50.mlir --target=systolic --precision=bf16 \
    --batch="$batch" --optimizer=lars --emit=ksap -o "$ksap"
fi
build/bin/kiln-sim "$ksap" --report=none --json="$out/core.json"
python3 runtime/smpi/torus.py platform "$out/pod" --shape "$shape" \
  --cores "$cores"
# The links move a bucket while the cores compute: a progress call every
# 100 us of compute stands for that (docs/scaling.md: 10 us gives the same
# step; what matters is that a ring started mid-backward has finished by
# its wait).
python3 runtime/smpi/torus.py replay "$out/pod" --program "$ksap" \
  --steps 1 --batch "$batch" --progress-every 1e-4 | tee "$out/replay.json"
python3 bench/cluster/tpu_pod.py --replay "$out/replay.json" \
  --report "$out/core.json" --cores "$ranks" --global-batch "$global_batch" \
  --json "$out/summary.json"
