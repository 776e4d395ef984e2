#!/usr/bin/env python3
"""Images/s of a Kiln training run from its metrics.jsonl, as one JSON line
for the bench reports. The first two steps touch fresh memory and warm the
caches, so the rate is over the steps after them."""

import argparse
import json


def main():
    p = argparse.ArgumentParser()
    p.add_argument("metrics")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--precision", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--compile-sec", type=float, required=True)
    p.add_argument("--peak-rss-kib", type=int, required=True)
    p.add_argument("--round", type=int, default=1)
    args = p.parse_args()
    rows = [json.loads(l) for l in open(args.metrics)]
    train = [r for r in rows if r.get("kind") == "train"]
    if len(train) < 3:
        raise SystemExit(f"{args.metrics}: {len(train)} train rows, need 3 or more")
    steady = train[2:]
    seconds = steady[-1]["elapsed_sec"] - train[1]["elapsed_sec"]
    print(json.dumps({
        "system": "kiln", "model": args.model, "precision": args.precision,
        "batch": args.batch, "images_per_sec": args.batch * len(steady) / seconds,
        "compile_sec": args.compile_sec, "peak_rss_mib": args.peak_rss_kib / 1024,
        "round": args.round}))


if __name__ == "__main__":
    main()
