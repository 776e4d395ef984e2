#!/usr/bin/env bash
# A shaped network on this machine for the SMPI validation runs: N network
# namespaces kiln-rank<i>, each with a veth pair to one bridge (kiln-br0) in
# the root namespace; both ends of each pair carry a token bucket (tbf) of
# the given rate, so that a message from rank i to rank j crosses i's link
# up and j's link down, as on the star platform of runtime/smpi/cluster.py.
# This machine's kernel has no netem, so the latency is the path's own,
# measured by bench/cluster/validate.sh. Segmentation offload is off
# (gso_max_segs 1) so that the rate counts every frame's headers. The
# bridge's address lets the ranks reach mpirun's PMIx server in the root
# namespace.
#
#   bench/cluster/veth.sh up N RATE     e.g. up 4 50mbit
#   bench/cluster/veth.sh down N
set -euo pipefail
action=${1:?usage: veth.sh up N RATE | down N}
n=${2:?number of ranks}
bridge=kiln-br0
if [[ $action == down ]]; then
  for ((i = 0; i < n; i++)); do
    ip netns del "kiln-rank$i" 2>/dev/null || true
    ip link del "kiln-v$i" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  exit 0
fi
[[ $action == up ]] || { echo "veth.sh: unknown action '$action'" >&2; exit 2; }
rate=${3:?rate, e.g. 50mbit}
# A queue of 2 s at the rate: TCP never loses a frame to it. A burst of a
# few frames: the rate holds over milliseconds.
shape="tbf rate $rate burst 8kb latency 2s"
"$0" down "$n"
ip link add "$bridge" type bridge
ip addr add 10.77.0.254/24 dev "$bridge"
ip link set "$bridge" up
for ((i = 0; i < n; i++)); do
  ns=kiln-rank$i
  ip netns add "$ns"
  ip link add "kiln-v$i" type veth peer name kiln0 netns "$ns"
  ip link set "kiln-v$i" master "$bridge" gso_max_segs 1 up
  ip -n "$ns" link set kiln0 gso_max_segs 1
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev kiln0
  ip -n "$ns" link set kiln0 up
  ip -n "$ns" link set lo up
  tc qdisc replace dev "kiln-v$i" root $shape
  ip netns exec "$ns" tc qdisc replace dev kiln0 root $shape
done
