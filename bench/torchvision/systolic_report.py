#!/usr/bin/env python3
"""Prints systolic.sh's table (docs/systolic.md): per model, the timed
step's instructions, cycles, images/s, MXU utilization (of the step / of its
busy time) and HBM bytes without and with the batch-norm fusion
(MODEL_fuse=0.json -> MODEL_fuse=1.json), then the fused step's time by op
kind (share of the sum of op spans) and its per-layer MXU utilization over
the layers with MXU work (min / median / max).

  systolic_report.py DIR MODELS...   (MODELS space- or comma-separated)
"""

import json
import os
import statistics
import sys

# Op kinds by what they are, for the time shares; a convolution with no
# MXU work is a depthwise one (the vector unit's).
GROUPS = [
    ("conv+bn", ("fused_conv2d_batch_norm",)),
    ("batch norm", ("batch_norm", "fused_batch_norm")),
    ("conv", ("conv2d",)),
    ("dense", ("dense", "matmul")),
    ("elementwise", ("relu", "add", "activation", "broadcast_binary",
                     "bias_add", "cast", "fused_elementwise", "dropout")),
    ("data movement", ("concat", "slice", "transpose", "channel_shuffle")),
    ("pooling/loss/update", ("max_pool", "avg_pool", "global_avg_pool",
                             "softmax_cross_entropy", "sgd_update",
                             "learning_rate", "reduce_sum", "allreduce")),
]


def group(op):
    kind = op["kind"]
    for name, prefixes in GROUPS:
        if kind.startswith(prefixes):
            if name == "conv" and op["mxu_busy_cycles"] == 0:
                return "depthwise"
            return name
    return kind


def load(directory, model, config):
    path = os.path.join(directory, f"{model}_{config}.json")
    return json.load(open(path)) if os.path.exists(path) else None


def main():
    directory = sys.argv[1]
    models = " ".join(sys.argv[2:]).replace(",", " ").split()
    print("| model | instructions | step (cycles, ms) | images/s | "
          "MXU util. (step / busy) | HBM | time by op kind (fused) | "
          "per-layer MXU util. (min / median / max) |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        before, after = (load(directory, model, c) for c in ("fuse=0", "fuse=1"))
        if not before or not after:
            print(f"| {model} | not simulated (see {model}.log) |")
            continue
        b, a = before["step"], after["step"]

        def pair(key, fmt):
            return f"{fmt(b[key])} -> {fmt(a[key])}"
        kinds = {}
        for op in after["ops"]:
            kinds[group(op)] = kinds.get(group(op), 0) + op["span_cycles"]
        total = sum(kinds.values())
        shares = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in
                           sorted(kinds.items(), key=lambda kv: -kv[1])
                           if v >= 0.03 * total)
        layers = sorted((l["mxu_utilization"], l["layer"])
                        for l in after["layers"] if l["macs"] > 0)
        median = statistics.median(u for u, _ in layers)
        print(f"| {model} | {pair('instructions', lambda v: f'{v:,}')} | "
              f"{b['cycles'] / 1e6:.2f} M -> {a['cycles'] / 1e6:.2f} M = "
              f"{1e3 * a['seconds']:.2f} ms | "
              f"{pair('images_per_second', lambda v: f'{v:,.0f}')} | "
              f"{100 * b['mxu_utilization']:.1f}% / "
              f"{100 * b['mxu_busy_utilization']:.1f}% -> "
              f"{100 * a['mxu_utilization']:.1f}% / "
              f"{100 * a['mxu_busy_utilization']:.1f}% | "
              f"{(b['hbm_bytes_read'] + b['hbm_bytes_written']) / 1e9:.2f} -> "
              f"{(a['hbm_bytes_read'] + a['hbm_bytes_written']) / 1e9:.2f} GB | "
              f"{shares} | {100 * layers[0][0]:.1f}% ({layers[0][1]}) / "
              f"{100 * median:.1f}% / {100 * layers[-1][0]:.1f}% "
              f"({layers[-1][1]}) |")


if __name__ == "__main__":
    main()
