#!/usr/bin/env python3
"""Checks the learning rate of every "train" row of a metrics.jsonl against
warmup + cosine decay (kiln/ref/schedule.h) with the given slots, evaluated
at the row's step input (its step - 1), as the step's f32 result.

    schedule_lrs.py METRICS BASE_LR WARMUP_INIT_LR WARMUP_STEPS TOTAL_STEPS END_LR

Prints "N lrs follow the schedule", then the last row and whether its lr is
end_lr; exits 1 on the first mismatch.
"""
import json
import math
import struct
import sys


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def cosine(step, base, init, warmup, total, end):
    if step < warmup:
        return init + (base - init) * step / warmup
    d = total - warmup
    return end + (base - end) * (1 + math.cos(math.pi * min(step - warmup, d) / d)) / 2


def main():
    path = sys.argv[1]
    base, init, warmup, total, end = (float(a) for a in sys.argv[2:7])
    rows = [json.loads(line) for line in open(path)]
    rows = [r for r in rows if r["kind"] == "train"]
    if not rows:
        sys.exit(f"{path}: no train rows")
    for r in rows:
        want = f32(cosine(r["step"] - 1, base, init, warmup, total, end))
        if abs(r["lr"] - want) > 1e-6 * max(abs(want), 1e-3):
            sys.exit(f"{path}: step {r['step']}: lr {r['lr']}, expected {want}")
    last = rows[-1]
    print(f"{len(rows)} lrs follow the schedule")
    print(f"last: step {last['step']} lr {last['lr']:g}"
          + (" = end_lr" if f32(last["lr"]) == f32(end) else " (not end_lr yet)"))


if __name__ == "__main__":
    main()
