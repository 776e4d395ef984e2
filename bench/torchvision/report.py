#!/usr/bin/env python3
"""Prints run.sh's table: per model and precision, Kiln's images/s and each
PyTorch's (Debian's 1.13 and PyPI's 2.x eager, medians over the rounds, with
the memory format each chose), the ratio of Kiln's median to the faster
PyTorch's and Kiln's ratio to it in every round, Kiln's compile time and
both peak memories; a model Kiln could not compile shows kilnc's error. Then
each model's simulated systolic step: images/s, MXU utilization and its five
busiest layers' utilization (the whole per-layer table is in MODEL_sim.txt)."""

import json
import os
import statistics
import sys


def torch_name(row):
    """'1.13' or '2.x' style: the major.minor of the row's PyTorch."""
    return ".".join(row.get("torch", "?").split("+")[0].split(".")[:2])


def main():
    results = [json.loads(l) for l in open(sys.argv[1])]
    out = sys.argv[2]
    median = statistics.median
    models = list(dict.fromkeys(r["model"] for r in results))
    print(f"{'model':20} {'prec':5} {'Kiln img/s':>10}  {'PyTorch img/s by version (format)':38} "
          f"{'ratio':>6}  {'rounds':18} {'compile':>8} {'Kiln MiB':>9} {'PyT MiB':>8}")
    for model in models:
        for precision in ("fp32", "bf16"):
            rows = [r for r in results if r["model"] == model and r["precision"] == precision]
            errors = [r for r in rows if "error" in r and r["system"] == "kiln"]
            if errors:
                print(f"{model:20} {precision:5} Kiln: {errors[0]['error'][:110]}")
                continue
            kiln = {r["round"]: r for r in rows if r["system"] == "kiln"}
            torches = {}
            for r in rows:
                if r["system"] == "pytorch" and "error" not in r:
                    torches.setdefault(torch_name(r), {})[r["round"]] = r
            for r in rows:
                if r["system"] == "pytorch" and "error" in r:
                    print(f"{model:20} {precision:5} a PyTorch run failed in round {r['round']}: "
                          f"{r['error'][-110:]}")
            if not kiln or not torches:
                continue
            # The strongest PyTorch: the version with the higher median.
            speed = {v: median(x["images_per_sec"] for x in t.values())
                     for v, t in torches.items()}
            best = max(speed, key=speed.get)
            torch = torches[best]
            paired = sorted(set(kiln) & set(torch))
            if not paired:
                continue
            k = [kiln[n]["images_per_sec"] for n in paired]
            t = [torch[n]["images_per_sec"] for n in paired]
            ratios = ", ".join(f"{a / b:.2f}" for a, b in zip(k, t))
            versions = ", ".join(
                f"{v}{'*' if v == best else ''} {speed[v]:.1f} "
                f"({'/'.join(sorted({x['memory_format'] for x in torches[v].values()}))})"
                for v in sorted(torches))
            print(f"{model:20} {precision:5} {median(k):10.2f}  {versions:38} "
                  f"{median(k) / median(t):6.2f}  {ratios:18} "
                  f"{kiln[paired[0]]['compile_sec']:7.1f}s "
                  f"{max(kiln[n]['peak_rss_mib'] for n in paired):9.0f} "
                  f"{max(torch[n]['peak_rss_mib'] for n in paired):8.0f}")
    print("(images/s: medians over rounds; * the faster PyTorch, which the ratios are against: "
          "Kiln / PyTorch)")
    if "--no-systolic" in sys.argv:
        return
    print("\nSystolic target (simulated step, bf16):")
    for model in models:
        path = os.path.join(out, f"{model}_sim.json")
        if not os.path.exists(path):
            print(f"  {model:20} not compiled (see {model}_sa.log)")
            continue
        report = json.load(open(path))
        step = report["step"]
        layers = sorted(report.get("layers", []), key=lambda l: l.get("mxu_busy_cycles", 0),
                        reverse=True)[:5]
        busiest = ", ".join(f"{l['layer']} {100 * l['mxu_utilization']:.0f}%" for l in layers)
        print(f"  {model:20} {step['images_per_second']:9.1f} img/s  MXU "
              f"{100 * step['mxu_utilization']:5.1f}%  busiest: {busiest}")


if __name__ == "__main__":
    main()
