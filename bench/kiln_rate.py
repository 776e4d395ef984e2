#!/usr/bin/env python3
"""Images/s of a Kiln training run from its metrics.jsonl, as one JSON line
for the bench reports. The first two steps touch fresh memory and warm the
caches, so the rate is over the steps after them. With --epoch-steps N (a
run logged every N steps, N steps an epoch) one line per epoch instead, with
its seconds counted from the start of the run, as a user waits for it."""

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
    p.add_argument("--epoch-steps", type=int, help="steps per epoch: one line per epoch")
    args = p.parse_args()
    rows = [json.loads(l) for l in open(args.metrics)]
    train = [r for r in rows if r.get("kind") == "train"]
    common = {"system": "kiln", "model": args.model, "precision": args.precision,
              "batch": args.batch, "compile_sec": args.compile_sec,
              "peak_rss_mib": args.peak_rss_kib / 1024, "round": args.round}
    if args.epoch_steps:
        ends = [r["elapsed_sec"] for r in train if r["step"] % args.epoch_steps == 0]
        if not ends:
            raise SystemExit(f"{args.metrics}: no train row at a multiple of "
                             f"{args.epoch_steps} steps")
        for epoch, end in enumerate(ends, 1):
            seconds = end - (ends[epoch - 2] if epoch > 1 else 0.0)
            print(json.dumps({**common, "epoch": epoch, "epoch_sec": seconds,
                              "images_per_sec": args.batch * args.epoch_steps / seconds}))
        return
    if len(train) < 3:
        raise SystemExit(f"{args.metrics}: {len(train)} train rows, need 3 or more")
    steady = train[2:]
    seconds = steady[-1]["elapsed_sec"] - train[1]["elapsed_sec"]
    print(json.dumps({**common, "images_per_sec": args.batch * len(steady) / seconds}))


if __name__ == "__main__":
    main()
