#!/usr/bin/env python3
"""Compiles a model with kilnc, trains it with the executable and with the
reference interpreter kiln-run on the same seed and synthetic batch, and
checks that every step's loss agrees to a relative tolerance.

The executable's synthetic batch 0 is kiln-run's --synthetic-inputs batch,
and both initialize the variables with the reference initializers, so the
two runs start from identical states."""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"command failed ({result.returncode}): {' '.join(cmd)}\n"
                 f"{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kilnc", required=True)
    p.add_argument("--kiln-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
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
             "--log-every", "1", "--threads", str(args.threads), "--model-dir", model_dir])
        compiled = [json.loads(line)["loss"]
                    for line in open(os.path.join(model_dir, "metrics.jsonl"))
                    if json.loads(line).get("kind") == "train"]

        out = run([args.kiln_run, step_ir, "--synthetic-inputs", f"--batch={args.batch}",
                   f"--steps={args.steps}"])
        reference = [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)", out, re.M)]

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


if __name__ == "__main__":
    main()
