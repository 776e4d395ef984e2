#!/usr/bin/env python3
"""bench/peers/run.sh's report: from results.jsonl, a markdown table (one row
per system: images/s as the median over rounds and each round's, Kiln's speed
over the peer's by round, compile or warm-up seconds, peak RSS) printed and
written to table.md, and peers.png (images/s by round and peak memory). A
system that failed shows its error in place of figures; a Kiln error row (e.g.
bf16 refused without AVX-512) says Kiln was not measurable here."""

import argparse
import json
import os
import statistics
import textwrap

NAMES = {
    "kiln": "Kiln",
    "torch-eager": "PyTorch 2 eager",
    "torch-compile": "PyTorch 2 torch.compile (Inductor)",
    "keras-tf-xla": "Keras 3 / TensorFlow, XLA jit_compile",
    "keras-tf": "Keras 3 / TensorFlow, no XLA",
    "keras-jax": "Keras 3 / JAX (XLA)",
}


def by_system(results):
    """{system: {round: row}}, epochs of a round averaged into one row."""
    systems = {}
    for r in results:
        name = "kiln" if r["system"] == "kiln" else r.get("peer", r["system"])
        rounds = systems.setdefault(name, {})
        if "error" in r:
            rounds.setdefault("error", r["error"])
            continue
        prev = rounds.get(r["round"])
        if prev is None:
            rounds[r["round"]] = dict(r, epochs=1)
        else:  # later epochs of the same round
            n = prev["epochs"]
            for key in ("images_per_sec", "epoch_sec"):
                if key in r:
                    prev[key] = (prev[key] * n + r[key]) / (n + 1)
            prev["peak_rss_mib"] = max(prev["peak_rss_mib"], r["peak_rss_mib"])
            prev["epochs"] = n + 1
    return systems


def version_of(row):
    for key in ("torch", "tensorflow", "jax"):
        if row.get(key):
            return f"{key} {row[key]}" + (f", keras {row['keras']}" if row.get("keras") else "")
    return ""


def table(systems, args):
    kiln = {k: v for k, v in systems.get("kiln", {}).items() if k != "error"}
    epochs = args.model == "resnet20-fmnist"
    lines = [
        f"{args.model}, {args.precision}, batch {32 if not epochs else 128}, 2 threads, "
        f"{'real Fashion-MNIST epoch' if epochs else 'synthetic data'}"
        f"{'; OMP_WAIT_POLICY=' + args.omp_wait_policy if args.omp_wait_policy else ''}"
        f"; CPU: {args.cpu}",
        "",
        "| system | images/s (median) | by round | " + ("s/epoch (median) | " if epochs else "")
        + "Kiln / system (median) | by round | compile or warm-up s | peak RSS MiB |",
        "|---|---|---|" + ("---|" if epochs else "") + "---|---|---|---|",
    ]
    kiln_error = systems.get("kiln", {}).get("error")
    for name, rounds in systems.items():
        label = NAMES.get(name, name)
        runs = {k: v for k, v in rounds.items() if k != "error"}
        if not runs:
            what = ("not measurable on this CPU (below)" if name == "kiln"
                    else f"failed: {rounds.get('error', '')[:160]}")
            lines.append(f"| {label} | {what} |")
            continue
        order = sorted(runs)
        rates = [runs[k]["images_per_sec"] for k in order]
        med = statistics.median(rates)
        cells = [label, f"{med:.2f}", ", ".join(f"{x:.2f}" for x in rates)]
        if epochs:
            cells.append(f"{statistics.median(runs[k]['epoch_sec'] for k in order):.1f}")
        paired = [k for k in order if k in kiln]
        if name == "kiln" or not paired:
            cells += ["—", "—"]
        else:
            ratios = [kiln[k]["images_per_sec"] / runs[k]["images_per_sec"] for k in paired]
            cells += [f"**{statistics.median(ratios):.2f}x**", ", ".join(f"{x:.2f}" for x in ratios)]
        compile_sec = [runs[k].get("compile_sec") for k in order]
        compile_sec = [c for c in compile_sec if c is not None]
        if not compile_sec:
            cells.append("—")
        elif name == "kiln":
            cells.append(f"{compile_sec[0]:.1f} (kilnc)")
        else:
            # Round 1 is cold; Inductor's cache serves the later rounds.
            cells.append(", ".join(f"{c:.0f}" for c in compile_sec))
        cells.append(f"{max(runs[k]['peak_rss_mib'] for k in order):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    if kiln_error:
        lines.append("")
        lines.append(f"Kiln: not measurable on this CPU ({kiln_error.splitlines()[0][:200]})")
    versions = sorted({version_of(r) for rounds in systems.values()
                       for k, r in rounds.items() if k != "error" and version_of(r)})
    if versions:
        lines.append("")
        lines.append("Versions: " + "; ".join(versions))
    return "\n".join(lines)


def plot(systems, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot (run.sh installs python3-matplotlib for /usr/bin/python3)")
        return
    names = [n for n, r in systems.items() if any(k != "error" for k in r)]
    if not names:
        return
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(13, 4.8),
                                        gridspec_kw={"width_ratios": [3, 2]})
    for i, name in enumerate(names):
        runs = {k: v for k, v in systems[name].items() if k != "error"}
        rates = [runs[k]["images_per_sec"] for k in sorted(runs)]
        color = "tab:orange" if name == "kiln" else "tab:blue"
        speed.bar(i, statistics.median(rates), color=color, alpha=0.75)
        speed.scatter([i] * len(rates), rates, color="black", s=12, zorder=3)
        memory.bar(i, max(r["peak_rss_mib"] for r in runs.values()) / 1024, color=color,
                   alpha=0.75)
    labels = [textwrap.fill(NAMES.get(n, n).replace(" (Inductor)", ""), 16) for n in names]
    for ax in (speed, memory):
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(labels, fontsize=7)
    speed.set_ylabel("images/s (bar: median; dots: rounds)")
    memory.set_ylabel("peak RSS, GiB")
    fig.suptitle(f"{args.model} {args.precision} training, 2 threads: {args.cpu}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("out")
    p.add_argument("--model", required=True)
    p.add_argument("--precision", required=True)
    p.add_argument("--cpu", default="")
    p.add_argument("--omp-wait-policy", default="", help="the one every system ran with")
    args = p.parse_args()
    results = [json.loads(l) for l in open(args.results) if l.strip()]
    systems = by_system(results)
    text = table(systems, args)
    print(text)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    plot(systems, args, os.path.join(args.out, "peers.png"))
    for name, title in (("kiln_profile.txt", "Kiln --profile"),
                        ("torch_profile.txt", "PyTorch 2 eager, torch.profiler")):
        if os.path.exists(os.path.join(args.out, name)):
            print(f"{title}: {os.path.join(args.out, name)}")


if __name__ == "__main__":
    main()
