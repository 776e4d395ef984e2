"""The torchvision models of issue 28 as the ONNX tests build them: random
weights from a seed (nothing is downloaded), a configurable class count and
the image size each architecture is exported at. Shared by
export_torchvision.py (which writes the ONNX file) and compare_torch.py
(which rebuilds the same module as PyTorch's reference).

Image sizes: 64x64 for every model that reduces by 32 to a 2x2 feature map
(the smallest size at which batch norm still sees several values per channel
at batch 2), except vgg11_bn. Its AdaptiveAvgPool2d((7, 7)) exports only when
the feature map's size is a multiple of 7, i.e. at 224x224, where the
classifier's first layer alone has 25088 x 4096 = 103M weights; at 32x32 the
feature map is 1x1, so the tests replace that pool by a global average pool
(the same function of a 1x1 map) and the first Linear by 512 -> 4096, and keep
everything else of torchvision's model (both changes are printed by
export_torchvision.py --describe).
"""

import torch
import torchvision

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large",
          "efficientnet_b0", "densenet121", "vgg11_bn", "squeezenet1_1",
          "shufflenet_v2_x1_0", "regnet_y_400mf"]

IMAGE_SIZE = {name: 64 for name in MODELS}
IMAGE_SIZE["vgg11_bn"] = 32


def build(name, classes, seed, dropout=True, published=False):
    """torchvision's `name` with weights drawn from `seed`. With
    dropout=False every nn.Dropout's p and every StochasticDepth's p are 0
    (the gradient comparison's "dropout off"), so the training-mode step is a
    deterministic function PyTorch and Kiln can both compute. published=True
    keeps torchvision's architecture whole (vgg11_bn included: export it at
    224x224), as bench/torchvision/run.sh measures it."""
    if name not in MODELS:
        raise SystemExit(f"unknown model {name}; one of {', '.join(MODELS)}")
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None,
                                              num_classes=classes)
    if name == "vgg11_bn" and not published:
        model.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        old = model.classifier[0]
        model.classifier[0] = torch.nn.Linear(512, old.out_features)
    if not dropout:
        for module in model.modules():
            if isinstance(module, (torch.nn.Dropout,
                                   torchvision.ops.StochasticDepth)):
                module.p = 0.0
    return model


def describe(name):
    """What the tests change in torchvision's model, for the docs."""
    if name == "vgg11_bn":
        return ("vgg11_bn at 32x32: avgpool AdaptiveAvgPool2d(1) instead of "
                "(7, 7), classifier[0] Linear(512, 4096) instead of "
                "(25088, 4096)")
    return f"{name} at {IMAGE_SIZE[name]}x{IMAGE_SIZE[name]}: unchanged"
