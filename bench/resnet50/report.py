#!/usr/bin/env python3
"""Prints run.sh's comparison table (medians over its rounds, then every
round's ratio) and Kiln's per-layer profile (the profile_layer rows
--profile writes to metrics.jsonl: library calls and generated code per
model layer), and plots the profile."""

import json
import os
import statistics
import sys


def main():
    results = [json.loads(l) for l in open(sys.argv[1])]
    out = sys.argv[2]
    print(f"{'':10} {'Kiln img/s':>11} {'PyTorch img/s':>14} {'ratio':>6} "
          f"{'Kiln compile':>13} {'Kiln peak':>10} {'PyTorch peak':>13}")
    rounds = {}
    for precision in ("fp32", "bf16"):
        rows = {s: {r["round"]: r for r in results
                    if r["system"] == s and r["precision"] == precision}
                for s in ("kiln", "pytorch")}
        paired = sorted(set(rows["kiln"]) & set(rows["pytorch"]))
        if not paired:
            continue
        k = [rows["kiln"][n] for n in paired]
        t = [rows["pytorch"][n] for n in paired]
        ratios = [a["images_per_sec"] / b["images_per_sec"] for a, b in zip(k, t)]
        rounds[precision] = ratios
        median = statistics.median
        print(f"{precision:10} {median(r['images_per_sec'] for r in k):11.2f} "
              f"{median(r['images_per_sec'] for r in t):14.2f} {median(ratios):6.2f} "
              f"{k[0]['compile_sec']:12.1f}s {max(r['peak_rss_mib'] for r in k):8.0f}MiB "
              f"{max(r['peak_rss_mib'] for r in t):11.0f}MiB")
    print("(medians over rounds; peak memory is the largest of any round)")
    for precision, ratios in rounds.items():
        print(f"{precision} ratio by round: " + ", ".join(f"{r:.2f}" for r in ratios))
    for precision in ("fp32", "bf16"):
        profile = read_profile(os.path.join(out, f"profile_{precision}", "metrics.jsonl"))
        if profile:
            print_profile(precision, *profile)
            plot_profile(precision, *profile, out)


def read_profile(metrics):
    """The per-layer rows and the totals --profile wrote to metrics.jsonl."""
    if not os.path.exists(metrics):
        return None
    rows = [json.loads(l) for l in open(metrics)]
    layers = [r for r in rows if r.get("kind") == "profile_layer"]
    totals = [r for r in rows if r.get("kind") == "profile"]
    if not layers or not totals:
        return None
    return layers, totals[-1]


def line_of(layer):
    """The first model line of a layer ("resnet50.mlir:282,286" -> 282), for
    model order."""
    _, _, lines = layer["loc"].partition(" ")[0].rpartition(":")
    line = lines.split(",")[0]
    return int(line) if line.isdigit() else 1 << 30


def name_of(layer):
    """The layer's name (its parameters' prefix); its line from a runtime
    that wrote no names."""
    return layer.get("layer") or layer["loc"]


def print_profile(precision, layers, totals, top=15):
    """Where Kiln's train step goes: the split, then the layers with most time,
    library calls and generated code together."""
    loop = totals["loop_sec"]
    lib, gen = totals["library_sec"], totals["generated_sec"]
    other = loop - lib - gen
    warm = " after the first" if totals.get("warm_up_steps") else ""
    print(f"\nKiln ResNet-50 {precision}, {totals['steps']} steps{warm}, "
          f"{loop / totals['steps']:.3f} s/step: "
          f"library calls {100 * lib / loop:.1f}%, generated code {100 * gen / loop:.1f}%, "
          f"other {100 * other / loop:.1f}%")
    print(f"  {'layer':22} {'library s':>10} {'generated s':>12} {'% step':>7}  kiln ops")
    ranked = sorted(layers, key=lambda r: r["library_sec"] + r["generated_sec"], reverse=True)
    for r in ranked[:top]:
        total = r["library_sec"] + r["generated_sec"]
        print(f"  {name_of(r):22} {r['library_sec']:10.3f} {r['generated_sec']:12.3f} "
              f"{100 * total / loop:6.1f}%  {r['ops']}")


def plot_profile(precision, layers, totals, out):
    """Seconds per layer in model order, library calls and generated code
    stacked."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot (run.sh installs python3-matplotlib for /usr/bin/python3)")
        return
    ordered = sorted(layers, key=line_of)
    x = range(len(ordered))
    lib = [r["library_sec"] / totals["steps"] * 1000 for r in ordered]
    gen = [r["generated_sec"] / totals["steps"] * 1000 for r in ordered]
    fig, ax = plt.subplots(figsize=(14, 4.5))
    ax.bar(x, lib, color="tab:blue", label="library calls (oneDNN)")
    ax.bar(x, gen, bottom=lib, color="tab:orange", label="generated code")
    ax.set_xlabel("layer (in model order)")
    ax.set_ylabel("ms per step")
    ax.set_title(f"Kiln ResNet-50 {precision}, batch 32: time per layer "
                 f"({sum(lib):.0f} ms library, {sum(gen):.0f} ms generated per step)")
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, f"layers_{precision}.png")
    fig.savefig(path, dpi=100)
    print(f"per-layer plot: {path}")


if __name__ == "__main__":
    main()
