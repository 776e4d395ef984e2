#!/usr/bin/env python3
"""Simulated clusters for kiln-comm-replay: SimGrid platforms and smpirun.

One home for what a simulation of Kiln's communication is made of: the
platform files (every parameter and where it comes from is in
docs/scaling.md) and the SMPI configuration every run uses.

  cluster.py platform star --hosts 4 --bandwidth 200Mbps --latency 1ms DIR
  cluster.py platform reference [--nodes 256] DIR
  cluster.py replay DIR --ranks N [kiln-comm-replay flags ...]
  cluster.py run DIR --ranks N EXE [executable flags ...]

`platform` writes DIR/platform.xml and DIR/hostfile; `replay` runs
build/bin/kiln-comm-replay under smpirun on them and prints its JSON line;
`run` runs a training executable linked by `kilnc --smpi` on them, its real
computation timed by SMPI.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Simulated hosts compute at this speed, and smpi_execute(seconds) converts
# seconds to flops at the same speed: a traced second is a simulated second.
HOST_SPEED = "1Gf"

# Every run: only the trace's compute takes simulated time (the replay's own
# CPU time, the ring's additions included, is not benchmarked), MPI_Wtime
# costs none, and an MPI_Test 1 us (so that a polling loop advances; Kiln's
# communicator makes none when simulated, see comm_mpi.cpp's
# completeArrived()).
SMPI_CONFIG = [
    "smpi/simulate-computation:no",
    "smpi/host-speed:" + HOST_SPEED,
    "smpi/test:1e-6",
    "smpi/iprobe:0",
    "smpi/wtime:0",
    "smpi/grow-injected-times:no",
    "smpi/privatization:no",
    # Open MPI's choice of algorithm for the small blocking collectives
    # (recursive doubling, Bruck...): SMPI's default allgather posts a
    # message to every rank and waits for them all, quadratic in the ranks.
    "smpi/coll-selector:ompi",
]

# A training executable built for SMPI (kilnc --smpi) computes for real:
# SMPI times the CPU time of each rank's compute between its MPI calls and
# charges it at HOST_SPEED, so a CPU second here is a simulated second. Each
# rank gets its own copy of the executable's globals (dlopen privatization:
# smpirun loads one copy of the shared object per rank); the shared
# libraries (oneDNN, libgomp) are shared, and the ranks take turns on one OS
# thread.
SMPI_RUN_CONFIG = [c for c in SMPI_CONFIG if not c.startswith((
    "smpi/simulate-computation:", "smpi/privatization:"))] + [
    "smpi/simulate-computation:yes",
    "smpi/privatization:dlopen",
]

# Ethernet frames of 1514 bytes carry 1448 bytes of TCP payload (MTU 1500,
# 20 bytes IP, 32 bytes TCP with timestamps, 14 bytes Ethernet header, which
# netem's rate counts); a 66-byte ACK every second segment takes 66/3028 of
# the reverse direction, which the ring also uses for its data.
TCP_OVER_ETHERNET = 1448 / 1514 * (1 - 66 / (2 * 1514))

# Reference cluster (docs/scaling.md "Platforms"): 256 two-socket nodes, one
# worker per socket, Intel Omni-Path 100 Series.
OPA_BANDWIDTH = "100Gbps"  # per port and direction
OPA_SWITCH_PORTS = 48  # Omni-Path Edge Switch 100 Series
OPA_LINK_LATENCY = "250ns"  # 4 links host-leaf-spine-leaf-host: ~1 us MPI latency
OPA_MPI_BANDWIDTH_SHARE = 0.98  # 12.3 of 12.5 GB/s reach MPI (PSM2)
# Two workers of a node exchange through memory: one socket's share of a
# Xeon 8160 node's UPI/memory path, far above the network's.
NODE_MEMORY_BANDWIDTH = "40GBps"
NODE_MEMORY_LATENCY = "500ns"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def platform_header(config):
    props = "".join(
        f'    <prop id="{k}" value="{v}"/>\n' for k, v in config.items())
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f'  <config id="General">\n{props}  </config>\n')


def star(args):
    """Hosts each behind its own full-duplex link to an ideal switch: the
    network namespaces joined by veth pairs to one bridge, each veth shaped
    by netem (bandwidth and delay) in both directions."""
    config = {
        "smpi/bw-factor": f"0:{TCP_OVER_ETHERNET:.6f}",
        "smpi/lat-factor": "0:1",
        "network/crosstraffic": "0",
    }
    xml = platform_header(config)
    xml += (f'  <cluster id="star" prefix="rank-" suffix="" '
            f'radical="0-{args.hosts - 1}" speed="{HOST_SPEED}" '
            f'bw="{args.bandwidth}" lat="{args.latency}" '
            'sharing_policy="SPLITDUPLEX"/>\n</platform>\n')
    hosts = [f"rank-{i}" for i in range(args.hosts)]
    return xml, hosts


def reference_layout(nodes):
    """(nodes per leaf switch, leaf switches) of the reference platform."""
    half = OPA_SWITCH_PORTS // 2
    leaves = -(-nodes // half)
    if nodes % leaves:
        # SimGrid's fat tree has the same number of nodes under each leaf.
        for leaves in range(leaves, nodes + 1):
            if nodes % leaves == 0:
                break
    return nodes // leaves, leaves


def reference_grid(nodes):
    """The rank grid of --allreduce torus that follows the reference
    platform: the node's two workers, the nodes under one leaf switch, the
    leaves (dimensions of 1 left out), e.g. "2x16x16" at 256 nodes."""
    per_leaf, leaves = reference_layout(nodes)
    return "x".join(str(d) for d in (2, per_leaf, leaves) if d > 1)


def reference(args):
    """The reference run's cluster: a two-level fat tree of 48-port switches,
    full bisection (each leaf has as many links up as nodes), nodes with two
    workers that share the node's link."""
    per_leaf, leaves = reference_layout(args.nodes)
    config = {
        "smpi/bw-factor": f"0:{OPA_MPI_BANDWIDTH_SHARE}",
        "smpi/lat-factor": "0:1",
        "network/crosstraffic": "0",
    }
    xml = platform_header(config)
    if leaves == 1:
        topology = f'topology="FAT_TREE" topo_parameters="1;{per_leaf};1;1"'
    else:
        topology = (f'topology="FAT_TREE" topo_parameters="2;{per_leaf},'
                    f'{leaves};1,{per_leaf};1,1"')
    xml += (f'  <cluster id="opa" prefix="node-" suffix="" '
            f'radical="0-{args.nodes - 1}" speed="{HOST_SPEED}" core="2" '
            f'bw="{OPA_BANDWIDTH}" lat="{OPA_LINK_LATENCY}" '
            f'loopback_bw="{NODE_MEMORY_BANDWIDTH}" '
            f'loopback_lat="{NODE_MEMORY_LATENCY}" '
            f'sharing_policy="SPLITDUPLEX" {topology}/>\n</platform>\n')
    hosts = [f"node-{i}" for i in range(args.nodes) for _ in range(2)]
    return xml, hosts


def cmd_platform(args):
    xml, hosts = {"star": star, "reference": reference}[args.kind](args)
    os.makedirs(args.dir, exist_ok=True)
    write(os.path.join(args.dir, "platform.xml"), xml)
    write(os.path.join(args.dir, "hostfile"), "".join(h + "\n" for h in hosts))
    print(f"cluster.py: {args.dir}/platform.xml ({len(hosts)} ranks)")


def smpirun_command(platform_dir, ranks, program, program_args, config,
                    smpirun=None):
    """The smpirun command running `program` on `ranks` ranks."""
    smpirun = smpirun or shutil.which("smpirun") or "smpirun"
    command = [smpirun, "-np", str(ranks),
               "-platform", os.path.join(platform_dir, "platform.xml"),
               "-hostfile", os.path.join(platform_dir, "hostfile")]
    command += ["--cfg=" + c for c in config]
    command += ["--log=root.thres:warning", "--log=smpi_config.thres:warning",
                program] + list(program_args)
    return command


def replay_command(platform_dir, ranks, replay_args, replay=None,
                   smpirun=None):
    """The smpirun command running kiln-comm-replay on `ranks` ranks."""
    replay = replay or os.path.join(ROOT, "build", "bin", "kiln-comm-replay")
    return smpirun_command(platform_dir, ranks, replay, replay_args,
                           SMPI_CONFIG, smpirun)


def run_command(platform_dir, ranks, executable, args, smpirun=None):
    """The smpirun command running an executable built by `kilnc --smpi`."""
    return smpirun_command(platform_dir, ranks, os.path.abspath(executable),
                           args, SMPI_RUN_CONFIG, smpirun)


def replay_failure(platform_dir, ranks, replay_args, replay=None,
                   smpirun=None):
    """kiln-comm-replay's error output for arguments it must refuse, or None
    when it succeeded (for tests of its errors)."""
    done = subprocess.run(replay_command(platform_dir, ranks, replay_args,
                                         replay, smpirun),
                          capture_output=True, text=True, timeout=60)
    return done.stderr if done.returncode != 0 else None


def replay(platform_dir, ranks, replay_args, replay=None, smpirun=None):
    """Runs kiln-comm-replay on `ranks` simulated ranks; returns its JSON,
    with the CPU time the simulation took (simulation_cpu_seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(replay_command(platform_dir, ranks, replay_args,
                                         replay, smpirun),
                          capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    if done.returncode != 0 or len(lines) != 1:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"cluster.py: kiln-comm-replay on {ranks} ranks "
                         f"failed (exit {done.returncode})")
    result = json.loads(lines[0])
    result["simulation_cpu_seconds"] = round(
        after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    return result


def cmd_replay(args, rest):
    print(json.dumps(replay(args.dir, args.ranks, rest)))


def cmd_run(args, rest):
    if not rest:
        raise SystemExit("cluster.py run: name the executable (kilnc --smpi)")
    os.execvp(args.smpirun or shutil.which("smpirun") or "smpirun",
              run_command(args.dir, args.ranks, rest[0], rest[1:],
                          args.smpirun))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("platform")
    p.add_argument("kind", choices=["star", "reference"])
    p.add_argument("dir")
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--bandwidth", default="1Gbps")
    p.add_argument("--latency", default="0us")
    p.add_argument("--nodes", type=int, default=256)
    r = sub.add_parser("replay")
    r.add_argument("dir")
    r.add_argument("--ranks", type=int, required=True)
    x = sub.add_parser("run")
    x.add_argument("dir")
    x.add_argument("--ranks", type=int, required=True)
    x.add_argument("--smpirun")
    args, rest = parser.parse_known_args()
    if args.command == "platform":
        if rest:
            parser.error("unknown arguments: " + " ".join(rest))
        cmd_platform(args)
    elif args.command == "run":
        cmd_run(args, rest)
    else:
        cmd_replay(args, rest)


if __name__ == "__main__":
    main()
