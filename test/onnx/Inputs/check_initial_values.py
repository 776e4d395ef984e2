"""Compares a checkpoint (safetensors) with an ONNX model's initializers,
transposed as the importer transposes them (Conv filters OIHW -> HWIO,
Gemm weights [M, K] -> [K, M]): every initializer must be in the
checkpoint, bit for bit. A checkpoint written before any step (--steps 0)
holds the values the executable starts from.

check_initial_values.py MODEL.onnx CKPT.safetensors [--parameters-only]

--parameters-only leaves out batch norm's running statistics: kiln-run
saves after a forward call, which has assigned them.
"""

import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model import read_safetensors  # noqa: E402


def main():
    model = onnx.load(sys.argv[1])
    ckpt = read_safetensors(sys.argv[2])
    roles = {}
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            roles[node.input[3]] = roles[node.input[4]] = "statistics"
        elif node.op_type == "Conv":
            roles[node.input[1]] = "filter"
        elif node.op_type == "Gemm":
            roles[node.input[1]] = "gemm"
    failures, elements = 0, 0
    checked = 0
    for init in model.graph.initializer:
        if "--parameters-only" in sys.argv and \
                roles.get(init.name) == "statistics":
            continue
        checked += 1
        want = numpy_helper.to_array(init)
        if roles.get(init.name) == "filter":
            want = want.transpose(2, 3, 1, 0)
        elif roles.get(init.name) == "gemm":
            want = want.T
        got = ckpt.get(init.name)
        if got is None:
            print(f"FAIL: {init.name} is not in the checkpoint")
            failures += 1
            continue
        if got.shape != want.shape or got.tobytes() != \
                np.ascontiguousarray(want).tobytes():
            diff = (np.count_nonzero(got != want)
                    if got.shape == want.shape else "shape")
            print(f"FAIL: {init.name}: {got.shape} vs {want.shape}, "
                  f"{diff} elements differ")
            failures += 1
        elements += want.size
    if failures:
        sys.exit(1)
    print(f"PASS: {checked} variables bitwise equal "
          f"({elements} elements)")


if __name__ == "__main__":
    main()
