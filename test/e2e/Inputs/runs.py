#!/usr/bin/env python3
"""Compares two training runs of compiled models.

  runs.py losses RUN_A RUN_B RTOL
      The per-step losses in RUN_A/metrics.jsonl and RUN_B/metrics.jsonl agree
      to RTOL relative (and there are as many).
  runs.py checkpoints A.safetensors B.safetensors
      Every tensor of the two checkpoints is bitwise identical.
  runs.py names A.safetensors B.safetensors
      The two checkpoints hold tensors of the same names.
"""

import json
import os
import struct
import sys


def losses(run):
    path = os.path.join(run, "metrics.jsonl")
    return [json.loads(l)["loss"] for l in open(path) if json.loads(l).get("kind") == "train"]


def tensors(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}


def main():
    if sys.argv[1] == "losses":
        a, b, rtol = losses(sys.argv[2]), losses(sys.argv[3]), float(sys.argv[4])
        if len(a) != len(b) or not a:
            sys.exit(f"FAIL: {len(a)} and {len(b)} steps")
        worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))
        print(f"{len(a)} steps, max relative difference {worst:.3e}")
        if worst > rtol:
            sys.exit(f"FAIL: above {rtol:g}")
        print("SAME LOSSES")
    elif sys.argv[1] == "checkpoints":
        a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
        if a.keys() != b.keys():
            sys.exit(f"FAIL: different tensors: {sorted(a.keys() ^ b.keys())}")
        differ = [k for k in a if a[k] != b[k]]
        if differ:
            sys.exit(f"FAIL: {len(differ)} tensors differ, e.g. {differ[:3]}")
        print(f"{len(a)} tensors bitwise identical")
    elif sys.argv[1] == "names":
        a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
        if a.keys() != b.keys():
            sys.exit(f"FAIL: different tensors: {sorted(a.keys() ^ b.keys())}")
        print(f"the same {len(a)} tensor names")
    else:
        sys.exit("usage: runs.py losses|checkpoints|names ...")


if __name__ == "__main__":
    main()
