#!/usr/bin/env bash
# Stragglers on the reference cluster (docs/scaling.md): the 16- and
# 256-node grid points of reference.sh replayed for 3 steps with each
# rank's compute in each step scaled by a factor drawn from a real run's
# step times over their median (kiln-comm-replay --jitter, --seed 1). The
# default distribution is Kiln's own ResNet-20 steps from the 2-rank
# validation run (validate.sh 2 50, which needs root); JITTER names another
# --comm-trace. The 256-node point takes ~5 CPU-minutes of simulation.
#
#   bench/cluster/stragglers.sh [JITTER] [NODES,...]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/bench/cluster
jitter=${1:-$out/validate-2-50mbit/trace-0.jsonl}
nodes=${2:-16,256}
trace=$out/resnet50-1rank.jsonl
for needed in "$jitter:bench/cluster/validate.sh 2 50 (as root)" \
              "$trace:bench/cluster/reference.sh"; do
  if [[ ! -s ${needed%%:*} ]]; then
    echo "stragglers.sh: ${needed%%:*} is missing; run ${needed#*:} first" >&2
    exit 1
  fi
done
/usr/bin/python3 bench/cluster/sweep.py "$out" --trace "$trace" \
  --step-compute 1.214 --batch 48 --allreduce grid --nodes "$nodes" \
  --jitter "$jitter" --steps 3 --seed 1
