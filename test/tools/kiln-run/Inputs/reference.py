#!/usr/bin/env python3
"""An independent reference for kiln-run's forward tests (plain Python, no numpy).

  reference.py write DIR
      Writes the variables and inputs of forward-values.mlir (and broken
      variants for the error tests) as safetensors files into DIR.
  reference.py check DIR RESULTS VARIABLES
      Recomputes the model in double precision from DIR's files and compares
      kiln-run's saved results (loss, logits) and saved variables (the batch-
      norm running statistics after the step's assigns) with it; exits 1 on
      a mismatch beyond fp32 rounding.
  reference.py decreasing LOG
      Checks that the losses of kiln-run's "step <i> loss <v>" lines in LOG
      strictly decrease (training on one fixed batch).

The model: conv 2x2 (pad bottom/right 1) -> batch_norm_train (epsilon 1e-3,
momentum 0.75) -> relu -> global_avg_pool -> dense with bias ->
softmax_cross_entropy with label smoothing 0.25.
"""

import json
import math
import struct
import sys

# Variables: exactly representable values, so the files hold what is written.
CONV_W = [[[[0.5, -1.0]], [[0.25, 0.75]]],     # [kh=0][kw][ci][co]
          [[[-0.5, 0.5]], [[1.0, -0.25]]]]     # [kh=1][kw][ci][co]
GAMMA = [1.5, 0.75]
BETA = [0.25, -0.5]
RUNNING_MEAN = [0.125, -0.25]
RUNNING_VAR = [2.0, 0.5]
FC_W = [[1.0, -0.5, 0.25], [-0.75, 0.5, 1.25]]
FC_B = [0.125, 0.0, -0.25]
# Inputs: two 3x3x1 images and their labels.
IMAGES = [[[1.0, -2.0, 0.5], [0.0, 1.5, -1.0], [2.0, 0.25, -0.5]],
          [[-1.0, 0.5, 1.0], [1.25, -0.75, 0.0], [0.5, 2.0, -1.5]]]
LABELS = [2, 0]
EPSILON, MOMENTUM, SMOOTHING = 1e-3, 0.75, 0.25


def flatten(x):
    return [v for e in x for v in flatten(e)] if isinstance(x, list) else [x]


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape, values)."""
    header, data = {}, b""
    fmt = {"F32": "<f", "I32": "<i", "F64": "<d", "I64": "<q"}
    for name, dtype, shape, values in tensors:
        raw = b"".join(struct.pack(fmt[dtype], v) for v in values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        code = {"F32": "f", "I32": "i", "I64": "q", "F64": "d"}[entry["dtype"]]
        count = (end - begin) // struct.calcsize(code)
        out[name] = list(struct.unpack("<%d%s" % (count, code), data[begin:end]))
    return out


def variables():
    return [("conv.w", "F32", [2, 2, 1, 2], flatten(CONV_W)),
            ("bn.gamma", "F32", [2], GAMMA), ("bn.beta", "F32", [2], BETA),
            ("bn.mean", "F32", [2], RUNNING_MEAN), ("bn.var", "F32", [2], RUNNING_VAR),
            ("fc.w", "F32", [2, 3], flatten(FC_W)), ("fc.b", "F32", [3], FC_B)]


def inputs():
    return [("arg0", "F32", [2, 3, 3, 1], flatten(IMAGES)),
            ("arg1", "I32", [2], LABELS)]


def write(directory):
    write_safetensors(directory + "/weights.safetensors", variables())
    write_safetensors(directory + "/inputs.safetensors", inputs())
    write_safetensors(directory + "/weights-missing.safetensors",
                      [t for t in variables() if t[0] != "fc.b"])
    write_safetensors(directory + "/weights-extra.safetensors",
                      variables() + [("fc.extra", "F32", [1], [0.0])])
    write_safetensors(directory + "/weights-badshape.safetensors",
                      [t if t[0] != "fc.w" else ("fc.w", "F32", [3, 2], t[3])
                       for t in variables()])
    write_safetensors(directory + "/inputs-badshape.safetensors",
                      [("arg0", "F32", [2, 3, 3, 2], flatten(IMAGES) * 2),
                       ("arg1", "I32", [2], LABELS)])
    write_safetensors(directory + "/inputs-badlabel.safetensors",
                      [("arg0", "F32", [2, 3, 3, 1], flatten(IMAGES)),
                       ("arg1", "I32", [2], [2, 3])])
    write_safetensors(directory + "/inputs-missing.safetensors",
                      [("arg0", "F32", [2, 3, 3, 1], flatten(IMAGES))])
    # For forward-hand.mlir: x = [[1, 2]], label 1.
    write_safetensors(directory + "/hand-inputs.safetensors",
                      [("arg0", "F32", [1, 2], [1.0, 2.0]), ("arg1", "I32", [1], [1])])


def model():
    """Returns (loss, logits, new running mean, new running var) in double."""
    n, h, w = 2, 3, 3
    # Convolution, stride 1, padding [0, 1, 0, 1]: output 3x3.
    conv = [[[[0.0] * 2 for _ in range(w)] for _ in range(h)] for _ in range(n)]
    for b in range(n):
        for oh in range(h):
            for ow in range(w):
                for co in range(2):
                    s = 0.0
                    for kh in range(2):
                        for kw in range(2):
                            ih, iw = oh + kh, ow + kw
                            if ih < h and iw < w:
                                s += IMAGES[b][ih][iw] * CONV_W[kh][kw][0][co]
                    conv[b][oh][ow][co] = s
    m = n * h * w
    pooled = [[0.0, 0.0] for _ in range(n)]
    new_mean, new_var = [], []
    for c in range(2):
        xs = [conv[b][i][j][c] for b in range(n) for i in range(h) for j in range(w)]
        mean = sum(xs) / m
        var = sum((x - mean) ** 2 for x in xs) / m
        new_mean.append(MOMENTUM * RUNNING_MEAN[c] + (1 - MOMENTUM) * mean)
        new_var.append(MOMENTUM * RUNNING_VAR[c] + (1 - MOMENTUM) * var * m / (m - 1))
        for b in range(n):
            acc = 0.0
            for i in range(h):
                for j in range(w):
                    y = GAMMA[c] * (conv[b][i][j][c] - mean) / math.sqrt(var + EPSILON) + BETA[c]
                    acc += max(y, 0.0)
            pooled[b][c] = acc / (h * w)
    logits = [[sum(pooled[b][k] * FC_W[k][j] for k in range(2)) + FC_B[j]
               for j in range(3)] for b in range(n)]
    loss = 0.0
    for b in range(n):
        top = max(logits[b])
        lse = top + math.log(sum(math.exp(v - top) for v in logits[b]))
        for j in range(3):
            q = (1 - SMOOTHING) * (1.0 if j == LABELS[b] else 0.0) + SMOOTHING / 3
            loss -= q * (logits[b][j] - lse)
    return loss / n, flatten(logits), new_mean, new_var


def close(name, got, want, failures):
    for i, (g, w) in enumerate(zip(got, want)):
        # fp32 results of double computations: a few ulps.
        if abs(g - w) > 1e-5 * max(1.0, abs(w)):
            failures.append("%s[%d]: kiln-run %.9g, reference %.9g" % (name, i, g, w))
    if len(got) != len(want):
        failures.append("%s: %d values, expected %d" % (name, len(got), len(want)))


def check(directory, results_path, variables_path):
    loss, logits, new_mean, new_var = model()
    results = read_safetensors(results_path)
    saved = read_safetensors(variables_path)
    failures = []
    close("loss", results["result0"], [loss], failures)
    close("logits", results["result1"], logits, failures)
    close("bn.mean", saved["bn.mean"], new_mean, failures)
    close("bn.var", saved["bn.var"], new_var, failures)
    close("fc.w", saved["fc.w"], flatten(FC_W), failures)
    if failures:
        print("MISMATCH\n" + "\n".join(failures))
        return 1
    print("reference loss %.9g matches" % loss)
    return 0


def decreasing(log):
    losses = [float(line.split()[3]) for line in open(log)
              if line.startswith("step ")]
    if len(losses) < 2 or any(b >= a for a, b in zip(losses, losses[1:])):
        print("losses do not decrease: %s" % losses)
        return 1
    print("%d losses decrease from %.9g to %.9g" % (len(losses), losses[0], losses[-1]))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    elif sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:5]))
    elif sys.argv[1] == "decreasing":
        sys.exit(decreasing(sys.argv[2]))
    else:
        sys.exit("usage: reference.py write DIR | check DIR RESULTS VARIABLES | decreasing LOG")
