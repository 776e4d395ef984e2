#!/usr/bin/env python3
"""Compiles a model with kilnc, trains it with the executable and with the
reference interpreter kiln-run on the same seed and synthetic batch, and
checks that every step's loss agrees to a relative tolerance. With
--param-rtol, every floating-point variable after the last step (the
executable's checkpoint against kiln-run --save) must agree too, each
tensor's largest difference relative to its largest magnitude. With
--eval-rtol, both then evaluate the trained variables (the executable's
checkpoint) on that batch with the eval step, and the losses must agree too.

The executable's synthetic batch 0 is kiln-run's --synthetic-inputs batch,
and both initialize the variables with the reference initializers, so the
two runs start from identical states."""

import argparse
import array
import json
import os
import re
import struct
import subprocess
import sys
import tempfile


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"command failed ({result.returncode}): {' '.join(cmd)}\n"
                 f"{result.stdout}\n{result.stderr}")
    return result.stdout


def read_safetensors(path):
    """The F32 and F64 tensors of a safetensors file, as flat lists by name."""
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    tensors = {}
    for name, info in header.items():
        code = {"F32": "f", "F64": "d"}.get(info.get("dtype") if name != "__metadata__" else None)
        if code:
            begin, end = info["data_offsets"]
            tensors[name] = array.array(code, body[begin:end]).tolist()
    return tensors


def compare_variables(compiled_path, reference_path, rtol):
    compiled = read_safetensors(compiled_path)
    reference = read_safetensors(reference_path)
    missing = sorted(set(reference) - set(compiled))
    if missing:
        sys.exit(f"FAIL: the checkpoint lacks {len(missing)} variable(s) kiln-run has, "
                 f"e.g. {missing[0]}")
    worst, worst_name = 0.0, None
    for name, r in reference.items():
        c = compiled[name]
        if len(c) != len(r):
            sys.exit(f"FAIL: {name} has {len(c)} elements compiled, {len(r)} in kiln-run")
        scale = max(max((abs(v) for v in r), default=0.0), 1e-12)
        err = max((abs(a - b) for a, b in zip(c, r)), default=0.0) / scale
        if err > worst:
            worst, worst_name = err, name
    if worst > rtol:
        sys.exit(f"FAIL: variable {worst_name} differs by {worst:.3e} of its largest "
                 f"magnitude > {rtol:g}")
    print(f"PASS: {len(reference)} variables, max relative difference {worst:.3e}"
          + (f" ({worst_name})" if worst_name else ""))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kilnc", required=True)
    p.add_argument("--kiln-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--run-flag", action="append", default=[],
                   help="a flag for the executable (repeatable)")
    p.add_argument("--param-rtol", type=float,
                   help="also compare every variable after the last step")
    p.add_argument("--eval-rtol", type=float,
                   help="also compare the eval step's loss after training")
    p.add_argument("kilnc_flags", nargs="*", help="training-step flags, after --")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "train")
        step_ir = os.path.join(tmp, "step.mlir")
        common = [args.model, f"--batch={args.batch}"] + args.kilnc_flags
        run([args.kilnc, *common, "-o", exe])
        run([args.kilnc, *common, "--emit=train", "-o", step_ir])

        model_dir = os.path.join(tmp, "run")
        run([exe, "--synthetic", "--synthetic-batches", "1", "--steps", str(args.steps),
             "--log-every", "1", "--threads", str(args.threads), "--model-dir", model_dir]
            + args.run_flag + (["--eval"] if args.eval_rtol is not None else []))
        rows = [json.loads(line) for line in open(os.path.join(model_dir, "metrics.jsonl"))]
        compiled = [r["loss"] for r in rows if r.get("kind") == "train"]
        if args.eval_rtol is not None:
            compiled_eval = [r["loss"] for r in rows if r.get("kind") == "eval"]
            checkpoint = os.path.join(model_dir, f"ckpt-{args.steps:010d}.safetensors")
            out = run([args.kiln_run, step_ir, "--function=eval_step", f"--load={checkpoint}",
                       "--synthetic-inputs", f"--batch={args.batch}", "--steps=1"])
            reference_eval = [float(m.group(1))
                              for m in re.finditer(r"^step \d+ loss (\S+)", out, re.M)]

        saved = os.path.join(tmp, "kiln-run.safetensors")
        out = run([args.kiln_run, step_ir, "--synthetic-inputs", f"--batch={args.batch}",
                   f"--steps={args.steps}"]
                  + ([f"--save={saved}"] if args.param_rtol is not None else []))
        reference = [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)", out, re.M)]
        if args.param_rtol is not None:
            # The checkpoint of the last step.
            checkpoint = os.path.join(model_dir, f"ckpt-{args.steps:010d}.safetensors")
            compare_variables(checkpoint, saved, args.param_rtol)

    if len(compiled) != args.steps or len(reference) != args.steps:
        sys.exit(f"expected {args.steps} losses, got {len(compiled)} compiled and "
                 f"{len(reference)} reference")
    worst = 0.0
    for step, (c, r) in enumerate(zip(compiled, reference)):
        err = abs(c - r) / max(abs(r), 1e-12)
        worst = max(worst, err)
        print(f"step {step:3d}  compiled {c:.9g}  kiln-run {r:.9g}  rel {err:.2e}")
    if worst > args.rtol:
        sys.exit(f"FAIL: max relative difference {worst:.3e} > {args.rtol:g}")
    if reference[-1] >= reference[0]:
        sys.exit("FAIL: the loss did not decrease")
    print(f"PASS: {args.steps} steps, max relative difference {worst:.3e}")
    if args.eval_rtol is not None:
        if len(compiled_eval) != 1 or len(reference_eval) != 1:
            sys.exit(f"expected one eval loss each, got {compiled_eval} and {reference_eval}")
        c, r = compiled_eval[0], reference_eval[0]
        err = abs(c - r) / max(abs(r), 1e-12)
        print(f"eval      compiled {c:.9g}  kiln-run {r:.9g}  rel {err:.2e}")
        if err > args.eval_rtol:
            sys.exit(f"FAIL: eval loss relative difference {err:.3e} > {args.eval_rtol:g}")
        print(f"PASS: eval loss, relative difference {err:.3e}")


if __name__ == "__main__":
    main()
