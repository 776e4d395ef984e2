#!/usr/bin/env python3
"""Prints run.sh's table: per model and precision, Kiln's and PyTorch's
images/s (medians over the rounds), the ratio of the medians, every round's
ratio, Kiln's compile time, both peak memories and the memory format PyTorch
chose; a model Kiln could not compile shows kilnc's error. Then each model's
simulated systolic step: images/s, MXU utilization and its five busiest
layers' utilization (the whole per-layer table is in MODEL_sim.txt)."""

import json
import os
import statistics
import sys


def main():
    results = [json.loads(l) for l in open(sys.argv[1])]
    out = sys.argv[2]
    models = list(dict.fromkeys(r["model"] for r in results))
    print(f"{'model':20} {'prec':5} {'Kiln img/s':>10} {'PyTorch img/s':>13} {'ratio':>6}  "
          f"{'rounds':18} {'compile':>8} {'Kiln MiB':>9} {'PyT MiB':>8}  PyTorch format")
    for model in models:
        for precision in ("fp32", "bf16"):
            rows = [r for r in results if r["model"] == model and r["precision"] == precision]
            errors = [r for r in rows if "error" in r]
            if errors:
                print(f"{model:20} {precision:5} kilnc: {errors[0]['error'][:110]}")
                continue
            kiln = {r["round"]: r for r in rows if r["system"] == "kiln"}
            torch = {r["round"]: r for r in rows if r["system"] == "pytorch"}
            paired = sorted(set(kiln) & set(torch))
            if not paired:
                continue
            k = [kiln[n]["images_per_sec"] for n in paired]
            t = [torch[n]["images_per_sec"] for n in paired]
            ratios = ", ".join(f"{a / b:.2f}" for a, b in zip(k, t))
            median = statistics.median
            formats = sorted({torch[n]["memory_format"] for n in paired})
            print(f"{model:20} {precision:5} {median(k):10.1f} {median(t):13.1f} "
                  f"{median(k) / median(t):6.2f}  {ratios:18} "
                  f"{kiln[paired[0]]['compile_sec']:7.1f}s "
                  f"{max(kiln[n]['peak_rss_mib'] for n in paired):9.0f} "
                  f"{max(torch[n]['peak_rss_mib'] for n in paired):8.0f}  {'/'.join(formats)}")
    print("(images/s: medians over rounds; ratio: Kiln / PyTorch)")
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
