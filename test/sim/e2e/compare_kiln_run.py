#!/usr/bin/env python3
"""End-to-end numerics of the systolic target against the reference.

Compiles a model's bf16 training step (kiln-opt: --kiln-bf16,
--kiln-build-train-step, --kiln-specialize-batch), runs it for a few steps on
kiln-run (the golden model) and, lowered with --kiln-convert-to-sa and
exported (kiln-translate --export-sa-program), on kiln-sim's functional mode, from the same initial variables and
synthetic batch. Checks that every step's loss and logits agree within bf16
tolerance and that the loss falls on the simulated device as it does on the
reference. Run by ctest (test/unit/sim/CMakeLists.txt).
"""
import argparse
import re
import subprocess
import sys
import tempfile


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("command failed: %s\n%s" % (" ".join(cmd), result.stderr))
    return result.stdout


def floats(text):
    return [float(x) for x in re.split(r"[,\s]+", text.strip()) if x]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kiln-opt", required=True)
    p.add_argument("--kiln-translate", required=True)
    p.add_argument("--kiln-run", required=True)
    p.add_argument("--kiln-sim", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--lr", type=float,
                   help="the training step's learning rate (default: "
                   "kiln-optimizer's)")
    p.add_argument("--no-falling-loss", action="store_true",
                   help="compare without requiring the loss to fall (a "
                   "few small steps of a large model)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        step = tmp + "/step.mlir"
        prog = tmp + "/step.ksap"
        build = "--kiln-build-train-step"
        if a.lr is not None:
            build += "=lr=%g" % a.lr
        run([a.kiln_opt, a.model, "--kiln-bf16", build,
             "--kiln-specialize-batch=batch=%d" % a.batch, "-o", step])
        ref = run([a.kiln_run, step, "--synthetic-inputs",
                   "--batch=%d" % a.batch, "--steps=%d" % a.steps,
                   "--seed=%d" % a.seed, "--print-results",
                   "--print-limit=100000"])
        run([a.kiln_opt, step, "--kiln-convert-to-sa", "-o", tmp + "/sa.mlir"])
        run([a.kiln_translate, "--export-sa-program", tmp + "/sa.mlir",
             "-o", prog])
        sim = run([a.kiln_sim, prog, "--mode=functional",
                   "--steps=%d" % a.steps, "--seed=%d" % a.seed,
                   "--print-outputs"])

    ref_loss = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", ref, re.M)]
    ref_logits = [floats(x) for x in
                  re.findall(r"^result1: tensor<[^>]*> = \[([^\]]*)\]", ref, re.M)]
    sim_loss = [float(x) for x in re.findall(r"^step \d+ .*result0 (\S+)", sim, re.M)]
    sim_logits = [floats(x) for x in re.findall(r"result1 \[([^\]]*)\]", sim)]
    if not (len(ref_loss) == len(sim_loss) == len(ref_logits) ==
            len(sim_logits) == a.steps):
        sys.exit("could not parse %d steps from the outputs:\n%s\n%s" %
                 (a.steps, ref, sim))
    failures = []
    for s in range(a.steps):
        # bf16 keeps 8 significant bits; rounding differences (fp32 versus
        # double accumulation) compound over the steps.
        tol = 4e-3 * (1 + s)
        if abs(ref_loss[s] - sim_loss[s]) > tol * abs(ref_loss[s]):
            failures.append("step %d loss: kiln-run %.6g, kiln-sim %.6g" %
                            (s, ref_loss[s], sim_loss[s]))
        worst = max(abs(x - y) / (0.1 + abs(x))
                    for x, y in zip(ref_logits[s], sim_logits[s]))
        if len(ref_logits[s]) != len(sim_logits[s]) or worst > 10 * tol:
            failures.append("step %d logits differ (worst relative %.3g)" %
                            (s, worst))
        print("step %d loss kiln-run %.6f kiln-sim %.6f" %
              (s, ref_loss[s], sim_loss[s]))
    if not a.no_falling_loss and not sim_loss[-1] < sim_loss[0] - 0.05:
        failures.append("the loss does not fall on the simulator: %s" % sim_loss)
    if failures:
        sys.exit("\n".join(failures))
    print("kiln-sim matches kiln-run over %d steps" % a.steps)


if __name__ == "__main__":
    main()
