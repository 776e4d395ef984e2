#!/usr/bin/env python3
"""PyTorch's eager training step of a torchvision model, the peer of Kiln's
executable in bench/torchvision/run.sh and bench/resnet50/run.sh: SGD with
Nesterov momentum and weight decay, softmax cross-entropy, synthetic data, 2
threads. Its strongest configuration here is chosen per model and precision:
both memory formats (contiguous NCHW and channels_last) are timed for a few
steps and the faster one is measured; bf16 runs under CPU autocast. Prints
one JSON line with images/s, the format chosen and the peak RSS."""

import argparse
import json
import resource
import time

import torch
import torchvision


def make_step(model, images, labels, precision):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def seconds_per_step(step, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50", help="a torchvision.models builder")
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--trial-steps", type=int, default=2,
                   help="steps timed per memory format to choose the faster")
    p.add_argument("--memory-format", choices=["best", "contiguous", "channels_last"],
                   default="best")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--round", type=int, default=1, help="the caller's round, echoed")
    p.add_argument("--compile", action="store_true",
                   help="train the model through torch.compile (Inductor, PyTorch 2); the "
                        "first step's time beyond a steady step is reported as compile_sec")
    p.add_argument("--profile-out", metavar="PATH",
                   help="after timing, profile one more step with torch.profiler and write "
                        "its per-op table (self CPU time) to PATH")
    args = p.parse_args()
    if args.compile and args.memory_format == "best":
        p.error("--compile needs one --memory-format (trials would compile each format)")

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=args.classes).train()
    images = torch.randn(args.batch, 3, args.image_size, args.image_size)
    labels = torch.randint(0, args.classes, (args.batch,))

    formats = ["contiguous", "channels_last"] if args.memory_format == "best" \
        else [args.memory_format]
    trials = {}
    for name in formats:
        fmt = getattr(torch, name if name == "channels_last" else "contiguous_format")
        model = model.to(memory_format=fmt)
        step = make_step(model, images.to(memory_format=fmt), labels, args.precision)
        for _ in range(args.warmup):
            step()
        if len(formats) > 1:
            trials[name] = seconds_per_step(step, args.trial_steps)
    chosen = min(trials, key=trials.get) if trials else formats[0]
    fmt = getattr(torch, chosen if chosen == "channels_last" else "contiguous_format")
    model = model.to(memory_format=fmt)
    step = make_step(torch.compile(model) if args.compile else model,
                     images.to(memory_format=fmt), labels, args.precision)
    start = time.perf_counter()
    step()
    first_step_sec = time.perf_counter() - start
    for _ in range(args.warmup - 1):
        step()
    seconds = seconds_per_step(step, args.steps)
    if args.profile_out:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            step()
        with open(args.profile_out, "w") as f:
            f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
    print(json.dumps({
        "system": "pytorch", "model": args.model, "precision": args.precision,
        "batch": args.batch, "threads": args.threads, "image_size": args.image_size,
        "images_per_sec": args.batch / seconds, "memory_format": chosen,
        "trial_sec_per_step": trials,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch": torch.__version__, "round": args.round,
        "compile": "inductor" if args.compile else None, "first_step_sec": first_step_sec,
        "compile_sec": first_step_sec - seconds if args.compile else None}))


if __name__ == "__main__":
    main()
