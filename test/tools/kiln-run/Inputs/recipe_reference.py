#!/usr/bin/env python3
"""The reference recipes' optimizers, step by step, against kiln-run.

  recipe_reference.py RECIPE KILN_RUN GRADS STEP DIR STEPS

RECIPE is surfsara-xeon or mlperf-v0.6. GRADS is the model after
--kiln-autodiff alone (its train_step returns the gradients, marked
kiln.gradient_of); STEP is the same model compiled by kilnc --recipe=RECIPE
--emit=train with the lengths shortened below. For each step k the script
writes a batch, runs GRADS on kiln-run's state of step k to get the
gradients, runs STEP from that state to get state k+1 and the learning rate,
and applies the reference update to its own state (plain Python, double
precision) with the same gradients. Every parameter and momentum tensor and
the learning rate must agree to TOLERANCE (relative to the tensor's largest
magnitude); prints the worst error and MATCH, or MISMATCH and exits 1.

The formulas are written from the reference code, not from Kiln's:

- surfsara-xeon: tensorflow/tpu models/official/resnet/resnet_main.py (TF 1.6
  era): loss += weight_decay * sum(l2_loss(v)) over every variable whose name
  has no 'batch_normalization' (so the gradient gains wd * v), then
  tf.train.MomentumOptimizer(use_nesterov=True), i.e. TF's ApplyMomentum:
  accum = accum * m + g; var -= lr * g + lr * m * accum. The learning rate is
  SURFsara/Intel's gradual_warmup_then_dec(0.1, W, 4.8, step, T): below W
  init + (peak - init) * step / W, then polynomial_decay(peak, step - W,
  T - W, 0, power=1).
- mlperf-v0.6: training_results_v0.6 Google resnet (resnet_main.py,
  lars_util.py) with tf.contrib.opt.LARSOptimizer: the same L2 term in the
  loss; current_epoch = step / (N / B); lr = plr * current_epoch / w_epochs
  while current_epoch <= w_epochs, else tf.train.polynomial_decay(plr,
  max(1, step - w_steps), T - w_steps + 1, end=1e-4, power=2) with
  w_steps = w_epochs * N // B; skip_list ['batch_normalization', 'bias']:
  other variables get trust = eta |w| / (|g| + wd |w| + eps) when both norms
  are positive, else 1, of the gradient the optimizer sees (L2 term
  included), and ApplyMomentum(var, accum, lr * trust, g, m):
  accum = accum * m + g; var -= lr * trust * accum.

Kiln's names are PyTorch's (bn1.weight, layer1.0.downsample.1.bias, fc.bias):
'batch_normalization' is a name with a bn<i> or downsample.1 component.
"""

import json
import math
import os
import random
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from reference import read_safetensors, write_safetensors  # noqa: E402

BATCH, IMAGE, CHANNELS, CLASSES = 4, 8, 3, 5
TOLERANCE = 1e-6  # measured: 4.2e-7 (surfsara-xeon), 2.7e-7 (mlperf-v0.6)

# The recipes, with the lengths the test compiles (kilnc --warmup-steps,
# --total-steps) so that a few steps cross warmup and decay.
SURFSARA = dict(init=0.1, peak=4.8, warmup=2, total=6, momentum=0.9, wd=5e-5)
# N / B = 10 / 4 = 2.5 steps per epoch, one warmup epoch: W = 2.5 steps,
# w_steps = 2 (kilnc --warmup-steps=2.5).
V06 = dict(plr=31.2, num_images=10, batch=4, w_epochs=1, train_steps=6, end=1e-4,
           momentum=0.9, wd=1e-4, eta=0.001, eps=1e-5, label_smoothing=0.1)


def is_batch_norm(name):
    return any(re.fullmatch(r"bn\d+", part) for part in name.split(".")) or \
        ".downsample.1." in name + "."


def gradient_names(path):
    """Result index -> parameter, from GRADS's train_step signature."""
    with open(path) as f:
        text = f.read()
    signature = re.search(r"func\.func @train_step\(.*?\)\s*->\s*\((.*?)\)\s*\{", text, re.S)
    results = re.split(r",\s*(?=tensor<)", signature.group(1))
    names = {}
    for i, result in enumerate(results):
        m = re.search(r"kiln\.gradient_of = @([\w.]+)", result)
        if m:
            names[i] = m.group(1)
    return names


def surfsara_lr(step):
    r = SURFSARA
    if step < r["warmup"]:
        return r["init"] + (r["peak"] - r["init"]) * step / r["warmup"]
    decay_steps = r["total"] - r["warmup"]
    return r["peak"] * (1 - min(step - r["warmup"], decay_steps) / decay_steps)


def v06_lr(step):
    r = V06
    current_epoch = step / (r["num_images"] / r["batch"])
    if current_epoch <= r["w_epochs"]:
        return r["plr"] * current_epoch / r["w_epochs"]
    w_steps = r["w_epochs"] * r["num_images"] // r["batch"]
    decay_steps = r["train_steps"] - w_steps + 1
    global_step = min(max(1, step - w_steps), decay_steps)
    return (r["plr"] - r["end"]) * (1 - global_step / decay_steps) ** 2 + r["end"]


def norm(values):
    return math.sqrt(sum(v * v for v in values))


def update(recipe, name, w, g, accum, lr):
    """One reference step of variable `name`: (w', accum')."""
    decayed = not is_batch_norm(name)
    r = SURFSARA if recipe == "surfsara-xeon" else V06
    g = [gi + r["wd"] * wi for gi, wi in zip(g, w)] if decayed else list(g)
    m = r["momentum"]
    accum = [a * m + gi for a, gi in zip(accum, g)]
    if recipe == "surfsara-xeon":
        return [wi - lr * gi - lr * m * a for wi, gi, a in zip(w, g, accum)], accum
    scaled = lr
    if not (is_batch_norm(name) or "bias" in name):
        wn, gn = norm(w), norm(g)
        if wn > 0 and gn > 0:
            scaled = lr * r["eta"] * wn / (gn + r["wd"] * wn + r["eps"])
    return [wi - scaled * a for wi, a in zip(w, accum)], accum


def model_variables(path):
    """STEP's variables without the optimizer's (what GRADS declares)."""
    return [n for n in read_safetensors(path)
            if not n.endswith(".momentum") and n != "kiln.lr_schedule"]


def subset(source, target, names):
    """Copies the tensors `names` of safetensors file `source` to `target`."""
    with open(source, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header, data = json.loads(blob[8:8 + n]), blob[8 + n:]
    out_header, out_data = {}, b""
    for name in names:
        entry = dict(header[name])
        begin, end = entry["data_offsets"]
        entry["data_offsets"] = [len(out_data), len(out_data) + end - begin]
        out_header[name] = entry
        out_data += data[begin:end]
    text = json.dumps(out_header).encode()
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + out_data)


def run(args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def relative_error(got, want):
    scale = max(max(abs(v) for v in want), 1e-30)
    return max(abs(a - b) for a, b in zip(got, want)) / scale


def main():
    recipe, kiln_run, grads, step_model, directory, steps = sys.argv[1:7]
    steps = int(steps)
    names = gradient_names(grads)
    if recipe == "mlperf-v0.6":
        # tf.losses.softmax_cross_entropy(label_smoothing=0.1): the gradients
        # come from the recipe's loss.
        with open(grads) as f:
            text = f.read()
        text, count = re.subn(r"(kiln\.softmax_cross_entropy(_backward)? [^:]*?) :",
                              r"\1 label_smoothing 1.000000e-01 :", text)
        assert count >= 2, "expected the loss and its gradient in " + grads
        grads = os.path.join(directory, "grads-smoothed.mlir")
        with open(grads, "w") as f:
            f.write(text)
    rng = random.Random(7)
    state = os.path.join(directory, "state0.safetensors")
    reference = None
    worst = 0.0
    for k in range(steps):
        batch = os.path.join(directory, f"inputs{k}.safetensors")
        write_safetensors(batch, [
            ("arg0", "F32", [BATCH, IMAGE, IMAGE, CHANNELS],
             [rng.gauss(0, 1) for _ in range(BATCH * IMAGE * IMAGE * CHANNELS)]),
            ("arg1", "I32", [BATCH], [rng.randrange(CLASSES) for _ in range(BATCH)])])
        load = [f"--load={state}"] if k else ["--seed=3"]
        gradients = os.path.join(directory, f"grads{k}.safetensors")
        grads_load = load
        if k:
            # GRADS declares no momenta and no schedule.
            grads_state = os.path.join(directory, f"grads-state{k}.safetensors")
            subset(state, grads_state, model_variables(state))
            grads_load = [f"--load={grads_state}"]
        run([kiln_run, grads, f"--inputs={batch}", f"--save-results={gradients}"] +
            grads_load + ([f"--save={state}"] if k == 0 else []))
        after = os.path.join(directory, f"state{k + 1}.safetensors")
        results = os.path.join(directory, f"results{k}.safetensors")
        run([kiln_run, step_model, f"--inputs={batch}", f"--first-step={k}",
             f"--save={after}", f"--save-results={results}"] + load)
        g = read_safetensors(gradients)
        if reference is None:
            initial = read_safetensors(state)
            reference = {n: (list(initial[n]), [0.0] * len(initial[n])) for n in names.values()}
        lr = surfsara_lr(k) if recipe == "surfsara-xeon" else v06_lr(k)
        got = read_safetensors(results)
        got_lr = got[sorted(got, key=lambda s: int(s[6:]))[-1]][0]
        worst = max(worst, abs(got_lr - lr) / abs(lr) if lr else abs(got_lr))
        kiln = read_safetensors(after)
        for index, name in names.items():
            w, accum = reference[name]
            w, accum = update(recipe, name, w, g[f"result{index}"], accum, lr)
            reference[name] = (w, accum)
            worst = max(worst, relative_error(kiln[name], w),
                        relative_error(kiln[name + ".momentum"], accum))
        state = after
    print(f"{recipe}: {steps} steps, {len(names)} parameters and their momenta, "
          f"max relative error {worst:.1e}")
    if worst > TOLERANCE:
        print("MISMATCH")
        sys.exit(1)
    print("MATCH")


if __name__ == "__main__":
    main()
