"""Fine-tuning a PyTorch model in Kiln (issue 28): a small CNN trained
briefly in PyTorch on Fashion-MNIST, exported to ONNX (PRESERVE from eval
mode, so the running statistics are the trained ones), evaluates in the
compiled executable to PyTorch's top-1 on the first --test-images test
images before any Kiln step, and its top-1 rises when the executable trains
on the training images PyTorch did not see.

finetune_fmnist.py --kilnc K --kiln-data D --work DIR [--pretrain-images N]
    [--train-images M] [--test-images T] [--steps S] [--top1-tolerance P]
    [--min-gain G]

Both sides normalize as the executable does for gray images,
(pixel - 0.2860*255) / (0.3530*255); PyTorch evaluates in fp32 with its
running statistics (eval mode), as the executable's eval step does.
"""

import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

FMNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860 * 255, 0.3530 * 255


def run(cmd):
    start = time.time()
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: command failed ({result.returncode}): {' '.join(cmd)}\n"
                 f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    print(f"{time.time() - start:6.1f} s  {os.path.basename(cmd[0])} "
          f"{' '.join(cmd[1:3])}", file=sys.stderr)
    return result.stdout


def read_idx(split):
    with gzip.open(os.path.join(FMNIST, f"{split}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FMNIST, f"{split}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def write_idx(directory, split, images, labels):
    """A subset as uncompressed IDX files, for kiln-data."""
    n, h, w = images.shape
    with open(os.path.join(directory, f"{split}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, h, w) + images.tobytes())
    with open(os.path.join(directory, f"{split}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels.tobytes())


def normalize(images):
    x = (torch.from_numpy(images.astype(np.float32)) - MEAN) / STD
    return x[:, None]


def small_cnn():
    def block(cin, cout):
        return [torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]
    return torch.nn.Sequential(
        *block(1, 16), torch.nn.MaxPool2d(2), *block(16, 32),
        torch.nn.MaxPool2d(2), *block(32, 64), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(64, 10))


def pretrain(model, images, labels, batch=32):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    x, y = normalize(images), torch.from_numpy(labels.astype(np.int64))
    for begin in range(0, len(x) - batch + 1, batch):
        optimizer.zero_grad()
        F.cross_entropy(model(x[begin:begin + batch]),
                        y[begin:begin + batch]).backward()
        optimizer.step()


def top1(model, images, labels):
    model.eval()
    with torch.no_grad():
        logits = model(normalize(images))
    return 100.0 * float((logits.argmax(1).numpy() == labels).mean())


def kiln_top1(exe, data, model_dir, steps, examples):
    run([exe, "--data", data, "--steps", str(steps), "--eval", "--augment",
         "none", "--no-flip", "--mean", str(MEAN), "--std", str(STD),
         "--threads", "1", "--log-every", "0", "--model-dir", model_dir])
    with open(os.path.join(model_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    evals = [r for r in rows if r.get("kind") == "eval"]
    if len(evals) != 1 or evals[0]["examples"] != examples:
        sys.exit(f"FAIL: expected one evaluation of {examples} examples, got "
                 f"{evals}")
    return 100.0 * evals[0]["top1"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-data", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--pretrain-images", type=int, default=2048)
    parser.add_argument("--train-images", type=int, default=4096)
    parser.add_argument("--test-images", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--top1-tolerance", type=float, default=0.05)
    parser.add_argument("--min-gain", type=float, default=1.0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    os.makedirs(args.work, exist_ok=True)

    train_images, train_labels = read_idx("train")
    test_images, test_labels = read_idx("t10k")
    model = small_cnn()
    pretrain(model, train_images[:args.pretrain_images],
             train_labels[:args.pretrain_images])
    test_images = test_images[:args.test_images]
    test_labels = test_labels[:args.test_images]
    torch_top1 = top1(model, test_images, test_labels)

    onnx_path = os.path.join(args.work, "fmnist_cnn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), torch.zeros(2, 1, 28, 28), onnx_path,
                          opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"},
                                        "logits": {0: "batch"}})
    raw, data = (os.path.join(args.work, d) for d in ("raw", "data"))
    os.makedirs(raw, exist_ok=True)
    fresh = slice(args.pretrain_images,
                  args.pretrain_images + args.train_images)
    write_idx(raw, "train", train_images[fresh], train_labels[fresh])
    write_idx(raw, "t10k", test_images, test_labels)
    run([args.kiln_data, "idx", "--input", raw, "--output", data,
         "--train-shards", "2", "--validation-shards", "1", "--threads", "1",
         "--quiet"])
    exe = os.path.join(args.work, "fmnist_train")
    run([args.kilnc, onnx_path, "-o", exe, "--batch=32", "--lr=0.02",
         "--momentum=0.9"])

    before = kiln_top1(exe, data, os.path.join(args.work, "before"), 0,
                       args.test_images)
    print(f"top-1 before any Kiln step: PyTorch {torch_top1:.2f}%, "
          f"Kiln {before:.2f}%")
    if not abs(before - torch_top1) <= args.top1_tolerance:
        sys.exit(f"FAIL: the top-1s differ by more than "
                 f"{args.top1_tolerance} points")
    after = kiln_top1(exe, data, os.path.join(args.work, "after"), args.steps,
                      args.test_images)
    print(f"top-1 after {args.steps} Kiln steps: {after:.2f}%")
    if not after >= before + args.min_gain:
        sys.exit(f"FAIL: fine-tuning gained less than {args.min_gain} points")
    print(f"PASS: same top-1 before fine-tuning, +{after - before:.2f} points "
          f"after {args.steps} steps")


if __name__ == "__main__":
    main()
