#!/usr/bin/env python3
"""Where a simulated step loses time to its own bounds (docs/systolic.md).

Groups the ops of a kiln-sim JSON report (`kiln-sim PROGRAM --json=FILE`)
that run together (an op whose span overlaps the group's by more than half
of the shorter joins it: a pair, a step of three, an op with the casts
beside it), gives each group the cycles it adds to the step (its end past
the latest end so far) and compares them with the larger of its HBM time
(bytes at the target's bandwidth) and its MXU time (busy cycles over the
MXUs). The gap is the difference; the largest come first.

    bench/sim/gaps.py REPORT.json [--top N] [--order]
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("--top", type=int, default=30,
                    help="groups to print (default 30)")
    ap.add_argument("--order", action="store_true",
                    help="print every group in program order instead")
    # The report names its target but not its fields: the tpuv3 profile's.
    ap.add_argument("--hbm-bytes-per-s", type=float, default=4.5e11,
                    help="HBM bandwidth (default: tpuv3's 450 GB/s)")
    ap.add_argument("--mxus", type=int, default=2,
                    help="MXU count (default: tpuv3's 2)")
    args = ap.parse_args()
    try:
        with open(args.report) as f:
            r = json.load(f)
        clock = r["step"]["clock_hz"]
        ops = [o for o in r["ops"] if o["instructions"] > 0]
    except (OSError, ValueError, KeyError) as e:
        sys.exit("gaps.py: %s: not a kiln-sim JSON report (%s)" %
                 (args.report, e))
    per_cycle = args.hbm_bytes_per_s / clock
    mxus = args.mxus
    ops.sort(key=lambda o: (o["start"], o["end"]))
    groups = []
    for o in ops:
        if groups:
            g = groups[-1]
            overlap = min(g["end"], o["end"]) - max(g["start"], o["start"])
            shorter = min(o["span_cycles"], g["end"] - g["start"])
            if o["span_cycles"] > 0 and overlap > 0.5 * shorter:
                g["ops"].append(o)
                g["end"] = max(g["end"], o["end"])
                continue
        groups.append({"start": o["start"], "end": o["end"], "ops": [o]})
    rows, latest = [], 0
    for g in groups:
        added = max(0, g["end"] - max(latest, g["start"]))
        latest = max(latest, g["end"])
        hbm_cycles = sum(o["hbm_bytes"] for o in g["ops"]) / per_cycle
        mxu_cycles = sum(o["mxu_busy_cycles"] for o in g["ops"]) / mxus
        rows.append((added - max(hbm_cycles, mxu_cycles), added, hbm_cycles,
                     mxu_cycles, " + ".join("%s:%s" % (o["kind"], o["layer"])
                                            for o in g["ops"])))
    print("step %d cycles; gaps %.2f M cycles over %d groups" %
          (r["step"]["cycles"], sum(x[0] for x in rows) / 1e6, len(rows)))
    print("%9s %9s %9s %9s  ops" % ("gap", "added", "HBM", "MXU"))
    if not args.order:
        rows.sort(key=lambda x: -x[0])
        rows = rows[:args.top]
    for x in rows:
        print("%9.0f %9.0f %9.0f %9.0f  %s" % x)


if __name__ == "__main__":
    main()
