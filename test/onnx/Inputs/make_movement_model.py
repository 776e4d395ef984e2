"""Writes an ONNX model of the data-movement ops as torch.onnx.export shapes
them (opset 13), for forward-values.test: a stem convolution, a channel
Split into two branches (one convolved), Concat, ShuffleNet's channel
shuffle (Reshape-Transpose-Reshape with its shapes computed by a Shape /
Gather / Unsqueeze / Concat subgraph), a channel Slice, a max pool and
VGG's Flatten of a [N, C, 3, 3] map into Gemm.

make_movement_model.py OUT.onnx --inputs IN.safetensors --expect LOGITS.npy
also writes a batch and the logits of a numpy forward pass (NCHW).
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from make_model import write_safetensors

C, H, W, CLASSES, BATCH = 8, 6, 6, 5, 4
SPLIT, GROUPS, START = (3, 5), 2, 2
KEPT = C - START


def weights(rng):
    w = {
        "stem.weight": rng.normal(0, 0.5, (C, 3, 3, 3)),
        "branch.weight": rng.normal(0, 0.5, (SPLIT[1], SPLIT[1], 1, 1)),
        "fc.weight": rng.normal(0, 0.3, (CLASSES, KEPT * 3 * 3)),
        "fc.bias": rng.normal(0, 0.1, CLASSES),
    }
    return {k: v.astype(np.float32) for k, v in w.items()}


def const(name, value):
    return helper.make_node("Constant", [], [name], name="/" + name,
                            value=numpy_helper.from_array(value))


def model(w):
    i64 = lambda v: np.array(v, np.int64)
    nodes = [
        helper.make_node("Conv", ["input", "stem.weight"], ["stem_c"],
                         name="/stem/Conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["stem_c"], ["stem"], name="/stem/Relu"),
        const("split", i64(list(SPLIT))),
        helper.make_node("Split", ["stem", "split"], ["a", "b"],
                         name="/Split", axis=1),
        helper.make_node("Conv", ["b", "branch.weight"], ["b_c"],
                         name="/branch/Conv", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["b_c"], ["b2"], name="/branch/Relu"),
        helper.make_node("Concat", ["a", "b2"], ["cat"], name="/Concat",
                         axis=1),
        # torch's channel_shuffle: x.view(n, g, c // g, h, w), transpose(1,
        # 2), view(n, -1, h, w), with n from the tensor's shape.
        helper.make_node("Shape", ["cat"], ["shape"], name="/Shape"),
        const("zero", i64(0)),
        helper.make_node("Gather", ["shape", "zero"], ["n"], name="/Gather",
                         axis=0),
        const("axes", i64([0])),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"],
                         name="/Unsqueeze"),
        const("five_rest", i64([GROUPS, C // GROUPS, H, W])),
        helper.make_node("Concat", ["n1", "five_rest"], ["five"],
                         name="/Concat_1", axis=0),
        helper.make_node("Reshape", ["cat", "five"], ["grouped"],
                         name="/Reshape"),
        helper.make_node("Transpose", ["grouped"], ["swapped"],
                         name="/Transpose", perm=[0, 2, 1, 3, 4]),
        const("four_rest", i64([-1, H, W])),
        helper.make_node("Concat", ["n1", "four_rest"], ["four"],
                         name="/Concat_2", axis=0),
        helper.make_node("Reshape", ["swapped", "four"], ["shuffled"],
                         name="/Reshape_1"),
        const("starts", i64([START])),
        const("ends", i64([np.iinfo(np.int64).max])),
        const("slice_axes", i64([1])),
        helper.make_node("Slice", ["shuffled", "starts", "ends",
                                   "slice_axes"], ["kept"], name="/Slice"),
        helper.make_node("MaxPool", ["kept"], ["pool"], name="/MaxPool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], name="/Flatten"),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"],
                         name="/fc/Gemm", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "movement",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, H, W])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", CLASSES])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 13)])


def forward(w, x):
    """numpy, NCHW: the graph's function."""
    x = x.astype(np.float64)
    n = x.shape[0]
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    stem = np.zeros((n, C, H, W))
    for i in range(3):
        for j in range(3):
            stem += np.einsum("nchw,oc->nohw", p[:, :, i:i + H, j:j + W],
                              w["stem.weight"][:, :, i, j])
    stem = np.maximum(stem, 0)
    a, b = stem[:, :SPLIT[0]], stem[:, SPLIT[0]:]
    b2 = np.maximum(np.einsum("nchw,oc->nohw", b,
                              w["branch.weight"][:, :, 0, 0]), 0)
    cat = np.concatenate([a, b2], axis=1)
    shuffled = cat.reshape(n, GROUPS, C // GROUPS, H, W).transpose(
        0, 2, 1, 3, 4).reshape(n, C, H, W)
    kept = shuffled[:, START:]
    pool = kept.reshape(n, KEPT, H // 2, 2, W // 2, 2).max(axis=(3, 5))
    return pool.reshape(n, -1) @ w["fc.weight"].T + w["fc.bias"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--expect", required=True)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    w = weights(rng)
    onnx.save(model(w), args.out)
    x = rng.normal(0, 1, (BATCH, 3, H, W)).astype(np.float32)
    labels = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    write_safetensors(args.inputs, {
        "arg0": ("F32", np.ascontiguousarray(x.transpose(0, 2, 3, 1))),
        "arg1": ("I32", labels)})
    np.save(args.expect, forward(w, x))


if __name__ == "__main__":
    main()
