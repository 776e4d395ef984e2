"""Prints the FileCheck lines that kiln-report --dump-data must match for a
run, computed here from its metrics.jsonl (and device_report.json) alone:
every train and eval row's numbers in file order, accuracies in percent, the
last profile's layers in ms per step and a systolic report's in microseconds,
most time first, the rest summed in one bar.

report_expected.py RUN_DIR TOP
"""

import json
import os
import sys


def main():
    run, top = sys.argv[1], int(sys.argv[2])
    rows = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    series = [
        ("loss.train", train, lambda r: r["loss"]),
        ("loss.eval", evals, lambda r: r["loss"]),
        ("accuracy.top1", evals, lambda r: 100 * r["top1"]),
        ("accuracy.top5", evals, lambda r: 100 * r["top5"]),
        ("lr", train, lambda r: r["lr"]),
        ("throughput.host", train, lambda r: r["images_per_sec"]),
        ("throughput.device", [r for r in train if "device_images_per_sec" in r],
         lambda r: r["device_images_per_sec"]),
    ]
    lines = []
    for name, chosen, value in series:
        lines += [f"{name} step {r['step']} {float(value(r))!r}" for r in chosen]

    def bars(name, layers):
        layers = sorted(layers, key=lambda l: -sum(l[1]))
        shown, rest = layers[:top], layers[top:]
        out = [f"{name} {label} {{{{.*}}}}" + " ".join(repr(v) for v in parts)
               for label, parts in shown]
        if rest:
            summed = [sum(l[1][i] for l in rest) for i in range(len(rest[0][1]))]
            out.append(f"{name} {len(rest)} other layer{'s' if len(rest) > 1 else ''} "
                       + " ".join(repr(v) for v in summed))
        return out

    profiles = [i for i, r in enumerate(rows) if r["kind"] == "profile"]
    if profiles:
        end = profiles[-1]
        begin = max([i for i, r in enumerate(rows[:end])
                     if not r["kind"].startswith("profile")], default=-1)
        steps = rows[end]["steps"]
        layers = [(r.get("name") or r.get("layer") or r["loc"],
                   [1e3 * r["library_sec"] / steps, 1e3 * r["generated_sec"] / steps])
                  for r in rows[begin + 1:end] if r["kind"] == "profile_layer"]
        lines += bars("layers", layers)
    device = os.path.join(run, "device_report.json")
    if os.path.exists(device):
        report = json.load(open(device))
        clock = report["step"]["clock_hz"]
        lines += bars("device-layers",
                      [(l["layer"], [1e6 * l["mxu_busy_cycles"] / clock,
                                     1e6 * l["vector_busy_cycles"] / clock])
                       for l in report["layers"]])
    for i, line in enumerate(lines):
        print(("CHECK: " if i == 0 else "CHECK-NEXT: ") + line)


main()
