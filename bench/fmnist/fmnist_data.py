"""What the Fashion-MNIST benches' Python peers share with each other and
with Kiln's recipe (bench/fmnist/run.sh): the IDX reader, the training-set
pixel statistics, the learning-rate schedule (one epoch of linear warmup from
0 to 0.1, then cosine decay to 0 over the recipe's remaining epochs) and the
augmentation (2-pixel pad, random 28x28 crop, horizontal flip) on whole numpy
batches. numpy only, so that a peer's peak memory is its own framework's."""

import gzip
import math

import numpy as np

MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set pixel statistics


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def lr_at(step, steps_per_epoch, total):
    if step < steps_per_epoch:
        return 0.1 * step / steps_per_epoch
    t = (step - steps_per_epoch) / max(1, total - steps_per_epoch)
    return 0.05 * (1 + math.cos(math.pi * min(t, 1.0)))


def augment_nhwc(images, rng):
    """images: N x 28 x 28 float32, normalized. Returns N x 28 x 28 x 1: each
    image padded by 2 black pixels (black before normalization), cropped at a
    random offset and flipped with probability 1/2."""
    n = images.shape[0]
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)), constant_values=(0 - MEAN) / STD)
    rows = rng.integers(0, 5, n)[:, None] + np.arange(28)
    cols = rng.integers(0, 5, n)[:, None] + np.arange(28)
    out = padded[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]
    flip = rng.random(n) < 0.5
    out[flip] = out[flip][:, :, ::-1]
    return out[..., None]
