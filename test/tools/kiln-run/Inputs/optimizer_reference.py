#!/usr/bin/env python3
"""An independent check of one optimizer step (plain Python, double precision).

  optimizer_reference.py write DIR LR
      Writes the variables (weights, zero momentum, the constant schedule with
      LR) and the inputs of optimizer-step.mlir's model into DIR.
  optimizer_reference.py check DIR AFTER sgd|lars
      Recomputes the gradients of the loss and one SGD (Nesterov, weight
      decay; the bias is not decayed) or LARS step (the bias skips the trust
      ratio and the decay) by hand, and compares every variable kiln-run saved
      after the step to 1e-6.

The model: logits = x * w + b (x [2,3], w [3,2], b [2]), mean softmax
cross-entropy over labels [1, 0].
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from reference import read_safetensors, write_safetensors  # noqa: E402

X = [[1.0, -0.5, 0.25], [0.5, 2.0, -1.0]]
W = [[0.5, -0.25], [1.0, 0.75], [-0.5, 0.125]]
B = [0.25, -0.125]
LABELS = [1, 0]
MOMENTUM, DECAY, ETA, EPSILON = 0.9, 0.01, 0.001, 1e-5


def gradients():
    """dL/dw and dL/db of the mean cross-entropy, in double."""
    n, k, m = len(X), len(W), len(B)
    dw = [[0.0] * m for _ in range(k)]
    db = [0.0] * m
    for i in range(n):
        logits = [sum(X[i][r] * W[r][c] for r in range(k)) + B[c] for c in range(m)]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        for c in range(m):
            g = (exps[c] / total - (1.0 if c == LABELS[i] else 0.0)) / n
            db[c] += g
            for r in range(k):
                dw[r][c] += X[i][r] * g
    return dw, db


def sgd(w, g, lr, decay):
    """PyTorch/TF momentum convention, Nesterov, from zero momentum."""
    g = [gi + decay * wi for gi, wi in zip(g, w)]
    v = [gi for gi in g]  # 0.9 * 0 + g
    step = [gi + MOMENTUM * vi for gi, vi in zip(g, v)]
    return [wi - lr * si for wi, si in zip(w, step)], v


def lars(w, g, lr, skip):
    """MLPerf LARS from zero momentum; norms of the undecayed gradient."""
    if skip:
        v = [lr * gi for gi in g]
    else:
        wn = math.sqrt(sum(x * x for x in w))
        gn = math.sqrt(sum(x * x for x in g))
        trust = ETA * wn / (gn + DECAY * wn + EPSILON) if wn > 0 and gn > 0 else 1.0
        v = [lr * trust * (gi + DECAY * wi) for gi, wi in zip(g, w)]
    return [wi - vi for wi, vi in zip(w, v)], v


def flat(x):
    return [v for row in x for v in row]


def main():
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "write":
        lr = float(sys.argv[3])
        write_safetensors(os.path.join(directory, "weights.safetensors"), [
            ("w", "F32", [3, 2], flat(W)), ("b", "F32", [2], B),
            ("w.momentum", "F32", [3, 2], [0.0] * 6), ("b.momentum", "F32", [2], [0.0] * 2),
            ("kiln.lr_schedule", "F64", [1], [lr])])
        write_safetensors(os.path.join(directory, "inputs.safetensors"), [
            ("arg0", "F32", [2, 3], flat(X)), ("arg1", "I32", [2], LABELS)])
        return
    after, optimizer = read_safetensors(sys.argv[3]), sys.argv[4]
    lr = read_safetensors(os.path.join(directory, "weights.safetensors"))["kiln.lr_schedule"][0]
    dw, db = gradients()
    if optimizer == "sgd":
        w, vw = sgd(flat(W), flat(dw), lr, DECAY)
        b, vb = sgd(B, db, lr, 0.0)
    else:
        w, vw = lars(flat(W), flat(dw), lr, skip=False)
        b, vb = lars(B, db, lr, skip=True)
    expected = {"w": w, "b": b, "w.momentum": vw, "b.momentum": vb}
    worst = 0.0
    for name, values in expected.items():
        for e, got in zip(values, after[name]):
            worst = max(worst, abs(got - e) / max(abs(e), 1e-3))
    print(f"{optimizer}: max relative error {worst:.2e}")
    if worst > 1e-6:
        print("MISMATCH")
        sys.exit(1)
    print("MATCH")


if __name__ == "__main__":
    main()
