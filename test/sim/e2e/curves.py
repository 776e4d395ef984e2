#!/usr/bin/env python3
"""curves.py RUN_A RUN_B: the per-step losses of two runs (metrics.jsonl)
agree as kilnc-systolic-mpi.test states: step 0 equal, step 1 within 1e-5,
every step within 2e-3 relative (bf16 weight rounding, see the test)."""
import json
import os
import sys


def losses(run):
    lines = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
    return [l["loss"] for l in lines if l["kind"] == "train"]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(a) != len(b) or len(a) < 2:
    sys.exit("FAIL: %d and %d losses" % (len(a), len(b)))
rel = [abs(x - y) / abs(y) for x, y in zip(a, b)]
for s, (x, y, r) in enumerate(zip(a, b, rel)):
    print("step %2d  %.9g  %.9g  rel %.2e" % (s, x, y, r))
if rel[0] > 1e-7:
    sys.exit("FAIL: step 0 differs")
print("step 0 equal")
if rel[1] > 1e-5:
    sys.exit("FAIL: step 1 differs by %.2e (the averaged gradient)" % rel[1])
print("step 1 within 1e-5")
if max(rel) > 2e-3:
    sys.exit("FAIL: max relative difference %.2e > 2e-3" % max(rel))
print("PASS: %d steps, max relative difference %.2e" % (len(a), max(rel)))
