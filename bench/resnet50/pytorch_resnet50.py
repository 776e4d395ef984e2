#!/usr/bin/env python3
"""PyTorch's training step of the same model, for the comparison in run.sh:
torchvision's ResNet-50 (v1.5), SGD with momentum, synthetic data, in its
strongest configuration on this machine (channels_last; bf16 via CPU
autocast). Prints one JSON line with images/s and peak RSS."""

import argparse
import json
import resource
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--round", type=int, default=1, help="run.sh's round, echoed")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--image-size", type=int, default=224)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet50().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    images = torch.randn(args.batch, 3, args.image_size, args.image_size).to(
        memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (args.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "system": "pytorch", "precision": args.precision, "batch": args.batch,
        "threads": args.threads, "images_per_sec": args.batch * args.steps / seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch": torch.__version__, "round": args.round}))


if __name__ == "__main__":
    main()
