"""check_logits.py RESULTS.safetensors EXPECT.npy TOLERANCE: the logits
kiln-run saved (result1 of @forward) against make_model.py's numpy forward,
relative to the largest logit."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model import read_safetensors  # noqa: E402


logits = read_safetensors(sys.argv[1])["result1"].astype(np.float64)
expect = np.load(sys.argv[2])
tolerance = float(sys.argv[3])
error = np.max(np.abs(logits - expect)) / np.max(np.abs(expect))
print(f"logits {logits.shape} max relative error {error:.3g}")
if logits.shape != expect.shape or not error <= tolerance:
    print(f"FAIL: above {tolerance}")
    sys.exit(1)
print("OK")
