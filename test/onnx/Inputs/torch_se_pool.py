"""Exports, with Debian's torch, a small CNN with the ops of
squeeze-and-excitation and SqueezeNet as torch.onnx.export writes them in
TrainingMode.TRAINING at opset 13: a ceil-mode MaxPool2d, torchvision's
SqueezeExcitation (AdaptiveAvgPool2d, 1x1 convolutions with biases, ReLU,
Hardsigmoid, the gate times the input), Hardswish (HardSigmoid and Mul below
opset 14), a ceil-mode AvgPool2d, a scalar product, x.mean([2, 3]) and a
Linear layer; writes a batch and torch's training-mode logits.

torch_se_pool.py OUT.onnx IN.safetensors LOGITS.npy
"""

import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from make_model import write_safetensors  # noqa: E402


class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation with MobileNetV3's activations."""

    def __init__(self, channels, squeezed):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, x):
        s = self.scale_activation(
            self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return s * x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.se = SqueezeExcitation(16, 4)
        self.act = nn.Hardswish()
        self.avg = nn.AvgPool2d(2, 2, ceil_mode=True)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.avg(self.act(self.se(x))) * 0.5
        return self.fc(x.mean([2, 3]))


def main():
    out, inputs, expect = sys.argv[1:4]
    torch.manual_seed(3)
    net = Net().train()
    with torch.no_grad():
        # Visible biases and gates away from hard sigmoid's flat parts.
        net.se.fc2.bias.uniform_(-1, 1)
        net.bn1.bias.uniform_(-0.5, 0.5)
    # 10x10 images: both pools round up and overhang, the max pool taking
    # 10 to 5 (4 in floor mode), the average pool 5 to 3 (2).
    x = torch.randn(4, 3, 10, 10)
    with torch.no_grad():
        logits = net(x).double().numpy()
    torch.onnx.export(net, x, out, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["input"],
                      output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"},
                                    "logits": {0: "batch"}})
    write_safetensors(inputs, {
        "arg0": ("F32", np.ascontiguousarray(
            x.numpy().transpose(0, 2, 3, 1))),
        "arg1": ("I32", np.zeros(4, np.int32))})
    np.save(expect, logits)


if __name__ == "__main__":
    main()
