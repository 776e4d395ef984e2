"""Checks an exported torchvision model's Kiln training step against
PyTorch's training-mode step (float64, the reference) on the same values.

  compare_torch.py grads MODEL.onnx [MODEL2.onnx] --model NAME [--batch B]
      [--seed S] --rtol R --loss-rtol L [--fp32-bound]
    One batch: Kiln's loss, logits and every parameter's gradient
    (kiln-translate --import-onnx, kiln-opt --kiln-autodiff, kiln-run's
    @train_step) against PyTorch's. Each gradient by its norm-wise relative
    error ||g_kiln - g_torch|| / ||g_torch||; the loss by its relative error.
    A batch-norm gradient whose terms cancel by more than CANCELLATION is
    compared relative to that fraction of its terms' magnitude instead; with
    --fp32-bound, a gradient PyTorch's own fp32 step misses by more than R is
    held to PyTorch's error. Several files (a model's TRAINING and PRESERVE
    exports, the same parameters) are each compared with one reference.

  compare_torch.py steps MODEL.onnx --model NAME [--batch B] [--steps N]
      [--lr LR] --rtol R
    The compiled executable (kilnc, plain SGD) trains N steps on one batch
    from the exported values, PyTorch (float64) the same N steps on the same
    batch: every step's loss must agree to R, the first --early-steps to
    --early-rtol, and the loss must fall. The two runs drift apart once a
    pre-activation near a kink takes another branch in one of them (the
    weights differ by rounding after the first update, and a flip moves a
    late layer's gradient by up to a percent): R bounds that drift, the
    early steps check the update itself. PyTorch's own fp32 steps run
    alongside as the yardstick of that drift (printed per step, with the
    float64 step's pre-activations near a kink). With --state-rtol, every
    parameter and batch-norm running statistic after the first
    --early-steps (the executable's checkpoint) must equal PyTorch's to
    that tolerance: the running statistics steer every evaluation but no
    training loss (--torch-bn-momentum changes the reference's batch-norm
    momentum, to show that the check sees them). With --explain-flips (and
    --early-steps 1) the float64 reference takes the first update's
    near-kink branch choices of each fp32 run, as grads does.

Both start from the ONNX file's initializers, loaded into torchvision's module
by their state-dict names (so the comparison does not depend on what the
export's trace did to the batch-norm statistics), and map Kiln's layouts back
as docs/onnx.md states them: Conv filters HWIO -> OIHW, Gemm weights
[K, M] -> [M, K] (transB), activations NHWC -> NCHW.

ReLU kinks: fp32 and float64 take different branches of a ReLU (or ReLU6,
hard swish, hard sigmoid) only for a pre-activation within fp32's rounding of
the kink, and one flip can move a late layer's gradient by a percent on a
small batch. "grads" measures that rounding per activation call (the RMS
difference of PyTorch's fp32 and float64 inputs), marks the float64
pre-activations within three times it of a kink, and takes each one's flip
in float64 (flip_effects): unless all of them together move every gradient
by less than a tenth of --rtol the batch is refused as ill-conditioned
(choose another --seed), or with --explain-flips the reference takes the
flips that bring it closer to Kiln's step. A batch it accepts compares
rounding, not branch choices.
"""

import argparse
import copy
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
# One home for each safetensors helper: the ONNX tests' numpy writer and the
# e2e tests' reader.
sys.path.insert(0, os.path.join(HERE, "..", "Inputs"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e"))
import torchvision_models  # noqa: E402
from compare_losses import read_safetensors  # noqa: E402
from make_model import write_safetensors  # noqa: E402


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: command failed ({result.returncode}): {' '.join(cmd)}\n"
                 f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return result.stdout


class OnnxValues:
    """The initializers of an exported model (through Identity nodes) and
    how the importer lays each out: a Conv filter is transposed OIHW -> HWIO, a Gemm weight with
    transB -> [K, M]; everything else is kept."""

    def __init__(self, path):
        model = onnx.load(path)
        self.values = {i.name: numpy_helper.to_array(i)
                       for i in model.graph.initializer}
        alias = {}
        for node in model.graph.node:
            if node.op_type != "Identity" or node.input[0] not in self.values:
                continue
            if node.output[0].startswith("onnx::"):
                # A PRESERVE export's wrapper: the same parameter.
                alias[node.output[0]] = node.input[0]
            else:
                # An eval-mode export's deduplicated initializer: a parameter
                # of its own with an equal value (as the importer reads it).
                self.values[node.output[0]] = self.values[node.input[0]]
        self.layout = {}
        for node in model.graph.node:
            attrs = {a.name: onnx.helper.get_attribute_value(a)
                     for a in node.attribute}
            for index, name in enumerate(node.input):
                name = alias.get(name, name)
                if index != 1 or name not in self.values:
                    continue
                if node.op_type == "Conv":
                    self.layout[name] = "conv"
                elif node.op_type == "Gemm" and attrs.get("transB", 0):
                    self.layout[name] = "transpose"

    def to_kiln(self, name, array):
        kind = self.layout.get(name)
        if kind == "conv":
            return array.transpose(2, 3, 1, 0)
        if kind == "transpose":
            return array.T
        return array

    def load_into(self, model):
        """Copies every parameter and buffer from the initializers."""
        with torch.no_grad():
            for name, tensor in model.state_dict().items():
                if name.endswith("num_batches_tracked"):
                    continue
                if name not in self.values:
                    sys.exit(f"FAIL: the ONNX file has no initializer {name}")
                value = torch.from_numpy(self.values[name].copy())
                if tuple(value.shape) != tuple(tensor.shape):
                    sys.exit(f"FAIL: initializer {name} is {tuple(value.shape)}, "
                             f"the module's {tuple(tensor.shape)}")
                tensor.copy_(value)


# The kinks of each piecewise-linear activation torch.nn.functional applies
# (nn.ReLU, nn.ReLU6 through hardtanh, nn.Hardswish, nn.Hardsigmoid, and the
# functional calls of densenet): (kink, derivative right of it minus left).
KINKS = {
    "relu": lambda args, kwargs: [(0.0, 1.0)],
    "hardtanh": lambda args, kwargs: [
        (kwargs.get("min_val", args[0] if args else -1.0), 1.0),
        (kwargs.get("max_val", args[1] if len(args) > 1 else 1.0), -1.0)],
    "hardswish": lambda args, kwargs: [(-3.0, -0.5), (3.0, -0.5)],
    "hardsigmoid": lambda args, kwargs: [(-3.0, 1.0 / 6), (3.0, -1.0 / 6)],
}


class KinkRecorder:
    """Records the input of every activation call of KINKS, in call order."""

    def __init__(self):
        self.calls = []
        self.saved = {}

    def __enter__(self):
        for fn, kinks in KINKS.items():
            original = getattr(F, fn)
            self.saved[fn] = original

            def wrapper(x, *args, _original=original, _kinks=kinks, **kwargs):
                self.calls.append((x.detach().clone(), _kinks(args, kwargs)))
                return _original(x, *args, **kwargs)
            setattr(F, fn, wrapper)
        return self

    def __exit__(self, *exc):
        for fn, original in self.saved.items():
            setattr(F, fn, original)


class BatchNormTerms:
    """The magnitudes of the terms each batch norm's parameter gradients sum,
    per channel: sum |dy * xhat| for the scale, sum |dy| for the bias (over
    the batch and the positions), by parameter name. Their ratio to the
    gradient's own norm is the sum's condition number."""

    def __init__(self, model):
        self.model = model
        self.magnitude = {}
        self.handles = []

    def __enter__(self):
        for name, module in self.model.named_modules():
            if (isinstance(module, torch.nn.modules.batchnorm._BatchNorm)
                    and module.affine):
                self.handles.append(module.register_forward_hook(
                    lambda m, inputs, y, name=name: self.record(name, m,
                                                                inputs[0], y)))
        return self

    def record(self, name, module, x, y):
        dims = [0] + list(range(2, x.dim()))
        x = x.detach()
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, unbiased=False, keepdim=True)
        xhat = (x - mean) / torch.sqrt(var + module.eps)

        def accumulate(dy):
            for key, terms in ((f"{name}.weight", dy * xhat),
                               (f"{name}.bias", dy)):
                total = terms.abs().sum(dims).numpy()
                self.magnitude[key] = self.magnitude.get(key, 0) + total
        y.register_hook(accumulate)

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()


def torch_step(model, images, labels, terms=False):
    """PyTorch's training-mode step: the loss, the logits, the gradients by
    parameter name, the recorded activation inputs and, with `terms`, the
    batch norms' term magnitudes (BatchNormTerms)."""
    model.train()
    model.zero_grad()
    with KinkRecorder() as recorder, \
            BatchNormTerms(model if terms else torch.nn.Module()) as sums:
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
    grads = {name: p.grad.detach().numpy().copy()
             for name, p in model.named_parameters()}
    return (loss.item(), logits.detach().numpy(), grads, recorder.calls,
            sums.magnitude)


def near_kinks(calls64, calls32):
    """The float64 pre-activations within three times fp32's rounding of a
    kink: each call's root-mean-square difference between PyTorch's fp32 and
    float64 inputs (Kiln's own fp32 error is smaller still: its logits and
    gradients are ten times closer to float64 than PyTorch's fp32 ones).
    Returns call index -> one mask per kink, and their count."""
    if len(calls64) != len(calls32):
        sys.exit("FAIL: the float64 and fp32 forward passes differ in their "
                 "activation calls")
    masks, count = {}, 0
    for index, ((x64, kinks), (x32, _)) in enumerate(zip(calls64, calls32)):
        rounding = float(torch.sqrt(torch.mean((x32.double() - x64) ** 2)))
        masks[index] = [torch.abs(x64 - kink) <= 3 * rounding
                        for kink, _ in kinks]
        count += sum(int(m.sum()) for m in masks[index])
    return masks, count, sum(x.numel() for x, _ in calls64)


def kiln_gradient_names(step_ir):
    """The parameter each result of @train_step is the gradient of, by index
    (results 0 and 1 are the loss and the logits)."""
    with open(step_ir) as f:
        for line in f:
            if "func.func @train_step(" in line:
                names = re.findall(r'kiln\.gradient_of = @("[^"]*"|[^\s},]+)', line)
                return [n.strip('"') for n in names]
    sys.exit(f"FAIL: {step_ir} has no @train_step")


# Where each activation of KINKS takes `inplace` positionally after its input
# (nn.ReLU6 calls hardtanh(x, min_val, max_val, inplace)).
INPLACE_POSITION = {"relu": 0, "hardtanh": 2, "hardswish": 0,
                    "hardsigmoid": 0}


def flip_effects(model, images, labels, masks):
    """What flipping each near-kink element alone does to every gradient, by
    (call, kink, position). A flip changes the backward pass at one element
    only: the cotangent of that pre-activation gains `jump` times the
    gradient arriving at the activation's output there (the sign by the side
    of the kink), and the gradients change by that cotangent's
    vector-Jacobian product through the graph below. So one float64 forward
    and backward, then one partial backward per candidate (torch's autograd
    from the pre-activation), give the same change as a float64 step with
    that element flipped."""
    candidates = [(index, which, int(position))
                  for index, per_kink in masks.items()
                  for which, mask in enumerate(per_kink)
                  for position in torch.nonzero(mask.flatten()).flatten()]
    if len(candidates) > 400:
        sys.exit(f"FAIL: {len(candidates)} near-kink elements are too many "
                 "to explain one by one")
    calls, saved = [], {}
    for fn in KINKS:
        original = getattr(F, fn)
        saved[fn] = original

        def wrapper(x, *args, _original=original, _fn=fn, **kwargs):
            # Out of place, so that `x` stays the pre-activation in the graph.
            args = list(args)
            if len(args) > INPLACE_POSITION[_fn]:
                args[INPLACE_POSITION[_fn]] = False
            kwargs.pop("inplace", None)
            y = _original(x, *args, **kwargs)
            record = {"x": x, "points": KINKS[_fn](args, kwargs)}
            y.register_hook(lambda g, record=record: record.update(dy=g))
            calls.append(record)
            return y
        setattr(F, fn, wrapper)
    try:
        model.train()
        model.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward(retain_graph=True)
    finally:
        for fn, original in saved.items():
            setattr(F, fn, original)
    names, parameters = zip(*model.named_parameters())
    effects = {}
    for index, which, position in candidates:
        record = calls[index]
        kink, jump = record["points"][which]
        x = record["x"]
        # Positions count in the logical (row-major) order of near_kinks'
        # masks, whatever the tensors' strides.
        side = -jump if float(x.detach().reshape(-1)[position]) > kink else jump
        cotangent = torch.zeros(x.shape, dtype=x.dtype)
        cotangent.view(-1)[position] = (side *
                                         record["dy"].reshape(-1)[position])
        change = torch.autograd.grad(x, parameters, grad_outputs=cotangent,
                                     retain_graph=True, allow_unused=True)
        effects[(index, which, position)] = {
            n: (np.zeros(p.shape) if c is None else c.numpy())
            for n, p, c in zip(names, parameters, change)}
    model.zero_grad()
    return effects


def explain_flips(effects, reference, target, layout, compared, scale,
                  who):
    """The float64 reference with the branch flips that explain an fp32
    step's gradients (`target`: Kiln's, or PyTorch's own): each near-kink
    element's flip (flip_effects, mapped by `layout`) is kept when it brings
    the reference closer to the target (the sum over parameters of squared
    scaled errors). Only elements within fp32's rounding of a kink are
    candidates, so what this removes are branch choices, never an error of
    another kind."""
    def score(grads):
        return sum((np.linalg.norm(target[n] - grads[n]) / scale[n]) ** 2
                   for n in compared)

    current, best, kept = dict(reference), score(reference), []
    for key, change in effects.items():
        trial = {n: current[n] + layout(n, c) for n, c in change.items()}
        trial_score = score(trial)
        if trial_score < best:
            current, best = trial, trial_score
            kept.append(key)
    print(f"flips: {len(kept)} of {len(effects)} near-kink elements take the "
          f"other branch in {who}; the reference takes them too")
    return current, kept


def batch(args, size, classes):
    generator = torch.Generator().manual_seed(args.seed)
    images = torch.randn(args.batch, 3, size, size, generator=generator)
    labels = torch.randint(0, classes, (args.batch,), generator=generator)
    return images, labels


def relative(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


# A batch-norm gradient sum_i dy_i * xhat_i (or sum_i dy_i) whose terms cancel
# by more than this (condition number ||sum |terms| || / ||gradient||) is the
# residue of an invariance: what follows the batch norm does not see the
# channel's scale (docs/onnx.md). Ordinary batch-norm gradients of the ten
# models condition below 1e3, these above 1e4.
CANCELLATION = 1e3


def vanishing(reference):
    """The gradients that are zero by construction: a batch norm's bias whose
    output reaches only a convolution and another training-mode batch norm
    (which removes any per-channel shift; mobilenet_v2's projections) is
    computed as float64 rounding noise, ~1e-17 of the model's gradients. A
    relative error of noise means nothing: these are held to an absolute
    bound at the scale of the largest gradient instead."""
    largest = max(np.linalg.norm(g) for g in reference.values())
    return largest, {n for n, g in reference.items()
                     if np.linalg.norm(g) <= 1e-9 * largest}


def kiln_step(args, path, images, labels, tmp):
    """Kiln's loss, logits and gradients by parameter name (in Kiln's
    layouts, flattened) for one batch of the ONNX model at `path`."""
    inputs = os.path.join(tmp, "in.safetensors")
    write_safetensors(inputs, {
        "arg0": ("F32", np.ascontiguousarray(
            images.numpy().transpose(0, 2, 3, 1))),
        "arg1": ("I32", labels.numpy().astype(np.int32))})
    imported = os.path.join(tmp, "model.mlir")
    step = os.path.join(tmp, "step.mlir")
    results = os.path.join(tmp, "out.safetensors")
    # Every value printed: kiln-run reads the initial values from the IR.
    run([args.kiln_translate, "--import-onnx", path,
         "--elide-values-larger-than=-1", "-o", imported] + args.import_flag)
    run([args.kiln_opt, "--kiln-autodiff", imported, "-o", step])
    run([args.kiln_run, step, "--function=train_step", "--inputs", inputs,
         "--save-results", results])
    names = kiln_gradient_names(step)
    out = read_safetensors(results)
    gradients = {name: np.array(out[f"result{index + 2}"], np.float64)
                 for index, name in enumerate(names)}
    return out["result0"][0], np.array(out["result1"]), gradients


def grads(args):
    values = [OnnxValues(path) for path in args.onnx]
    model = torchvision_models.build(args.model, args.classes, 0, dropout=False)
    values[0].load_into(model)
    parameters = dict(model.named_parameters())
    # One reference serves every file: the step reads the parameters only
    # (a training-mode batch norm normalizes by the batch's statistics).
    for path, other in zip(args.onnx[1:], values[1:]):
        for name, p in parameters.items():
            if not np.array_equal(other.values.get(name),
                                  p.detach().numpy()):
                sys.exit(f"FAIL: {path} and {args.onnx[0]} hold different "
                         f"values of {name}")
    size = args.image_size or torchvision_models.IMAGE_SIZE[args.model]
    images, labels = batch(args, size, args.classes)

    model32 = copy.deepcopy(model)
    model = model.double()
    loss, logits, reference, calls64, magnitude = torch_step(
        model, images.double(), labels, terms=True)
    _, logits32, grads32, calls32, _ = torch_step(model32, images, labels)
    largest, zero = vanishing(reference)
    compared = [n for n in reference if n not in zero]
    # Each gradient's error relative to its norm, or for a batch-norm
    # gradient whose terms cancel by more than CANCELLATION, relative to
    # that fraction of its terms' magnitude (docs/onnx.md, "Models from
    # PyTorch"): the terms are held to the same accuracy either way.
    scale, cancelled = {}, {}
    for n in compared:
        scale[n] = np.linalg.norm(reference[n])
        if n in magnitude:
            terms = np.linalg.norm(magnitude[n])
            if terms / CANCELLATION > scale[n]:
                cancelled[n] = terms / scale[n]
                scale[n] = terms / CANCELLATION

    def error(g, n):
        return float(np.linalg.norm(g - reference[n]) / scale[n])

    if cancelled:
        print(f"{len(cancelled)} batch-norm gradients are sums cancelling by "
              f"more than {CANCELLATION:g} (condition number up to "
              f"{max(cancelled.values()):.1e}): compared relative to "
              f"1/{CANCELLATION:g} of their terms' magnitude")
    masks, count, elements = near_kinks(calls64, calls32)
    # What the comparison could see of branch flips: every near-kink element
    # flipped, in PyTorch's float64 step (the flips' effects add up: each
    # changes the backward pass at one element).
    effects, sensitivity = {}, 0.0
    if count:
        effects = flip_effects(model, images.double(), labels, masks)
        sensitivity = max(
            error(reference[n] + sum(e[n] for e in effects.values()), n)
            for n in compared)
    print(f"kinks: {count} of {elements} pre-activations within 3x fp32 "
          f"rounding of a kink; flipping them all moves a gradient by "
          f"{sensitivity:.2e} relative")
    conditioned = sensitivity <= args.rtol / 10
    if not conditioned and not args.explain_flips:
        sys.exit("FAIL: ill-conditioned batch: branch flips near a kink would "
                 f"move a gradient by more than a tenth of {args.rtol:g}; "
                 "choose another --seed, or --explain-flips")
    # PyTorch's own fp32 step, its branch choices explained as Kiln's are.
    reference32 = reference
    if not conditioned:
        reference32, _ = explain_flips(effects, reference, grads32,
                                       lambda n, c: c, compared, scale,
                                       "PyTorch's fp32 step")
    torch32 = {n: float(np.linalg.norm(grads32[n] - reference32[n]) / scale[n])
               for n in compared}
    print(f"PyTorch fp32 against float64: logits {relative(logits32, logits):.2e}, "
          f"worst gradient {max(torch32.values()):.2e}")
    bound = {n: args.rtol for n in compared}
    if args.fp32_bound:
        # Not well conditioned at fp32: PyTorch's own fp32 step misses these
        # by more than --rtol. Kiln's must be at least as close.
        loose = {n: e for n, e in torch32.items() if e > args.rtol}
        bound.update(loose)
        print(f"{len(loose)} gradients PyTorch's fp32 step misses by more than "
              f"{args.rtol:g}: held to its error")

    failed = False
    for path, layout in zip(args.onnx, values):
        if len(args.onnx) > 1:
            print(f"== {os.path.basename(path)}")
        with tempfile.TemporaryDirectory() as tmp:
            kiln_loss, kiln_logits, kiln = kiln_step(args, path, images,
                                                     labels, tmp)
        failed |= not compare_file(args, layout, model, effects,
                                   conditioned, loss, logits, reference,
                                   kiln_loss, kiln_logits, kiln, compared,
                                   zero, largest, scale, torch32, bound)
    if failed:
        sys.exit(1)


def compare_file(args, values, model, effects, conditioned,
                 loss, logits, reference, kiln_loss, kiln_logits, kiln,
                 compared, zero, largest, scale, torch32, bound):
    """Prints one file's comparison; returns whether it passed."""
    parameters = dict(model.named_parameters())
    if sorted(kiln) != sorted(parameters):
        missing = sorted(set(parameters) - set(kiln))
        extra = sorted(set(kiln) - set(parameters))
        print(f"FAIL: Kiln's gradients are not PyTorch's parameters: "
              f"missing {missing[:5]}, extra {extra[:5]}")
        return False
    for name, g in kiln.items():
        if g.size != reference[name].size:
            print(f"FAIL: gradient of {name} has {g.size} elements, "
                  f"PyTorch's {reference[name].size}")
            return False
    # PyTorch's gradients in Kiln's layouts, flattened.
    reference = {n: values.to_kiln(n, g).ravel() for n, g in reference.items()}
    if not conditioned:
        reference, _ = explain_flips(effects, reference, kiln,
                                     lambda n, c: values.to_kiln(n, c).ravel(),
                                     compared, scale, "Kiln")

    loss_error = abs(kiln_loss - loss) / abs(loss)
    logits_error = relative(kiln_logits, logits.ravel())
    print(f"loss: kiln {kiln_loss:.9g} torch {loss:.9g} relative error "
          f"{loss_error:.2e}")
    print(f"logits: relative error {logits_error:.2e}")
    errors = [(float(np.linalg.norm(kiln[n] - reference[n]) / scale[n]), n)
              for n in compared]
    errors.sort(reverse=True)
    zero_error = max((np.linalg.norm(kiln[n] - reference[n]) / largest
                      for n in zero), default=0.0)
    if zero:
        print(f"{len(zero)} gradients zero by construction: Kiln's at most "
              f"{zero_error:.2e} of the largest gradient's norm")
    for error, name in errors[:args.show]:
        print(f"gradient {name}: relative error {error:.2e} (PyTorch fp32 "
              f"{torch32[name]:.2e})")
    worst, worst_name = errors[0]
    over = max(errors, key=lambda e: e[0] / bound[e[1]])
    failed = False
    if not loss_error <= args.loss_rtol:
        print(f"FAIL: loss relative error {loss_error:.2e} > {args.loss_rtol:g}")
        failed = True
    if not logits_error <= args.loss_rtol:
        print(f"FAIL: logits relative error {logits_error:.2e} > {args.loss_rtol:g}")
        failed = True
    if not over[0] <= bound[over[1]]:
        print(f"FAIL: gradient of {over[1]}: relative error {over[0]:.2e} > "
              f"{bound[over[1]]:g}")
        failed = True
    if not zero_error <= args.rtol:
        print(f"FAIL: a gradient that is zero by construction is "
              f"{zero_error:.2e} of the largest > {args.rtol:g}")
        failed = True
    if not failed:
        print(f"PASS: loss, logits and {len(errors) + len(zero)} gradients; "
              f"worst gradient {worst:.2e} ({worst_name})")
    return not failed


# steps: PyTorch's fp32 losses within this of float64's still follow its
# trajectory (rounding, not a branch taken differently); --fp32-bound holds
# Kiln's losses to FP32_DRIFT times PyTorch fp32's drift from float64.
TRACKING = 1e-5
FP32_DRIFT = 3.0


def write_idx(directory, images, labels):
    """One batch as Fashion-MNIST-style IDX files, for kiln-data."""
    n, h, w = images.shape
    with open(os.path.join(directory, "train-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, h, w) + images.tobytes())
    with open(os.path.join(directory, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels.tobytes())


def steps(args):
    if len(args.onnx) != 1:
        sys.exit("FAIL: steps trains one ONNX file")
    args.onnx = args.onnx[0]
    values = OnnxValues(args.onnx)
    model = torchvision_models.build(args.model, args.classes, 0, dropout=False)
    values.load_into(model)
    size = args.image_size or torchvision_models.IMAGE_SIZE[args.model]
    rng = np.random.default_rng(args.seed)
    pixels = rng.integers(0, 256, (args.batch, size, size), dtype=np.uint8)
    labels = rng.integers(0, args.classes, args.batch).astype(np.uint8)
    # The executable normalizes (pixel - mean) / std and replicates a gray
    # image into the model's three channels (--convert-channels); these
    # values are exact in fp32.
    mean, std = 127.5, 64.0

    with tempfile.TemporaryDirectory() as tmp:
        raw, shards = (os.path.join(tmp, d) for d in ("raw", "data"))
        exe = args.executable or os.path.join(tmp, "train")
        os.mkdir(raw)
        write_idx(raw, pixels, labels)
        run([args.kiln_data, "idx", "--input", raw, "--output", shards,
             "--splits", "train", "--train-shards", "1", "--threads", "1",
             "--quiet"])
        if args.reuse_executable:
            if not os.path.isfile(exe):
                sys.exit(f"FAIL: --reuse-executable: no executable at {exe}")
        else:
            run([args.kilnc, args.onnx, "-o", exe, f"--batch={args.batch}",
                 f"--lr={args.lr}", "--momentum=0"])
        # The data set is exactly one batch: every step trains on all of it
        # (in a shuffled order, which neither the mean loss nor batch norm
        # sees).
        def train(steps, model_dir):
            run([exe, "--data", shards, "--steps", str(steps), "--augment",
                 "none", "--no-flip", "--convert-channels", "--mean",
                 f"{mean},{mean},{mean}", "--std", f"{std},{std},{std}",
                 "--log-every", "1", "--threads", "2", "--model-dir",
                 model_dir] + args.run_flag)
            return os.path.join(model_dir, f"ckpt-{steps:010d}.safetensors")

        model_dir = os.path.join(tmp, "run")
        train(args.steps, model_dir)
        with open(os.path.join(model_dir, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        kiln = [r["loss"] for r in rows if r.get("kind") == "train"]
        if args.state_rtol is not None:
            # Its own short run: cheaper than a checkpoint every few steps.
            kiln_state = read_safetensors(
                train(args.early_steps, os.path.join(tmp, "early")))

    model32 = copy.deepcopy(model).train()
    model = model.double().train()
    if args.torch_bn_momentum is not None:
        for module in [*model.modules(), *model32.modules()]:
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.momentum = args.torch_bn_momentum
    images = torch.from_numpy((pixels.astype(np.float64) - mean) / std)
    images = images[:, None].expand(-1, 3, -1, -1).contiguous()
    targets = torch.from_numpy(labels.astype(np.int64))
    effects = {}
    if args.explain_flips:
        # The first update's branch choices, as grads explains a step's: on
        # copies, since a training-mode forward pass moves the running
        # statistics.
        probe = copy.deepcopy(model)
        calls = [torch_step(net, x, targets)[3] for net, x in
                 ((probe, images), (copy.deepcopy(model32), images.float()))]
        masks, count, _ = near_kinks(*calls)
        if count:
            effects = flip_effects(probe, images, targets, masks)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0)
    optimizer32 = torch.optim.SGD(model32.parameters(), lr=args.lr, momentum=0)
    reference, torch32, near = [], [], []
    for step in range(args.steps):
        # PyTorch's own fp32 steps alongside, the yardstick of how far any
        # fp32 implementation drifts from float64 on this trajectory. While
        # the two still agree to rounding (TRACKING), each step's near-kink
        # pre-activations are those of the float64 step within 3x of the
        # two runs' difference (near_kinks): where an fp32 run may take
        # the other branch. Past that they are on different trajectories.
        losses, calls = [], []
        for net, opt, x in ((model, optimizer, images),
                            (model32, optimizer32, images.float())):
            opt.zero_grad()
            with KinkRecorder() as recorder:
                loss = F.cross_entropy(net(x), targets)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            calls.append(recorder.calls)
        reference.append(losses[0])
        torch32.append(losses[1])
        tracking = all(abs(t - r) <= TRACKING * abs(r)
                       for t, r in zip(torch32, reference))
        near.append(near_kinks(*calls)[1] if tracking else None)
        if step + 1 == args.early_steps:
            reference_state = copy.deepcopy(model.state_dict())
            torch32_state = {n: t.double() for n, t in
                             copy.deepcopy(model32.state_dict()).items()}
            reference32_state = reference_state
            if effects:
                (reference_state, reference32_state, first_loss,
                 first_loss32) = first_step_flips(
                    effects, model, kiln_state, torch32_state, values,
                    args.lr, images, targets)

    if len(kiln) != args.steps:
        sys.exit(f"FAIL: the executable logged {len(kiln)} losses, not {args.steps}")
    # With the first step's flips explained, step 1's reference is the
    # float64 loss after each run's own first-step branches.
    reference32 = list(reference)
    if effects and args.steps > 1:
        reference[1], reference32[1] = first_loss, first_loss32
    worst, worst32 = 0.0, 0.0
    for step, (k, r, t, r32) in enumerate(zip(kiln, reference, torch32,
                                              reference32)):
        error = abs(k - r) / abs(r)
        worst = max(worst, error)
        worst32 = max(worst32, abs(t - r32) / abs(r32))
        print(f"step {step:2d}  kiln {k:.9g}  torch {r:.9g}  relative {error:.2e}"
              f"  torch fp32 {abs(t - r32) / abs(r32):.2e}  near-kink "
              f"{'-' if near[step] is None else near[step]}")
    tracked = sum(n is not None for n in near)
    print(f"PyTorch fp32 against float64: worst {worst32:.2e} over "
          f"{args.steps} steps; within {TRACKING:g} for {tracked} steps, "
          f"with {sum(near[:tracked])} near-kink pre-activations")
    bound = args.rtol
    if args.fp32_bound:
        # An ill-conditioned trajectory: PyTorch's own fp32 steps leave
        # float64's as far. Chaotic, so not step by step (either run may
        # split first): over the run, Kiln's as far, not further.
        bound = max(bound, FP32_DRIFT * worst32)
        print(f"the losses are held to {bound:.2e} ({FP32_DRIFT:g}x PyTorch "
              f"fp32's drift, at least {args.rtol:g})")
    early = max((abs(k - r) / abs(r) for k, r in
                 zip(kiln[:args.early_steps], reference[:args.early_steps])),
                default=0.0)
    if not early <= args.early_rtol:
        sys.exit(f"FAIL: the first {args.early_steps} losses differ by "
                 f"{early:.2e} > {args.early_rtol:g}")
    if not worst <= bound:
        sys.exit(f"FAIL: losses differ by {worst:.2e} > {bound:.2e}")
    if not reference[-1] < reference[0]:
        sys.exit("FAIL: the loss did not fall")
    print(f"PASS: {args.steps} steps, worst relative difference {worst:.2e}, "
          f"{early:.2e} over the first {args.early_steps}")
    if args.state_rtol is not None:
        compare_state(kiln_state, reference_state, torch32_state,
                      reference32_state, values, args)


def first_step_flips(effects, model, kiln_state, torch32_state, values, lr,
                     images, targets):
    """The float64 reference after the first update with each fp32 run's
    branch choices (steps --explain-flips): plain SGD moves a parameter by
    -lr times a flip's change of its gradient (flip_effects), and the
    reference takes the flips that bring it closer to the run's parameters,
    as grads does with gradients. `model` has taken the float64 update.
    Returns the reference's state for the executable and for PyTorch's fp32
    run, and the float64 loss of the next step from each."""
    state = model.state_dict()
    parameters = list(next(iter(effects.values())))
    reference = {n: values.to_kiln(n, state[n].numpy()).ravel()
                 for n in parameters}
    largest = max(float(np.abs(r).max()) for r in reference.values())
    scale = {n: max(float(np.abs(r).max()), 1e-9 * largest)
             for n, r in reference.items()}

    def layout(n, change):
        return values.to_kiln(n, -lr * change).ravel()

    results = []
    for target, who in ((kiln_state, "the executable's first step"),
                        ({n: values.to_kiln(n, torch32_state[n].numpy())
                          for n in parameters}, "PyTorch's fp32 first step")):
        target = {n: np.asarray(target[n], np.float64).ravel()
                  for n in parameters}
        _, kept = explain_flips(effects, reference, target, layout,
                                parameters, scale, who)
        net = copy.deepcopy(model)
        with torch.no_grad():
            for n, p in net.named_parameters():
                for key in kept:
                    p -= lr * torch.from_numpy(effects[key][n])
            explained = copy.deepcopy(net.state_dict())
            # A copy: this forward pass moves its running statistics.
            loss = F.cross_entropy(net(images), targets).item()
        results.append((explained, loss))
    return results[0][0], results[1][0], results[0][1], results[1][1]


def compare_state(kiln_state, reference_state, torch32_state,
                  reference32_state, values, args):
    """Each floating-point parameter and buffer after --early-steps: the
    largest difference relative to the tensor's largest magnitude (a running
    variance's absolute error scales with the variance). With --fp32-bound,
    a tensor PyTorch's own fp32 steps miss by more than --state-rtol is held
    to FP32_DRIFT times their error. PyTorch fp32's state is compared with
    `reference32_state`, the reference with its own first-step branch
    choices under --explain-flips (first_step_flips)."""
    # A parameter that stays zero by construction (a batch-norm bias whose
    # gradient vanishes, as in grads) holds float64's rounding noise: it is
    # held to the same bound relative to the largest magnitude of all.
    largest = max(float(t.abs().max()) for t in reference_state.values()
                  if t.is_floating_point() and t.numel())
    names = [n for n, t in reference_state.items() if t.is_floating_point()]
    expected = {n: values.to_kiln(n, reference_state[n].numpy()).ravel()
                for n in names}
    torch32 = {n: values.to_kiln(n, torch32_state[n].numpy()).ravel()
               for n in names}
    magnitude = {}
    for name in names:
        if name not in kiln_state:
            sys.exit(f"FAIL: the executable's checkpoint has no {name}")
        if np.asarray(kiln_state[name]).shape != expected[name].shape:
            sys.exit(f"FAIL: {name} has {np.asarray(kiln_state[name]).size} "
                     f"values in the checkpoint, {expected[name].size} in "
                     "PyTorch")
        magnitude[name] = np.abs(expected[name]).max()
        if magnitude[name] <= 1e-9 * largest:
            magnitude[name] = largest
    expected32 = {n: values.to_kiln(n, reference32_state[n].numpy()).ravel()
                  for n in names}
    rows, loose = [], 0
    for name in names:
        error = (np.abs(np.asarray(kiln_state[name]) - expected[name]).max()
                 / magnitude[name])
        error32 = float(np.abs(torch32[name] - expected32[name]).max()
                        / magnitude[name])
        bound = args.state_rtol
        if args.fp32_bound and error32 > bound:
            bound, loose = FP32_DRIFT * error32, loose + 1
        rows.append((name, error, error32, bound))
    for name, error, error32, _ in sorted(rows, key=lambda r: -r[1])[:args.show]:
        print(f"{name} after {args.early_steps} steps: {error:.2e} (PyTorch "
              f"fp32 {error32:.2e})")
    if args.fp32_bound:
        print(f"{loose} variables PyTorch's fp32 steps miss by more than "
              f"{args.state_rtol:g}: held to {FP32_DRIFT:g}x its error")
    for name, error, _, bound in rows:
        if not error <= bound:
            sys.exit(f"FAIL: {name} after {args.early_steps} steps differs by "
                     f"{error:.2e} > {bound:.2e} (relative to its largest "
                     f"magnitude)")
    worst_name, worst = max(((r[0], r[1]) for r in rows), key=lambda r: r[1])
    statistics = [r[1] for r in rows
                  if r[0].endswith(("running_mean", "running_var"))]
    print(f"PASS: {len(rows)} variables after {args.early_steps} "
          f"steps; worst {worst:.2e} ({worst_name}), of the {len(statistics)} "
          f"running statistics {max(statistics, default=0.0):.2e}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["grads", "steps"])
    parser.add_argument("onnx", nargs="+",
                        help="grads: exports of one model (the same "
                        "parameters) compared against one reference")
    parser.add_argument("--model", required=True,
                        choices=torchvision_models.MODELS)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--image-size", type=int)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rtol", type=float, required=True)
    parser.add_argument("--loss-rtol", type=float)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--early-steps", type=int, default=3,
                        help="steps before branch flips near kinks can "
                        "have accumulated, held to --early-rtol")
    parser.add_argument("--early-rtol", type=float, default=1e-5)
    parser.add_argument("--state-rtol", type=float,
                        help="steps: parameters and running statistics "
                        "after --early-steps, to this tolerance")
    parser.add_argument("--torch-bn-momentum", type=float,
                        help="steps: the reference's batch-norm momentum "
                        "(PyTorch's convention; default the model's)")
    parser.add_argument("--explain-flips", action="store_true",
                        help="on an ill-conditioned batch, find the branch "
                        "flips that explain Kiln's gradients (one partial "
                        "float64 backward pass per near-kink element); "
                        "steps: those of the first update, in the variables "
                        "after it")
    parser.add_argument("--fp32-bound", action="store_true",
                        help="grads: a gradient PyTorch's own fp32 step "
                        "misses by more than --rtol is held to that error; "
                        "steps: the losses to 3x PyTorch fp32's worst drift "
                        "from float64 when that exceeds --rtol")
    parser.add_argument("--import-flag", action="append", default=[],
                        help="a kiln-translate flag (repeatable)")
    parser.add_argument("--run-flag", action="append", default=[],
                        help="steps: an executable flag (repeatable), e.g. "
                        "--conv-algorithm=direct")
    parser.add_argument("--executable",
                        help="steps: where kilnc writes the training "
                        "executable (default: a temporary directory)")
    parser.add_argument("--reuse-executable", action="store_true",
                        help="steps: run the executable at --executable, "
                        "compiled by an earlier run of the same model, "
                        "--batch and --lr, instead of compiling it again")
    parser.add_argument("--show", type=int, default=3,
                        help="gradients (steps: variables after --early-steps) "
                        "printed, worst first")
    parser.add_argument("--kiln-translate", default="kiln-translate")
    parser.add_argument("--kiln-opt", default="kiln-opt")
    parser.add_argument("--kiln-run", default="kiln-run")
    parser.add_argument("--kilnc", default="kilnc")
    parser.add_argument("--kiln-data", default="kiln-data")
    args = parser.parse_args()
    # One thread: lit runs tests side by side on two cores, where a second
    # OpenMP thread spins while the first is descheduled (docs/onnx.md).
    # Near-kink candidates depend on PyTorch's fp32 rounding, so on the
    # thread count too.
    torch.set_num_threads(1)
    if args.what == "grads":
        if args.loss_rtol is None:
            parser.error("grads needs --loss-rtol")
        grads(args)
    else:
        if args.reuse_executable and not args.executable:
            parser.error("--reuse-executable needs --executable")
        if args.explain_flips and (args.early_steps != 1
                                   or args.state_rtol is None):
            parser.error("steps --explain-flips explains the first update's "
                         "branch choices in the variables after it: it "
                         "needs --state-rtol and --early-steps 1")
        if args.state_rtol is not None and args.early_steps > args.steps:
            parser.error("--state-rtol compares after --early-steps, which "
                         "exceeds --steps")
        steps(args)


if __name__ == "__main__":
    main()
