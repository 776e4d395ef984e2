"""Images for --predict (test/e2e/predict.test) and the reference answers.

  make DIR OUT B    writes JPEGs (RGB of two sizes, gray), bad files and
                    labels into DIR, then preprocesses the JPEGs as the
                    evaluation pipeline specifies (center crop of 0.875 of
                    the short side, half-pixel bilinear resize to 8x8,
                    ImageNet normalization), decoded by torchvision, not by
                    Kiln, into OUT: kiln-run's eval_step arguments, batch B
  check RESULTS OUT compares the executable's output OUT with the top-5 of
                    kiln-run's logits (RESULTS, --save-results) to 2e-6
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "onnx",
                                "Inputs"))
from make_model import read_safetensors, write_safetensors  # noqa: E402

SIZE = 8
# The files the executable classifies, in order: (name, channels).
IMAGES = [("a.jpg", 3), ("b.jpg", 3), ("gray.jpg", 1)]
# kiln_rt_dataset_config_init's ImageNet statistics, on 0..255 pixels.
MEAN = np.array([0.485, 0.456, 0.406], np.float32) * np.float32(255)
STD = np.array([0.229, 0.224, 0.225], np.float32) * np.float32(255)


def smooth_image(rng, channels, height, width):
    """Smooth content, which JPEG keeps well."""
    import torch
    y, x = np.mgrid[0:height, 0:width]
    planes = []
    for _ in range(channels):
        fx, fy, phase = rng.uniform(0.2, 0.9, 3)
        planes.append(128 + 100 * np.sin(fx * x + fy * y + 6 * phase))
    return torch.from_numpy(np.stack(planes).round().astype(np.uint8))


def make(directory):
    from torchvision.io import encode_jpeg
    rng = np.random.default_rng(29)
    shapes = {"a.jpg": (10, 10), "b.jpg": (16, 20), "gray.jpg": (12, 12)}
    for name, channels in IMAGES:
        jpeg = encode_jpeg(smooth_image(rng, channels, *shapes[name]), quality=95)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(jpeg.numpy().tobytes())
    with open(os.path.join(directory, "a.jpg"), "rb") as f:
        whole = f.read()
    with open(os.path.join(directory, "truncated.jpg"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    # A PNG's signature and header: what a user may hand in by mistake.
    with open(os.path.join(directory, "photo.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + bytes(17))
    with open(os.path.join(directory, "labels.txt"), "w") as f:
        f.write("zero\none\ntwo\nthree\nfour\nfive\n")
    with open(os.path.join(directory, "labels3.txt"), "w") as f:
        f.write("zero\none\ntwo\n")


def taps(src, out):
    s = np.clip((np.arange(out) + 0.5) * (src / out) - 0.5, 0, src - 1)
    lo = s.astype(np.int64)
    return lo, np.minimum(lo + 1, src - 1), (s - lo).astype(np.float32)


def preprocess(path):
    import torch
    from torchvision.io import decode_jpeg, ImageReadMode
    data = torch.frombuffer(bytearray(open(path, "rb").read()), dtype=torch.uint8)
    # Gray JPEGs replicated to RGB, as --convert-channels has libjpeg do.
    image = decode_jpeg(data, mode=ImageReadMode.RGB).permute(1, 2, 0).numpy()
    h, w, _ = image.shape
    side = int(0.875 * min(w, h))
    x0, y0 = (w - side + 1) // 2, (h - side + 1) // 2
    crop = image[y0:y0 + side, x0:x0 + side].astype(np.float32)
    x_lo, x_hi, x_w = taps(side, SIZE)
    y_lo, y_hi, y_w = taps(side, SIZE)
    rows = crop[:, x_lo] + x_w[None, :, None] * (crop[:, x_hi] - crop[:, x_lo])
    out = rows[y_lo] + y_w[:, None, None] * (rows[y_hi] - rows[y_lo])
    return (out - MEAN) * (np.float32(1) / STD)


def inputs(directory, out, batch):
    images = np.zeros((batch, SIZE, SIZE, 3), np.float32)
    for i, (name, _) in enumerate(IMAGES):
        images[i] = preprocess(os.path.join(directory, name))
    write_safetensors(out, {"arg0": ("F32", images),
                            "arg1": ("I32", np.zeros(batch, np.int32))})


def softmax(logits):
    logits = logits.astype(np.float64)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def check(results, output, tolerance=2e-6):
    """Each printed rank must hold the class of that rank in kiln-run's
    softmax and its probability; classes closer than the tolerance may come
    in either order (float sums may order them differently)."""
    logits = [t for t in read_safetensors(results).values() if t.ndim == 2][0]
    blocks = re.findall(r"^(\S+\.jpg)\n((?:  .*\n)+)", open(output).read(), re.M)
    if [b[0].split("/")[-1] for b in blocks] != [n for n, _ in IMAGES]:
        sys.exit(f"FAIL: blocks for {[b[0] for b in blocks]}")
    worst = 0.0
    for i, (name, lines) in enumerate(blocks):
        p = softmax(logits[i])
        ranked = np.sort(p)[::-1][:5]
        got = [line.split() for line in lines.splitlines()]
        classes = [int(g[1]) for g in got]
        if [int(g[0]) for g in got] != list(range(1, len(ranked) + 1)) or \
                len(set(classes)) != len(classes):
            sys.exit(f"FAIL: {name}: ranks {[g[0] for g in got]}, classes {classes}")
        for r, (c, g) in enumerate(zip(classes, got)):
            worst = max(worst, abs(float(g[2]) - p[c]), abs(p[c] - ranked[r]))
        if worst > tolerance:
            sys.exit(f"FAIL: {name}: classes {classes} with {[g[2] for g in got]}; "
                     f"kiln-run's softmax gives {np.argsort(-p)[:5].tolist()} "
                     f"with {ranked.tolist()}")
    print(f"PASS: {len(blocks)} images, top-5 classes in kiln-run's order, "
          f"probabilities within {worst:.1e}")


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "make":
        make(sys.argv[2])
        inputs(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif command == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {command}")
