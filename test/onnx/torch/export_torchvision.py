"""Exports a torchvision model with random weights to ONNX as issue 28 asks:
Debian's torch 1.13, opset 13, a dynamic batch, no constant folding, in one
of the two forms the importer trains:

  train     model.train(), TrainingMode.TRAINING: BatchNormalization in its
            training form (five outputs), Dropout with its ratio
  preserve  model.eval(), TrainingMode.PRESERVE: BatchNormalization in its
            inference form, initializers behind Identity nodes (the only
            form in which efficientnet_b0's stochastic depth exports)

export_torchvision.py NAME MODE OUT.onnx [MODE OUT.onnx] [--classes N]
                      [--seed S] [--image-size P] [--no-dropout] [--describe]
                      [--published]

Several MODE OUT pairs export the same module in each form (one torch start).

--no-dropout sets every dropout probability to 0 first (the gradient
comparison's "dropout off"). The weights depend on NAME, --classes and
--seed only, so compare_torch.py rebuilds the same module.
"""

import argparse
import copy
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
import torchvision_models  # noqa: E402


def export(model, mode, out, image_size):
    if mode == "train":
        model.train()
        training = torch.onnx.TrainingMode.TRAINING
    else:
        model.eval()
        training = torch.onnx.TrainingMode.PRESERVE
    # The example batch only fixes the traced shapes; its batch is dynamic.
    example = torch.zeros(2, 3, image_size, image_size)
    with warnings.catch_warnings():
        # torch warns about every batch norm's num_batches_tracked update,
        # which ONNX has no place for (the importer does not need it).
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, out, opset_version=13,
                          training=training, do_constant_folding=False,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"},
                                        "logits": {0: "batch"}})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=torchvision_models.MODELS)
    parser.add_argument("exports", nargs="+", metavar="MODE OUT",
                        help="train or preserve, and the file to write")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--image-size", type=int)
    parser.add_argument("--no-dropout", action="store_true")
    parser.add_argument("--describe", action="store_true")
    parser.add_argument("--published", action="store_true",
                        help="torchvision's architecture unchanged (vgg11_bn: at 224)")
    args = parser.parse_args()
    exports = list(zip(args.exports[::2], args.exports[1::2]))
    if len(args.exports) % 2 or any(mode not in ("train", "preserve")
                                    for mode, _ in exports):
        parser.error("expected MODE OUT pairs, MODE train or preserve")
    model = torchvision_models.build(args.name, args.classes, args.seed,
                                     dropout=not args.no_dropout,
                                     published=args.published)
    size = args.image_size or torchvision_models.IMAGE_SIZE[args.name]
    for mode, out in exports:
        # A TRAINING export updates the batch norms' running statistics
        # (docs/onnx.md): each form starts from the module as built.
        export(copy.deepcopy(model), mode, out, size)
    if args.describe:
        print(torchvision_models.describe(args.name))


if __name__ == "__main__":
    main()
