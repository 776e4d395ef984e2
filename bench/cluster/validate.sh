#!/usr/bin/env bash
# The SMPI prediction against a real run (docs/scaling.md "Validation"):
# N ranks of Kiln's executable train over TCP between network namespaces
# joined by shaped veth links (veth.sh), each rank recording --comm-trace;
# kiln-comm-replay then replays those traces on the star platform with the
# same bandwidth and the measured latency, and the script prints the real
# and the simulated step time and exposed communication. Needs root.
#
#   bench/cluster/validate.sh RANKS [MBIT] [STEPS]     e.g. validate.sh 4 50
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:?usage: validate.sh RANKS [MBIT] [STEPS]}
mbit=${2:-50}
steps=${3:-14}
out=build/bench/cluster/validate-$ranks-${mbit}mbit
exe=build/bench/cluster/resnet20
mkdir -p "$out"
if [[ ! -x $exe || models/fmnist_resnet20.mlir -nt $exe ]]; then
  build/bin/kilnc models/fmnist_resnet20.mlir --batch=64 \
    --bucket-bytes=262144 -o "$exe"
fi
trap 'bench/cluster/veth.sh down "$ranks"' EXIT
bench/cluster/veth.sh up "$ranks" "${mbit}mbit"

# The path's own latency (no netem on this kernel): a round trip crosses
# four shaped links (up and down, both ways).
ip netns exec kiln-rank1 python3 bench/cluster/latency.py server 10.77.0.2 &
rtt=$(ip netns exec kiln-rank0 python3 bench/cluster/latency.py client 10.77.0.2)
wait
link_us=$(python3 -c "print(f'{$rtt / 4:.1f}')")

# Open MPI: TCP only, over the namespaces' links; PMIx reaches mpirun over
# the bridge. Chunks go out eagerly, whole: a rendezvous would wait for the
# receiver's next MPI call, a handshake SMPI does not model (see
# docs/scaling.md).
export PMIX_MCA_ptl_tcp_if_include=kiln-br0
export PMIX_MCA_ptl_tcp_remote_connections=1
args=(--synthetic --synthetic-batches 2 --steps "$steps" --threads 1
      --log-every 0 --allreduce ring --comm-trace "$out/trace-{rank}.jsonl")
apps=()
for ((i = 0; i < ranks; i++)); do
  ((i == 0)) || apps+=(:)
  apps+=(-np 1 ip netns exec "kiln-rank$i" "$exe" "${args[@]}")
done
mpirun --allow-run-as-root --oversubscribe --bind-to none \
  --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
  --mca btl_tcp_eager_limit 1048576 --mca btl_tcp_rndv_eager_limit 1048576 \
  --mca btl_tcp_max_send_size 1048576 \
  "${apps[@]}" 2>&1 | grep -E "done|allreduce"

python3 runtime/smpi/cluster.py platform star "$out" --hosts "$ranks" \
  --bandwidth "${mbit}Mbps" --latency "${link_us}us" >/dev/null
traces=()
for ((i = 0; i < ranks; i++)); do traces+=(--trace "$out/trace-$i.jsonl"); done
for mode in network progress-cpu; do
  extra=()
  [[ $mode == network ]] || extra=(--progress-cpu)
  python3 runtime/smpi/cluster.py replay "$out" --ranks "$ranks" \
    "${traces[@]}" "${extra[@]}" > "$out/prediction-$mode.json"
done
python3 - "$out" "$rtt" "$mbit" <<'PY'
import json, sys
out = sys.argv[1]
net = json.load(open(f"{out}/prediction-network.json"))
cpu = json.load(open(f"{out}/prediction-progress-cpu.json"))
def line(what, real, sim):
    print(f"  {what:<22} real {real * 1e3:7.1f} ms   SMPI {sim * 1e3:7.1f} ms"
          f"  ({(sim - real) / real * 100:+.1f}%)")
print(f"{net['ranks']} ranks, {sys.argv[3]} Mbit/s links, round trip "
      f"{float(sys.argv[2]):.0f} us, {net['steps']} steps, "
      f"{net['bucket_bytes'] / 2**20:.2f} MiB of gradients per step")
for name, p in (("network only", net),
                ("+ progress calls' CPU", cpu)):
    print(name + ":")
    line("step", p["traced_step_seconds"], p["step_seconds"])
    line("exposed communication", p["traced_exposed_seconds"],
         p["exposed_seconds"])
PY
