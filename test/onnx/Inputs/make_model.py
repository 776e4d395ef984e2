"""Writes small ONNX models for the importer's tests, as torch.onnx.export
shapes them (opset 13): a ResNet-style CNN (conv-bn-relu, a residual block,
max pool, global pool, a shape subgraph before Reshape, Gemm) in the
training form (BatchNormalization with five outputs) or the eval-mode
PRESERVE form (inference BatchNormalization, initializers behind Identity),
and the broken models the negative tests need.

make_model.py KIND OUT.onnx [--inputs IN.safetensors --expect LOGITS.npy]
writes, besides the model, a batch and the logits a numpy forward pass in
training mode (batch statistics) computes from the initializers.
"""

import argparse
import json
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

C = 8  # channels
H = W = 6
CLASSES = 5
BATCH = 4


def weights(rng):
    w = {
        "conv1.weight": rng.normal(0, 0.5, (C, 3, 3, 3)),
        "bn1.weight": rng.uniform(0.5, 1.5, C),
        "bn1.bias": rng.normal(0, 0.1, C),
        "bn1.running_mean": rng.normal(0, 0.1, C),
        "bn1.running_var": rng.uniform(0.5, 1.5, C),
        "layer1.0.conv1.weight": rng.normal(0, 0.3, (C, C, 3, 3)),
        "layer1.0.bn1.weight": rng.uniform(0.5, 1.5, C),
        "layer1.0.bn1.bias": rng.normal(0, 0.1, C),
        "layer1.0.bn1.running_mean": np.zeros(C),
        "layer1.0.bn1.running_var": np.ones(C),
        "fc.weight": rng.normal(0, 0.3, (CLASSES, C)),
        "fc.bias": rng.normal(0, 0.1, CLASSES),
    }
    return {k: v.astype(np.float32) for k, v in w.items()}


def model(kind, w, opset=13):
    nodes = []
    init_names = {k: k for k in w}
    if kind == "preserve":
        # PRESERVE exports read initializers through Identity nodes.
        for k in w:
            nodes.append(helper.make_node("Identity", [k], ["onnx::" + k],
                                          name=f"Identity_{k}"))
            init_names[k] = "onnx::" + k
    bn_kind = "train" if kind != "preserve" else "preserve"

    def n(k):
        return init_names[k]

    def cbr(x, conv, bn, out, relu=True, residual=None):
        nodes.append(helper.make_node("Conv", [x, n(conv)], [out + "_c"],
                                      name=f"/{conv}/Conv",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      strides=[1, 1]))
        ins = [out + "_c"] + [n(f"{bn}.{p}") for p in
                              ("weight", "bias", "running_mean",
                               "running_var")]
        outs = ([out + "_b", out + "_rm", out + "_rv", out + "_sm",
                 out + "_sv"] if bn_kind == "train" else [out + "_b"])
        nodes.append(helper.make_node("BatchNormalization", ins, outs,
                                      name=f"/{bn}/BatchNormalization",
                                      epsilon=1e-5, momentum=0.9))
        y = out + "_b"
        if residual:
            nodes.append(helper.make_node("Add", [y, residual], [out + "_a"],
                                          name=f"/{bn}/Add"))
            y = out + "_a"
        if relu:
            nodes.append(helper.make_node("Relu", [y], [out],
                                          name=f"/{bn}/Relu"))
            return out
        return y

    x = cbr("input", "conv1.weight", "bn1", "stem")
    if "se.fc1.weight" in w:
        # SqueezeNet's pool: 3x3, stride 2, ceil_mode (6x6 to 3x3).
        nodes.append(helper.make_node("MaxPool", [x], ["pool"],
                                      name="/maxpool", kernel_shape=[3, 3],
                                      strides=[2, 2], ceil_mode=1))
    else:
        nodes.append(helper.make_node("MaxPool", [x], ["pool"],
                                      name="/maxpool", kernel_shape=[3, 3],
                                      strides=[1, 1], pads=[1, 1, 1, 1]))
    cbr("pool", "layer1.0.conv1.weight", "layer1.0.bn1", "block",
        residual="pool")
    features = "block"
    if "se.fc1.weight" in w:
        # A squeeze-and-excitation block as torchvision's
        # SqueezeExcitation exports it: global pool, 1x1 convolutions with
        # biases, ReLU, HardSigmoid, the gate times the block; then a
        # division by a scalar Constant.
        nodes += [
            helper.make_node("GlobalAveragePool", ["block"], ["se_pool"],
                             name="/se/avgpool/GlobalAveragePool"),
            helper.make_node("Conv", ["se_pool", n("se.fc1.weight"),
                                      n("se.fc1.bias")], ["se_fc1"],
                             name="/se/fc1/Conv", kernel_shape=[1, 1]),
            helper.make_node("Relu", ["se_fc1"], ["se_relu"],
                             name="/se/activation/Relu"),
            helper.make_node("Conv", ["se_relu", n("se.fc2.weight"),
                                      n("se.fc2.bias")], ["se_fc2"],
                             name="/se/fc2/Conv", kernel_shape=[1, 1]),
            helper.make_node("HardSigmoid", ["se_fc2"], ["se_gate"],
                             name="/se/scale_activation/HardSigmoid",
                             alpha=1.0 / 6.0),
            helper.make_node("Mul", ["se_gate", "block"], ["se"],
                             name="/se/Mul"),
            helper.make_node("Constant", [], ["two"], name="/Constant_3",
                             value=numpy_helper.from_array(
                                 np.array(2, np.float32))),
            helper.make_node("Div", ["se", "two"], ["se_half"],
                             name="/Div"),
        ]
        features = "se_half"
    if "head.bias" in w:
        # A convolution with a bias and no batch norm after it (which would
        # cancel the bias), so the logits show whether the bias is applied.
        nodes.append(helper.make_node(
            "Conv", ["block", n("head.weight"), n("head.bias")], ["head"],
            name="/head/Conv", kernel_shape=[1, 1]))
        features = "head"
    if "dw.weight" in w:
        # MobileNet's and ShuffleNet's grouped convolutions: a depthwise 3x3
        # with channel multiplier 2 and a bias, then a 1x1 in 4 groups.
        nodes += [
            helper.make_node("Conv", [features, n("dw.weight"), n("dw.bias")],
                             ["dw"], name="/dw/Conv", kernel_shape=[3, 3],
                             pads=[1, 1, 1, 1], group=C),
            helper.make_node("Conv", ["dw", n("gc.weight")], ["gc"],
                             name="/gc/Conv", kernel_shape=[1, 1], group=4),
        ]
        features = "gc"
    nodes.append(helper.make_node("GlobalAveragePool", [features], ["gap"],
                                  name="/avgpool/GlobalAveragePool"))
    # torch's x.view(x.size(0), -1): a shape subgraph folded at import.
    nodes += [
        helper.make_node("Shape", ["gap"], ["shape"], name="/Shape"),
        helper.make_node("Constant", [], ["zero"], name="/Constant",
                         value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["shape", "zero"], ["batch"],
                         name="/Gather", axis=0),
        helper.make_node("Constant", [], ["axes"], name="/Constant_1",
                         value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"],
                         name="/Unsqueeze"),
        helper.make_node("Constant", [], ["minus1"], name="/Constant_2",
                         value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["batch1", "minus1"], ["target"],
                         name="/Concat", axis=0),
        helper.make_node("Reshape", ["gap", "target"], ["flat"],
                         name="/Reshape"),
        helper.make_node("Gemm", ["flat", n("fc.weight"), n("fc.bias")],
                         ["logits"], name="/fc/Gemm", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, H, W])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", CLASSES])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def broken(kind, w):
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                      ["batch", 3, H, W])
    y = helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT,
        ["batch", C, H - 2, W - 2] if kind == "folded"
        else ["batch", C] if kind == "biased" else ["batch", 3, H, W])
    inits = [numpy_helper.from_array(w["conv1.weight"], "conv1.weight")]
    opset = 13
    if kind == "unsupported":
        nodes = [helper.make_node("LRN", ["input"], ["logits"],
                                  name="/norm/LRN", size=3)]
    elif kind in ("folded", "biased"):
        # Constant folding makes the folded weights and biases and torch
        # names them onnx::Conv_<n>; a model without batch norm (SqueezeNet)
        # keeps its state-dict names.
        weight, bias = (("onnx::Conv_7", "onnx::Conv_8") if kind == "folded"
                        else ("conv1.weight", "conv1.bias"))
        inits = [numpy_helper.from_array(w["conv1.weight"], weight),
                 numpy_helper.from_array(np.zeros(C, np.float32), bias)]
        conv_out = "logits" if kind == "folded" else "features"
        nodes = [helper.make_node("Conv", ["input", weight, bias], [conv_out],
                                  name="/conv1/Conv", kernel_shape=[3, 3])]
        if kind == "biased":
            nodes += [helper.make_node("GlobalAveragePool", ["features"],
                                       ["pooled"], name="/pool"),
                      helper.make_node("Flatten", ["pooled"], ["logits"],
                                       name="/flatten")]
    elif kind == "dynamic":
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                          ["batch", 3, "height", W])
        nodes = [helper.make_node("Relu", ["input"], ["logits"], name="r")]
    elif kind == "unchecked":
        # An output without a shape: the ONNX checker's error.
        y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)
        nodes = [helper.make_node("Relu", ["input"], ["logits"], name="r")]
    elif kind == "future-opset":
        nodes = [helper.make_node("Relu", ["input"], ["logits"], name="r")]
        opset = 99
    graph = helper.make_graph(nodes, kind, [x], [y], inits)
    m = helper.make_model(graph,
                          opset_imports=[helper.make_opsetid("", opset)])
    return m


def forward(w, x):
    """numpy: the imported training step's forward, batch statistics."""
    def conv(x, f):
        n, c, h, wd = x.shape
        p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, f.shape[0], h, wd), np.float64)
        for i in range(3):
            for j in range(3):
                out += np.einsum("nchw,oc->nohw", p[:, :, i:i + h, j:j + wd],
                                 f[:, :, i, j])
        return out

    def bn(x, p):
        mean = x.mean(axis=(0, 2, 3), keepdims=True)
        var = x.var(axis=(0, 2, 3), keepdims=True)
        g = w[p + ".weight"].reshape(1, -1, 1, 1)
        b = w[p + ".bias"].reshape(1, -1, 1, 1)
        return (x - mean) / np.sqrt(var + 1e-5) * g + b

    def maxpool(x):
        n, c, h, wd = x.shape
        p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        return np.max([p[:, :, i:i + h, j:j + wd] for i in range(3)
                       for j in range(3)], axis=0)

    def maxpool_ceil(x):
        # 3x3, stride 2, ceil mode, computed window by window: PyTorch's
        # output size ceil((6 - 3) / 2) + 1 = 3, the last window [4, 7)
        # clipped to the input's [4, 6).
        n, c, h, wd = x.shape
        out = np.zeros((n, c, 3, 3))
        for i in range(3):
            for j in range(3):
                out[:, :, i, j] = x[:, :, 2 * i:2 * i + 3,
                                    2 * j:2 * j + 3].max(axis=(2, 3))
        return out

    def conv1x1(x, p):
        return (np.einsum("nchw,oc->nohw", x, w[p + ".weight"][:, :, 0, 0]) +
                w[p + ".bias"].reshape(1, -1, 1, 1))

    x = x.astype(np.float64)
    s = np.maximum(bn(conv(x, w["conv1.weight"]), "bn1"), 0)
    pooled = maxpool_ceil(s) if "se.fc1.weight" in w else maxpool(s)
    b = np.maximum(bn(conv(pooled, w["layer1.0.conv1.weight"]),
                      "layer1.0.bn1") + pooled, 0)
    if "se.fc1.weight" in w:
        g = b.mean(axis=(2, 3), keepdims=True)
        g = conv1x1(np.maximum(conv1x1(g, "se.fc1"), 0), "se.fc2")
        gate = np.clip(g / 6 + 0.5, 0, 1)
        b = gate * b / 2
    if "head.bias" in w:
        b = (np.einsum("nchw,oc->nohw", b, w["head.weight"][:, :, 0, 0]) +
             w["head.bias"].reshape(1, -1, 1, 1))
    if "dw.weight" in w:
        # Output channel o of a convolution in G groups reads input group
        # o // (O / G).
        f = w["dw.weight"]
        per = f.shape[0] // C
        n_, c_, h, wd = b.shape
        p = np.pad(b, ((0, 0), (0, 0), (1, 1), (1, 1)))
        d = np.zeros((n_, f.shape[0], h, wd))
        for o in range(f.shape[0]):
            for i in range(3):
                for j in range(3):
                    d[:, o] += p[:, o // per, i:i + h, j:j + wd] * f[o, 0, i, j]
        b = d + w["dw.bias"].reshape(1, -1, 1, 1)
        g = w["gc.weight"][:, :, 0, 0]
        ins = g.shape[1]
        outs = g.shape[0] // 4
        b = np.concatenate(
            [np.einsum("nchw,oc->nohw", b[:, k * ins:(k + 1) * ins],
                       g[k * outs:(k + 1) * outs]) for k in range(4)], axis=1)
    gap = b.mean(axis=(2, 3))
    return gap @ w["fc.weight"].T + w["fc.bias"]


def write_safetensors(path, tensors):
    header, data = {}, b""
    for name, (dtype, array) in tensors.items():
        raw = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def read_safetensors(path):
    """The tensors of a safetensors file as numpy arrays of their shapes
    (the reader of the checks next to this writer)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4"}[
            info["dtype"]]
        out[name] = np.frombuffer(data[begin:end], dtype).reshape(
            info["shape"])
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["train", "preserve", "opset11", "bias", "se", "grouped",
                                         "unsupported", "folded", "biased", "dynamic", "unchecked",
                                         "future-opset", "garbage"])
    parser.add_argument("out")
    parser.add_argument("--inputs")
    parser.add_argument("--expect")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    w = weights(rng)
    if args.kind == "garbage":
        with open(args.out, "wb") as f:
            f.write(b"\x08\xff\xff this is not a protobuf message")
        return
    if args.kind == "bias":
        w["head.weight"] = rng.normal(0, 0.3, (C, C, 1, 1)).astype(np.float32)
        w["head.bias"] = rng.normal(0, 0.5, C).astype(np.float32)
        m = model("train", w)
    elif args.kind == "se":
        w["se.fc1.weight"] = rng.normal(0, 0.5, (2, C, 1, 1)).astype(np.float32)
        w["se.fc1.bias"] = rng.normal(0, 0.3, 2).astype(np.float32)
        w["se.fc2.weight"] = rng.normal(0, 1.0, (C, 2, 1, 1)).astype(np.float32)
        w["se.fc2.bias"] = rng.normal(0, 1.0, C).astype(np.float32)
        m = model("train", w)
    elif args.kind == "grouped":
        w["dw.weight"] = rng.normal(0, 0.5, (2 * C, 1, 3, 3)).astype(np.float32)
        w["dw.bias"] = rng.normal(0, 0.5, 2 * C).astype(np.float32)
        w["gc.weight"] = rng.normal(0, 0.5, (C, 2 * C // 4, 1, 1)).astype(np.float32)
        m = model("train", w)
    elif args.kind in ("train", "preserve"):
        m = model(args.kind, w)
    elif args.kind == "opset11":
        # Through the version converter: opset 11's Unsqueeze takes its axes
        # as an attribute.
        m = model("train", w)
        m.opset_import[0].version = 11
        for node in m.graph.node:
            if node.op_type == "Unsqueeze":
                node.input.pop()
                node.attribute.append(helper.make_attribute("axes", [0]))
    else:
        m = broken(args.kind, w)
    onnx.save(m, args.out)
    if args.inputs:
        x = rng.normal(0, 1, (BATCH, 3, H, W)).astype(np.float32)
        labels = rng.integers(0, CLASSES, BATCH).astype(np.int32)
        write_safetensors(args.inputs, {
            "arg0": ("F32", np.ascontiguousarray(x.transpose(0, 2, 3, 1))),
            "arg1": ("I32", labels)})
        np.save(args.expect, forward(w, x))


if __name__ == "__main__":
    main()
