#!/usr/bin/env bash
# Kiln's executable itself on a simulated cluster against its skeleton
# (docs/scaling.md "Real computation under SMPI"): ResNet-20 (batch 64 per
# rank, 4 buckets, as validate.sh) linked by `kilnc --smpi` trains on RANKS
# simulated ranks of the star platform (MBIT links, LATENCY per link, 8 us
# by default: validate.sh's measured path), its real computation timed by
# SMPI and its --comm-trace in simulated time; kiln-comm-replay then replays
# those traces on the same platform, and the script prints the simulated
# run's step time and exposed communication beside the replay's. The same
# run under mpirun (shared memory) must leave the same checkpoint, byte for
# byte.
#
#   bench/cluster/real-compute.sh RANKS [MBIT] [STEPS]     e.g. 2 50 14
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:?usage: real-compute.sh RANKS [MBIT] [STEPS]}
mbit=${2:-50}
steps=${3:-14}
latency=${LATENCY:-8us}
bin=build/bench/cluster/real-compute
out=$bin-$ranks-${mbit}mbit
mkdir -p "$bin"
for kind in mpirun smpi; do
  exe=$bin/resnet20-$kind
  if [[ ! -x $exe || models/fmnist_resnet20.mlir -nt $exe ||
        build/bin/kilnc -nt $exe ]]; then
    flags=()
    [[ $kind == mpirun ]] || flags=(--smpi)
    build/bin/kilnc models/fmnist_resnet20.mlir --batch=64 \
      --bucket-bytes=262144 "${flags[@]}" -o "$exe"
  fi
done
rm -rf "$out"
mkdir -p "$out/smpi" "$out/mpirun"
python3 runtime/smpi/cluster.py platform star "$out" --hosts "$ranks" \
  --bandwidth "${mbit}Mbps" --latency "$latency" >/dev/null
args=(--synthetic --synthetic-batches 2 --steps "$steps" --log-every 0
      --allreduce ring)
echo "simulated ($ranks ranks, ${mbit} Mbit/s links, $latency):"
/usr/bin/time -f "simulation: %e s wall, %U s user, %S s system" \
  python3 runtime/smpi/cluster.py run "$out" --ranks "$ranks" \
  "$bin/resnet20-smpi" "${args[@]}" --model-dir "$out/smpi" \
  --comm-trace "$out/smpi/trace-{rank}.jsonl" 2>&1 |
  grep -E "done|allreduce|simulation"
mpirun -np "$ranks" --oversubscribe --allow-run-as-root --bind-to none \
  "$bin/resnet20-mpirun" "${args[@]}" --threads 1 --model-dir "$out/mpirun" \
  >/dev/null
ckpt=$(printf 'ckpt-%010d.safetensors' "$steps")
if cmp -s "$out/smpi/$ckpt" "$out/mpirun/$ckpt"; then
  echo "checkpoint after $steps steps: identical to mpirun -np $ranks"
else
  echo "checkpoint after $steps steps: DIFFERS from mpirun -np $ranks"
  exit 1
fi

traces=()
for ((i = 0; i < ranks; i++)); do traces+=(--trace "$out/smpi/trace-$i.jsonl"); done
for mode in network progress-cpu; do
  extra=()
  [[ $mode == network ]] || extra=(--progress-cpu)
  python3 runtime/smpi/cluster.py replay "$out" --ranks "$ranks" \
    "${traces[@]}" "${extra[@]}" > "$out/replay-$mode.json"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
net = json.load(open(f"{out}/replay-network.json"))
cpu = json.load(open(f"{out}/replay-progress-cpu.json"))
print(f"{net['ranks']} ranks, {net['steps']} steps after the first, "
      f"{net['bucket_bytes'] / 2**20:.2f} MiB of gradients per step; "
      f"compute {net['compute_seconds'] * 1e3:.1f} ms per step")
def line(what, real, sim):
    print(f"  {what:<22} executable {real * 1e3:7.1f} ms   replay "
          f"{sim * 1e3:7.1f} ms  ({(sim - real) / real * 100:+.1f}%)")
for name, p in (("replay, network only", net),
                ("replay + progress calls' CPU", cpu)):
    print(name + ":")
    line("step", p["traced_step_seconds"], p["step_seconds"])
    line("exposed communication", p["traced_exposed_seconds"],
         p["exposed_seconds"])
PY
