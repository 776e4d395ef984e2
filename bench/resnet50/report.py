#!/usr/bin/env python3
"""Prints run.sh's comparison table and plots Kiln's per-layer profile."""

import json
import os
import re
import sys


def main():
    results = [json.loads(l) for l in open(sys.argv[1])]
    out = sys.argv[2]
    by = {(r["system"], r["precision"]): r for r in results}
    print(f"{'':10} {'Kiln img/s':>11} {'PyTorch img/s':>14} {'ratio':>6} "
          f"{'Kiln compile':>13} {'Kiln peak':>10} {'PyTorch peak':>13}")
    for precision in ("fp32", "bf16"):
        k, t = by.get(("kiln", precision)), by.get(("pytorch", precision))
        if not k or not t:
            continue
        print(f"{precision:10} {k['images_per_sec']:11.2f} {t['images_per_sec']:14.2f} "
              f"{k['images_per_sec'] / t['images_per_sec']:6.2f} {k['compile_sec']:12.1f}s "
              f"{k['peak_rss_mib']:8.0f}MiB {t['peak_rss_mib']:11.0f}MiB")
    # Per-layer time of Kiln's library calls (from --profile), as a plot.
    for precision in ("fp32", "bf16"):
        log = os.path.join(out, f"kiln_{precision}.log")
        if not os.path.exists(log):
            continue
        rows = []
        for line in open(log):
            m = re.match(r"\s*(\d+)\s+(\S+)\s+.*?(\d+) calls\s+([\d.]+) s", line)
            if m and int(m.group(3)) > 0:
                rows.append((int(m.group(1)), m.group(2), float(m.group(4))))
        if not rows:
            continue
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            continue
        fig, ax = plt.subplots(figsize=(12, 4))
        colors = {"conv2d_forward": "tab:blue", "conv2d_backward_data": "tab:orange",
                  "conv2d_backward_filter": "tab:green"}
        ax.bar(range(len(rows)), [r[2] for r in rows],
               color=[colors.get(r[1], "tab:gray") for r in rows])
        ax.set_xlabel("library call")
        ax.set_ylabel("seconds over the run")
        ax.set_title(f"Kiln ResNet-50 {precision}: time per library call")
        fig.savefig(os.path.join(out, f"layers_{precision}.png"), dpi=100)
        print(f"per-layer plot: {os.path.join(out, f'layers_{precision}.png')}")


if __name__ == "__main__":
    main()
