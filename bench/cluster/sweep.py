#!/usr/bin/env python3
"""The reference cluster simulated at 1 to 256 nodes (docs/scaling.md): a
one-rank --comm-trace of Kiln's ResNet-50 step replayed by kiln-comm-replay
on runtime/smpi/cluster.py's reference platform, each rank's compute scaled
to --step-compute seconds per step.

  sweep.py OUT --trace T --step-compute 1.214 --batch 48 \\
      [--allreduce ring|grid] [--jitter J --steps N] [--nodes 1,2,...]
  sweep.py OUT --buckets MIB=TRACE,... --nodes 256 [--allreduce grid] ...

--allreduce grid is Kiln's torus allreduce over the grid that follows the
platform (a node's two workers x the nodes under a leaf switch x the
leaves). --jitter draws each rank's step compute from a real run's steps
(stragglers). Each point is kept as OUT/<series>-<nodes>.json (delete one to
recompute it); a Markdown table is printed, and OUT/sweep.png is drawn from
every series in OUT. --buckets replays one trace per bucket size instead.
"""
import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "runtime", "smpi"))
import cluster  # noqa: E402

REFERENCE_IMAGES_PER_SECOND = 16400
REFERENCE_EFFICIENCY = 0.81
SERIES_LABELS = {
    "ring": "Kiln's ring (today)",
    "grid": "Kiln's torus allreduce on the node/leaf grid",
    "grid-jitter": "the same, with stragglers",
    "ring-jitter": "ring, with stragglers",
}


def point(args, series, nodes, trace):
    """Replays `trace` on `nodes` nodes; cached in OUT."""
    path = os.path.join(args.out, f"{series}-{nodes}.json")
    if os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path) as f:
            cached = json.load(f)
        # A point with stragglers is kept for the distribution it drew from.
        if cached.get("jitter_trace") == args.jitter:
            return cached
    platform = os.path.join(args.out, f"ref-{nodes}")
    cluster.cmd_platform(argparse.Namespace(kind="reference", dir=platform,
                                            nodes=nodes))
    flags = ["--trace", trace, "--step-compute", str(args.step_compute),
             "--batch", str(args.batch), "--steps", str(args.steps)]
    if args.allreduce == "grid":
        flags += ["--allreduce", "torus",
                  "--torus-dims", cluster.reference_grid(nodes)]
    if args.jitter:
        flags += ["--jitter", args.jitter, "--seed", str(args.seed)]
    result = cluster.replay(platform, 2 * nodes, flags)
    if args.jitter:
        result["jitter_trace"] = args.jitter
    with open(path, "w") as f:
        f.write(json.dumps(result) + "\n")
    return result


def row(first, r, baseline=None):
    """One table row; `baseline` (the same point without jitter) splits the
    exposed time into the allreduce's and the stragglers'."""
    step, compute = r["step_seconds"], r["compute_seconds"]
    exposed, stragglers = r["exposed_seconds"], 0.0
    if baseline is not None:
        exposed = baseline["exposed_seconds"]
        stragglers = step - compute - exposed
    return (f"| {first} | {r['ranks']} | {step * 1e3:.1f} ms | "
            f"{compute * 1e3:.1f} ms | {exposed * 1e3:.1f} ms | "
            f"{stragglers * 1e3:.1f} ms | {r['images_per_second']:,.0f} | "
            f"{100 * efficiency(r):.1f}% |")


def efficiency(r):
    """Against one worker alone, whose throughput is its batch over its mean
    step compute: the step adds communication and waiting for stragglers."""
    return r["compute_seconds"] / r["step_seconds"]


HEADER = ("| {} | workers | step | compute | exposed allreduce | stragglers | "
          "images/s | efficiency |\n|---|---|---|---|---|---|---|---|")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--trace")
    parser.add_argument("--buckets", help="MIB=TRACE,...: one trace per "
                        "bucket size, replayed at each of --nodes")
    parser.add_argument("--step-compute", type=float, required=True)
    parser.add_argument("--batch", type=int, default=48)
    parser.add_argument("--nodes", default="1,2,4,8,16,32,64,128,256")
    parser.add_argument("--allreduce", choices=["ring", "grid"], default="ring")
    parser.add_argument("--jitter", help="a real run's --comm-trace whose "
                        "step times each rank draws from")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    if bool(args.trace) == bool(args.buckets):
        parser.error("give --trace or --buckets")
    os.makedirs(args.out, exist_ok=True)
    nodes = [int(n) for n in args.nodes.split(",")]
    series = args.allreduce + ("-jitter" if args.jitter else "")

    if args.buckets:
        print(HEADER.format("bucket size, nodes"))
        for item in args.buckets.split(","):
            mib, trace = item.split("=", 1)
            for n in nodes:
                r = point(args, f"buckets-{mib}-{series}", n, trace)
                print(row(f"{mib} MiB, {n}", r))
        return

    rows = []
    for n in nodes:
        r = point(args, series, n, args.trace)
        base = None
        if args.jitter:
            saved = args.jitter
            args.jitter = None
            base = point(args, args.allreduce, n, args.trace)
            args.jitter = saved
        rows.append((n, r, base))
    print(HEADER.format("nodes"))
    for n, r, base in rows:
        print(row(n, r, base))
    plot(args)


def plot(args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("sweep.py: no matplotlib (scripts/install-deps.sh installs it); "
              "no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    perfect = None
    for series, label in SERIES_LABELS.items():
        points = []
        for path in glob.glob(os.path.join(args.out, f"{series}-*.json")):
            suffix = os.path.basename(path)[len(series) + 1:-5]
            if not suffix.isdigit() or os.path.getsize(path) == 0:
                continue
            with open(path) as f:
                r = json.load(f)
                points.append((int(suffix), r))
        if not points:
            continue
        points.sort()
        n = [p[0] for p in points]
        ax[0].plot(n, [p[1]["images_per_second"] for p in points], "o-",
                   label=label)
        ax[1].plot(n, [100 * efficiency(p[1]) for p in points], "o-",
                   label=label)
        perfect = n if perfect is None or len(n) > len(perfect) else perfect
    if perfect:
        ax[0].plot(perfect, [2 * x * args.batch / args.step_compute
                             for x in perfect], ":", label="perfect scaling")
    ax[0].plot([256], [REFERENCE_IMAGES_PER_SECOND], "s",
               label="reference run (TF 1.6 + Horovod)")
    ax[0].set(xscale="log", yscale="log", xlabel="nodes (2 workers each)",
              ylabel="images/s")
    ax[0].legend(fontsize=7)
    ax[1].plot([256], [100 * REFERENCE_EFFICIENCY], "s", label="reference run")
    ax[1].set(xscale="log", xlabel="nodes (2 workers each)",
              ylabel="scaling efficiency (%)", ylim=(70, 101))
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "sweep.png"), dpi=100)
    print(f"sweep.py: {args.out}/sweep.png")


if __name__ == "__main__":
    main()
