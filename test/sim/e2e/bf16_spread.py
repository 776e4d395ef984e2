#!/usr/bin/env python3
"""Is the simulator's bf16 step as close to kiln-run's as bf16 allows?

For an ONNX model, one bf16 training step (step-0 logits and loss) on:

  kiln-run f32       the step without --kiln-bf16
  kiln-run bf16      the reference of the device's numerics
  kiln-run bf16'     the same with the input scaled by 1 + --perturb, which
                     changes a fraction of the input elements by one bf16
                     ulp (printed) and nothing else
  kiln-sim bf16      the systolic program, functional mode

and prints each pair's difference (loss relative, logits relative RMS).
A deep network in bf16 turns a one-ulp change anywhere into a spread of
its logits; a device whose roundings differ from kiln-run's (f32 against
double accumulation) lands within that spread. Fails when kiln-sim is
further from kiln-run bf16 than kiln-run bf16' is, or than bf16 is from
f32 (docs/systolic.md, "bf16: the simulator against kiln-run").

Optionally exports torchvision's model truncated after its first
--blocks feature blocks, with a pooled linear head (needs torch).
"""
import argparse
import json
import math
import os
import re
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from compare_kiln_run import floats, run  # noqa: E402


def export_truncated(name, blocks, size, out):
    import warnings

    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "onnx", "torch"))
    import torchvision_models
    features = torchvision_models.build(name, 10, 0, dropout=False).features
    features = features[:blocks]
    with torch.no_grad():
        channels = features(torch.zeros(2, 3, size, size)).shape[1]
    torch.manual_seed(1)
    model = torch.nn.Sequential(features, torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(),
                                torch.nn.Linear(channels, 10)).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros(2, 3, size, size), out,
                          opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["input"],
                          output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"},
                                        "logits": {0: "batch"}})


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, array) in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def bf16_bits(x):
    """Round to nearest even, as kiln/ref/bf16.h."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def parse_run(text):
    loss = float(re.search(r"^result0: tensor<f32> = \[([^\]]*)\]", text,
                           re.M).group(1))
    logits = floats(re.search(r"^result1: tensor<[^>]*> = \[([^\]]*)\]",
                              text, re.M).group(1))
    return loss, logits


def parse_sim(text):
    loss = float(re.search(r"result0 (\S+)", text).group(1))
    logits = floats(re.search(r"result1 \[([^\]]*)\]", text).group(1))
    return loss, logits


def difference(a, b):
    (la, xa), (lb, xb) = a, b
    if len(xa) != len(xb):
        sys.exit("the runs disagree on the number of logits")
    rms = math.sqrt(sum((x - y) ** 2 for x, y in zip(xa, xb)) /
                    sum(x * x for x in xa))
    return abs(la - lb) / abs(la), rms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", help="an ONNX model (written by --torchvision)")
    for tool in ("kiln-translate", "kiln-opt", "kiln-run", "kiln-sim"):
        p.add_argument("--" + tool, default=tool)
    p.add_argument("--torchvision", help="export this torchvision model first")
    p.add_argument("--blocks", type=int, help="its feature blocks kept")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--perturb", type=float, default=1e-5)
    a = p.parse_args()
    if a.torchvision:
        export_truncated(a.torchvision, a.blocks, a.image_size, a.model)
    with tempfile.TemporaryDirectory() as tmp:
        imported, steps = tmp + "/model.mlir", {}
        run([a.kiln_translate, "--import-onnx", a.model,
             "--elide-values-larger-than=-1", "-o", imported])
        for precision, flags in (("f32", []), ("bf16", ["--kiln-bf16"])):
            steps[precision] = "%s/%s.mlir" % (tmp, precision)
            run([a.kiln_opt, imported] + flags +
                ["--kiln-build-train-step",
                 "--kiln-specialize-batch=batch=%d" % a.batch,
                 "-o", steps[precision]])
        results = {}
        for precision in ("f32", "bf16"):
            results["kiln-run " + precision] = parse_run(run(
                [a.kiln_run, steps[precision], "--synthetic-inputs",
                 "--batch=%d" % a.batch, "--seed=%d" % a.seed,
                 "--print-results", "--print-limit=100000"]))
        # The one-ulp spread: explicit inputs, then scaled.
        rng = np.random.default_rng(a.seed)
        x = rng.standard_normal((a.batch, a.image_size, a.image_size, 3),
                                dtype=np.float32)
        labels = rng.integers(0, 10, a.batch).astype(np.int32)
        scaled = (x * np.float32(1 + a.perturb)).astype(np.float32)
        changed = float(np.mean(bf16_bits(x) != bf16_bits(scaled)))
        spread = []
        for i, image in enumerate((x, scaled)):
            path = "%s/in%d.safetensors" % (tmp, i)
            write_safetensors(path, {"arg0": ("BF16", bf16_bits(image)),
                                     "arg1": ("I32", labels)})
            spread.append(parse_run(run(
                [a.kiln_run, steps["bf16"], "--inputs", path,
                 "--print-results", "--print-limit=100000"])))
        run([a.kiln_opt, steps["bf16"], "--kiln-convert-to-sa",
             "-o", tmp + "/sa.mlir"])
        run([a.kiln_translate, "--export-sa-program", tmp + "/sa.mlir",
             "-o", tmp + "/step.ksap"])
        results["kiln-sim bf16"] = parse_sim(run(
            [a.kiln_sim, tmp + "/step.ksap", "--mode=functional",
             "--seed=%d" % a.seed, "--print-outputs"]))
    rows = [("kiln-run bf16 vs f32",
             difference(results["kiln-run f32"], results["kiln-run bf16"])),
            ("kiln-run bf16 vs bf16 with %.2g%% of inputs one ulp off" %
             (100 * changed), difference(spread[0], spread[1])),
            ("kiln-sim vs kiln-run bf16",
             difference(results["kiln-run bf16"], results["kiln-sim bf16"]))]
    for name, (loss, rms) in rows:
        print("%-52s loss %.2e  logits RMS %.2e" % (name, loss, rms))
    sim = rows[2][1][1]
    if sim > rows[0][1][1] or sim > rows[1][1][1]:
        sys.exit("kiln-sim is further from kiln-run bf16 than bf16's own "
                 "spread")
    print("kiln-sim is within bf16's spread")


if __name__ == "__main__":
    main()
