"""check_logits.py RESULTS.safetensors EXPECT.npy TOLERANCE: the logits
kiln-run saved (result1 of @forward) against make_model.py's numpy forward,
relative to the largest logit."""

import json
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": np.float32, "I32": np.int32, "F64": np.float64}[
            info["dtype"]]
        out[name] = np.frombuffer(data[begin:end], dtype).reshape(
            info["shape"])
    return out


logits = read_safetensors(sys.argv[1])["result1"].astype(np.float64)
expect = np.load(sys.argv[2])
tolerance = float(sys.argv[3])
error = np.max(np.abs(logits - expect)) / np.max(np.abs(expect))
print(f"logits {logits.shape} max relative error {error:.3g}")
if logits.shape != expect.shape or not error <= tolerance:
    print(f"FAIL: above {tolerance}")
    sys.exit(1)
print("OK")
