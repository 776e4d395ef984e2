#!/usr/bin/env python3
"""The reference cluster simulated at 1 to 256 nodes (docs/scaling.md): a
one-rank --comm-trace of Kiln's ResNet-50 step replayed by kiln-comm-replay
on runtime/smpi/cluster.py's reference platform, each rank's compute scaled
to --step-compute seconds per step. Writes OUT/sweep-<nodes>.json (kept:
delete one to recompute it), prints a Markdown table and draws OUT/sweep.png.

  bench/cluster/sweep.py --trace T --step-compute 1.214 --batch 48 OUT
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "runtime", "smpi"))
import cluster  # noqa: E402

REFERENCE_IMAGES_PER_SECOND = 16400
REFERENCE_EFFICIENCY = 0.81


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--trace", required=True)
    parser.add_argument("--step-compute", type=float, required=True)
    parser.add_argument("--batch", type=int, default=48)
    parser.add_argument("--nodes", default="1,2,4,8,16,32,64,128,256")
    args = parser.parse_args()
    rows = []
    for nodes in [int(n) for n in args.nodes.split(",")]:
        path = os.path.join(args.out, f"sweep-{nodes}.json")
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            platform = os.path.join(args.out, f"ref-{nodes}")
            pa = argparse.Namespace(kind="reference", dir=platform,
                                    nodes=nodes)
            cluster.cmd_platform(pa)
            result = cluster.replay(platform, 2 * nodes, [
                "--trace", args.trace, "--step-compute",
                str(args.step_compute), "--batch", str(args.batch),
                "--steps", "1"])
            with open(path, "w") as f:
                f.write(json.dumps(result) + "\n")
        with open(path) as f:
            rows.append((nodes, json.load(f)))
    print("| nodes | workers | step | compute | exposed allreduce | "
          "images/s | efficiency |")
    print("|---|---|---|---|---|---|---|")
    for nodes, r in rows:
        efficiency = r["compute_seconds"] / r["step_seconds"]
        print(f"| {nodes} | {r['ranks']} | {r['step_seconds'] * 1e3:.1f} ms | "
              f"{r['compute_seconds'] * 1e3:.1f} ms | "
              f"{r['exposed_seconds'] * 1e3:.1f} ms | "
              f"{r['images_per_second']:,.0f} | {efficiency * 100:.1f}% |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("sweep.py: no matplotlib (scripts/install-deps.sh installs it); "
              "no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    n = [r[0] for r in rows]
    ax[0].plot(n, [r[1]["images_per_second"] for r in rows], "o-",
               label="Kiln on the simulated cluster")
    ax[0].plot(n, [2 * x * args.batch / args.step_compute for x in n], ":",
               label="perfect scaling")
    ax[0].plot([256], [REFERENCE_IMAGES_PER_SECOND], "s",
               label="reference run (TF 1.6 + Horovod)")
    ax[0].set(xscale="log", yscale="log", xlabel="nodes (2 workers each)",
              ylabel="images/s")
    ax[0].legend(fontsize=8)
    ax[1].plot(n, [100 * r[1]["compute_seconds"] / r[1]["step_seconds"]
                   for r in rows], "o-", label="Kiln, simulated")
    ax[1].plot([256], [100 * REFERENCE_EFFICIENCY], "s",
               label="reference run")
    ax[1].set(xscale="log", xlabel="nodes (2 workers each)",
              ylabel="scaling efficiency (%)", ylim=(70, 101))
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "sweep.png"), dpi=100)
    print(f"sweep.py: {args.out}/sweep.png")


if __name__ == "__main__":
    main()
