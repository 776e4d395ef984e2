"""Writes an ONNX model whose initializers are large, as torch.onnx.export
shapes a training-mode CNN (opset 13): a stem convolution, BLOCKS blocks of
a WIDTH x WIDTH 3x3 convolution, batch norm (five outputs) and ReLU, global
pooling, Flatten and Gemm. The importer's initial-value tests use it: its
weights are above the size kept inline in the IR (docs/onnx.md, "Initial
values"), and with --blocks 10 --width 512 it has a ResNet-50-sized set of
parameters (23.6 M) for the measurements there.

make_wide_model.py OUT.onnx [--width C] [--blocks B] [--classes K] [--seed S]
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H = W = 8


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--width", type=int, default=48)
    p.add_argument("--blocks", type=int, default=1)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    c = a.width
    inits, nodes = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def block(x, name, cin, out):
        # He-normal weights and non-trivial batch-norm values: every element
        # differs, so a transposition or a shifted block shows.
        w = init(f"{name}.conv.weight",
                 rng.normal(0, np.sqrt(2.0 / (9 * cin)), (c, cin, 3, 3)))
        nodes.append(helper.make_node("Conv", [x, w], [out + "_c"],
                                      name=f"/{name}/conv/Conv",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        bn = [init(f"{name}.bn.weight", rng.uniform(0.5, 1.5, c)),
              init(f"{name}.bn.bias", rng.normal(0, 0.1, c)),
              init(f"{name}.bn.running_mean", rng.normal(0, 0.1, c)),
              init(f"{name}.bn.running_var", rng.uniform(0.5, 1.5, c))]
        nodes.append(helper.make_node(
            "BatchNormalization", [out + "_c"] + bn,
            [out + "_b", out + "_rm", out + "_rv", out + "_sm", out + "_sv"],
            name=f"/{name}/bn/BatchNormalization", epsilon=1e-5,
            momentum=0.9))
        nodes.append(helper.make_node("Relu", [out + "_b"], [out],
                                      name=f"/{name}/Relu"))
        return out

    x = block("input", "stem", 3, "stem")
    for i in range(a.blocks):
        x = block(x, f"layer{i}", c, f"layer{i}")
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"],
                                  name="/avgpool/GlobalAveragePool"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"],
                                  name="/Flatten", axis=1))
    fc_w = init("fc.weight", rng.normal(0, 0.01, (a.classes, c)))
    fc_b = init("fc.bias", rng.normal(0, 0.01, a.classes))
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"],
                                  name="/fc/Gemm", transB=1))
    graph = helper.make_graph(
        nodes, "wide",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 3, H, W])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", a.classes])],
        inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
