#!/usr/bin/env python3
"""The systolic-target executable against kiln-sim and kiln-run.

Compiles a model with `kilnc --target=systolic` three ways from the same
flags: the executable, its device program (--emit=ksap) and its training
step (--emit=train). Trains the executable on synthetic data (its batch 0 is
kiln-run's --synthetic-inputs batch, so all three tools see one batch), runs
the program on `kiln-sim --mode=functional` and the step on kiln-run, and
checks per step:
  - executable == kiln-sim (to the 6 digits kiln-sim prints): the same simulator, program,
    initial variables and batch, so any difference is a host-runtime bug
    (feeding, bindings, the step counter, schedule overrides);
  - executable ~ kiln-run within bf16 tolerance (the device multiplies bf16
    operands with fp32 accumulation, kiln-run accumulates in double; the
    differences compound over the steps: 4e-3 relative per step, as
    test/sim/e2e/compare_kiln_run.py);
  - the loss falls.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("command failed (%d): %s\n%s\n%s" %
                 (result.returncode, " ".join(cmd), result.stdout,
                  result.stderr))
    return result.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kilnc", required=True)
    p.add_argument("--kiln-sim", required=True)
    p.add_argument("--kiln-run", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("kilnc_flags", nargs="*", help="kilnc flags, after --")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        common = [a.model, "--target=systolic", "--batch=%d" % a.batch
                  ] + a.kilnc_flags
        exe, prog, step = (os.path.join(tmp, n)
                           for n in ("train", "step.ksap", "step.mlir"))
        run([a.kilnc, *common, "-o", exe])
        run([a.kilnc, *common, "--emit=ksap", "-o", prog])
        run([a.kilnc, *common, "--emit=train", "-o", step])
        model_dir = os.path.join(tmp, "run")
        out = run([exe, "--synthetic", "--steps", str(a.steps), "--log-every",
                   "1", "--seed", str(a.seed), "--model-dir", model_dir])
        print(out.strip())
        lines = [json.loads(l)
                 for l in open(os.path.join(model_dir, "metrics.jsonl"))]
        exe_loss = [l["loss"] for l in lines if l["kind"] == "train"]
        summary = [l for l in lines if l["kind"] == "summary"][0]
        sim = run([a.kiln_sim, prog, "--mode=functional",
                   "--steps=%d" % a.steps, "--seed=%d" % a.seed])
        # kiln-run needs the batch fixed, as the compilers do.
        ref = run([a.kiln_run, step, "--synthetic-inputs",
                   "--batch=%d" % a.batch, "--steps=%d" % a.steps,
                   "--seed=%d" % a.seed])
    sim_loss = [float(x)
                for x in re.findall(r"^step \d+ result0 (\S+)", sim, re.M)]
    ref_loss = [float(x)
                for x in re.findall(r"^step \d+ loss (\S+)", ref, re.M)]
    if not len(exe_loss) == len(sim_loss) == len(ref_loss) == a.steps:
        sys.exit("expected %d losses: executable %d, kiln-sim %d, kiln-run %d"
                 % (a.steps, len(exe_loss), len(sim_loss), len(ref_loss)))
    failures = []
    for s in range(a.steps):
        e, m, r = exe_loss[s], sim_loss[s], ref_loss[s]
        print("step %2d  executable %.6f  kiln-sim %.6f  kiln-run %.6f" %
              (s, e, m, r))
        # kiln-sim prints 6 significant digits.
        if abs(e - m) > 1e-5 * abs(m):
            failures.append("step %d: executable %.7g, kiln-sim %.7g" %
                            (s, e, m))
        if abs(e - r) > 4e-3 * (1 + s) * abs(r):
            failures.append("step %d: executable %.7g, kiln-run %.7g" %
                            (s, e, r))
    if not exe_loss[-1] < exe_loss[0] - 0.05:
        failures.append("the loss does not fall: %s" % exe_loss)
    if not summary.get("device_images_per_sec", 0) > 0:
        failures.append("no simulated device rate in the summary")
    if failures:
        sys.exit("FAIL\n" + "\n".join(failures))
    print("PASS: %d steps; executable = kiln-sim, ~ kiln-run (bf16)" %
          a.steps)


if __name__ == "__main__":
    main()
