#!/usr/bin/env python3
"""TPU-like pods for kiln-comm-replay: a 2-D torus of chips, each with
several cores, as a SimGrid platform (docs/scaling.md, "TPUv3-512 pod").

  torus.py platform DIR [--shape 16x16] [--cores 2] [--link-bandwidth 83GBps]
                        [--link-latency 1us] [--chip-bandwidth 450GBps]
                        [--chip-latency 0.5us]
  torus.py replay DIR [kiln-comm-replay flags ...]

`platform` writes DIR/platform.xml, DIR/hostfile (rank r runs on chip
r // cores: the cores of a chip are consecutive ranks) and DIR/grid (the
rank grid for `--allreduce torus`: cores, then the torus's dimensions, the
first fastest, as SimGrid numbers the torus's hosts). `replay` runs
kiln-comm-replay on every core with that grid and prints its JSON line.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402

# TPUv3 (docs/scaling.md "TPUv3-512 pod" gives each figure's source).
TPUV3_SHAPE = (16, 16)  # v3-512: 256 chips, 512 cores
TPUV3_CORES = 2
# Google's Cloud TPU v3 page: 340 TB/s of all-reduce bandwidth over a
# 1024-chip pod whose chips have 4 ICI ports each: 83 GB/s per port and
# direction.
TPUV3_LINK_BANDWIDTH = f"{340e12 / 1024 / 4 / 1e9:.1f}GBps"
TPUV3_LINK_LATENCY = "1us"  # "sub-microsecond" per hop: the upper bound
# The two cores of a chip exchange through its HBM (900 GB/s per chip, a
# copy reads and writes it).
TPUV3_CHIP_BANDWIDTH = "450GBps"
TPUV3_CHIP_LATENCY = "0.5us"  # one DMA (the simulator's dma_latency)


def parse_shape(text):
    try:
        dims = tuple(int(d) for d in text.split("x"))
    except ValueError:
        dims = ()
    if len(dims) < 1 or any(d < 1 for d in dims):
        raise SystemExit(f"torus.py: --shape must be like 16x16, got '{text}'")
    return dims


def platform(shape, cores, link_bandwidth, link_latency, chip_bandwidth,
             chip_latency):
    """The platform XML, the hostfile's lines and the rank grid."""
    chips = 1
    for d in shape:
        chips *= d
    config = {
        # The links' figures are what MPI messages get: no TCP or
        # InfiniBand factors.
        "smpi/bw-factor": "0:1",
        "smpi/lat-factor": "0:1",
        "network/crosstraffic": "0",
    }
    xml = cluster.platform_header(config)
    # SimGrid's torus: each chip has one full-duplex link to its successor
    # in every dimension (the wrap-around included), routed dimension by
    # dimension; the cores of a chip reach each other through the loopback.
    xml += (f'  <cluster id="torus" prefix="chip-" suffix="" '
            f'radical="0-{chips - 1}" speed="{cluster.HOST_SPEED}" '
            f'core="{cores}" bw="{link_bandwidth}" lat="{link_latency}" '
            f'loopback_bw="{chip_bandwidth}" loopback_lat="{chip_latency}" '
            f'sharing_policy="SPLITDUPLEX" topology="TORUS" '
            f'topo_parameters="{",".join(str(d) for d in shape)}"/>\n'
            '</platform>\n')
    hosts = [f"chip-{c}" for c in range(chips) for _ in range(cores)]
    grid = (cores,) + tuple(shape) if cores > 1 else tuple(shape)
    return xml, hosts, grid


def write_platform(directory, shape=TPUV3_SHAPE, cores=TPUV3_CORES,
                   link_bandwidth=TPUV3_LINK_BANDWIDTH,
                   link_latency=TPUV3_LINK_LATENCY,
                   chip_bandwidth=TPUV3_CHIP_BANDWIDTH,
                   chip_latency=TPUV3_CHIP_LATENCY):
    xml, hosts, grid = platform(shape, cores, link_bandwidth, link_latency,
                                chip_bandwidth, chip_latency)
    os.makedirs(directory, exist_ok=True)
    cluster.write(os.path.join(directory, "platform.xml"), xml)
    cluster.write(os.path.join(directory, "hostfile"),
                  "".join(h + "\n" for h in hosts))
    cluster.write(os.path.join(directory, "grid"),
                  "x".join(str(d) for d in grid) + "\n")
    return len(hosts), grid


def replay(directory, replay_args, replay=None, smpirun=None, ranks=None):
    """kiln-comm-replay on every core of the pod in `directory`, reducing
    with the torus allreduce on its grid; returns the JSON line."""
    with open(os.path.join(directory, "grid")) as f:
        grid = f.read().strip()
    size = 1
    for d in grid.split("x"):
        size *= int(d)
    args = ["--allreduce", "torus", "--torus-dims", grid] + list(replay_args)
    return cluster.replay(directory, ranks or size, args, replay=replay,
                          smpirun=smpirun)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("platform")
    p.add_argument("dir")
    p.add_argument("--shape", default="x".join(map(str, TPUV3_SHAPE)))
    p.add_argument("--cores", type=int, default=TPUV3_CORES)
    p.add_argument("--link-bandwidth", default=TPUV3_LINK_BANDWIDTH)
    p.add_argument("--link-latency", default=TPUV3_LINK_LATENCY)
    p.add_argument("--chip-bandwidth", default=TPUV3_CHIP_BANDWIDTH)
    p.add_argument("--chip-latency", default=TPUV3_CHIP_LATENCY)
    r = sub.add_parser("replay")
    r.add_argument("dir")
    args, rest = parser.parse_known_args()
    if args.command == "platform":
        if rest:
            parser.error("unknown arguments: " + " ".join(rest))
        if args.cores < 1:
            parser.error("--cores must be at least 1")
        ranks, grid = write_platform(
            args.dir, parse_shape(args.shape), args.cores,
            args.link_bandwidth, args.link_latency, args.chip_bandwidth,
            args.chip_latency)
        print(f"torus.py: {args.dir}/platform.xml ({ranks} ranks, grid "
              f"{'x'.join(map(str, grid))})")
    else:
        print(json.dumps(replay(args.dir, rest)))


if __name__ == "__main__":
    main()
