#!/usr/bin/env python3
"""PyTorch's side of bench/fmnist/run.sh: the same ResNet-20 as
models/fmnist_resnet20.mlir (basic blocks [3, 3, 3], widths 16/32/64,
projection shortcuts, BN momentum 0.1, eps 1e-5), trained with the same recipe
(batch 128, SGD Nesterov 0.9, weight decay 5e-4, LR 0.1 with one epoch of
linear warmup then cosine decay, 2-pixel pad + random crop + horizontal flip)
on the Debian dataset-fashion-mnist files. By default augmentation runs on
whole batches in torch, so no DataLoader overhead is charged to PyTorch (its
strongest configuration); --torchvision-loader instead feeds the model the
way PyTorch's tutorials and most training scripts do: a Dataset returning
PIL images through torchvision transforms (RandomCrop with padding,
RandomHorizontalFlip, ToTensor, Normalize), batched by a DataLoader with
--workers worker processes. Prints one JSON line per epoch with its time and
test top-1."""

import argparse
import json
import os
import resource
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from fmnist_data import MEAN, STD, load_idx, lr_at


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet20(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for i, width in enumerate([16, 32, 64]):
            for j in range(3):
                layers.append(Block(cin, width, 2 if i > 0 and j == 0 else 1))
                cin = width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def augment(images, generator):
    """2-pixel zero pad (black, before normalization), random 28x28 crop and
    horizontal flip, per image."""
    n = images.shape[0]
    padded = F.pad(images, (2, 2, 2, 2), value=(0 - MEAN) / STD)
    dx = torch.randint(0, 5, (n,), generator=generator)
    dy = torch.randint(0, 5, (n,), generator=generator)
    rows = (dy[:, None] + torch.arange(28)[None, :])[:, None, :, None].expand(n, 1, 28, 32)
    cropped = padded.gather(2, rows)
    cols = (dx[:, None] + torch.arange(28)[None, :])[:, None, None, :].expand(n, 1, 28, 28)
    cropped = cropped.gather(3, cols)
    flip = torch.rand(n, generator=generator) < 0.5
    cropped[flip] = cropped[flip].flip(3)
    return cropped


class TorchvisionFashionMnist(torch.utils.data.Dataset):
    """What torchvision.datasets.FashionMNIST does per sample (a PIL image
    through the transform), over the arrays already loaded."""

    def __init__(self, images, labels):
        import torchvision.transforms as T
        from PIL import Image
        self.images, self.labels, self.to_pil = images, labels, Image.fromarray
        self.transform = T.Compose([T.RandomCrop(28, padding=2), T.RandomHorizontalFlip(),
                                    T.ToTensor(), T.Normalize((MEAN,), (STD,))])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.to_pil(self.images[i], mode="L")), int(self.labels[i])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--schedule-epochs", type=int, default=3,
                   help="length of the cosine schedule (the recipe's 3 epochs)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--eval", action="store_true")
    p.add_argument("--torchvision-loader", action="store_true",
                   help="per-sample torchvision transforms and a DataLoader (see above)")
    p.add_argument("--workers", type=int, default=0,
                   help="DataLoader worker processes with --torchvision-loader")
    p.add_argument("--bf16", action="store_true",
                   help="train under torch.autocast('cpu', bfloat16), as Kiln's --precision=bf16")
    p.add_argument("--compile", action="store_true",
                   help="train the model through torch.compile (Inductor); one untimed step "
                        "at the schedule's learning rate 0 compiles it first")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    d = args.data
    raw_x = load_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))
    raw_y = load_idx(os.path.join(d, "train-labels-idx1-ubyte.gz"))
    train_x = torch.from_numpy(raw_x.copy())
    train_y = torch.from_numpy(raw_y.astype(np.int64))
    test_x = torch.from_numpy(load_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).copy())
    test_y = torch.from_numpy(load_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64))
    normalize = lambda x: ((x.float() / 255.0 - MEAN) / STD).unsqueeze(1)
    train_x, test_x = normalize(train_x), normalize(test_x)

    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = ResNet20().to(memory_format=fmt)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    # Full batches only, as Kiln's input pipeline delivers them.
    steps_per_epoch = len(train_x) // args.batch
    total = steps_per_epoch * args.schedule_epochs

    def batches():
        """(images, labels) of one epoch."""
        if args.torchvision_loader:
            yield from loader
            return
        order = torch.randperm(len(train_x), generator=generator)
        for i in range(steps_per_epoch):
            idx = order[i * args.batch:(i + 1) * args.batch]
            yield augment(train_x[idx], generator), train_y[idx]

    if args.torchvision_loader:
        loader = torch.utils.data.DataLoader(
            TorchvisionFashionMnist(raw_x, raw_y), batch_size=args.batch, shuffle=True,
            drop_last=True, num_workers=args.workers, generator=generator)

    train_model = torch.compile(model) if args.compile else model

    def train_step(x, y, lr):
        for g in optimizer.param_groups:
            g["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = F.cross_entropy(train_model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    compile_sec = None
    if args.compile:
        start = time.perf_counter()
        train_step(augment(train_x[:args.batch], generator).contiguous(memory_format=fmt),
                   train_y[:args.batch], 0.0)
        compile_sec = time.perf_counter() - start

    step = 0
    for epoch in range(args.epochs):
        model.train()
        start = time.perf_counter()
        for x, y in batches():
            loss = train_step(x.contiguous(memory_format=fmt), y,
                              lr_at(step, steps_per_epoch, total))
            step += 1
        seconds = time.perf_counter() - start
        row = {"system": "pytorch", "epoch": epoch + 1, "epoch_sec": seconds,
               "images_per_sec": steps_per_epoch * args.batch / seconds, "channels_last": args.channels_last,
               "loader": f"torchvision, {args.workers} workers" if args.torchvision_loader else "batched",
               "precision": "bf16" if args.bf16 else "fp32",
               "threads": args.threads, "loss": loss.item(),
               "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "torch": torch.__version__}
        if args.compile:
            row["compile"] = "inductor"
            row["compile_sec"] = compile_sec
        if args.eval:
            model.eval()
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
                correct = sum((model(test_x[i:i + 1000].contiguous(memory_format=fmt))
                               .argmax(1) == test_y[i:i + 1000]).sum().item()
                              for i in range(0, len(test_x), 1000))
            row["top1"] = correct / len(test_x)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
