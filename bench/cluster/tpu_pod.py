#!/usr/bin/env python3
"""The TPUv3-512 pod's time to train ResNet-50 (docs/scaling.md, "TPUv3-512
pod"): the simulated pod step (kiln-comm-replay --program on torus.py's
platform), the simulated core's own step (kiln-sim's JSON report) and the
MLPerf recipe's epochs, global batch and evaluation cadence.

  tpu_pod.py --replay REPLAY.json --report KILN_SIM.json [--cores 512]
             [--global-batch 32768] [--epochs 76] [--eval-every 4]
"""

import argparse
import json
import math

TRAIN_IMAGES = 1_281_167  # ImageNet-1k training set
EVAL_IMAGES = 50_000  # its validation set
REFERENCE_MINUTES = 3.51  # TPUv3-512, MLPerf code (REFERENCE.md)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replay", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--cores", type=int, default=512)
    parser.add_argument("--global-batch", type=int, default=32768)
    parser.add_argument("--epochs", type=float, default=76)
    parser.add_argument("--eval-every", type=float, default=4)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    with open(args.replay) as f:
        pod = json.load(f)
    with open(args.report) as f:
        device = json.load(f)
    batch = device["step"]["batch"]
    if pod["ranks"] != args.cores or batch * args.cores != args.global_batch:
        raise SystemExit(
            f"tpu_pod.py: {pod['ranks']} ranks of batch {batch} are not "
            f"{args.cores} cores of the global batch {args.global_batch}")

    core_step = device["step"]["seconds"]
    pod_step = pod["step_seconds"]
    exposed = pod["exposed_seconds"]
    steps = math.ceil(args.epochs * TRAIN_IMAGES / args.global_batch)
    evals = math.ceil(args.epochs / args.eval_every)
    # No evaluation step on the systolic target yet: the forward pass's
    # share of the training step's multiply-adds, at the same speed.
    forward = sum(o["macs"] for o in device["ops"]
                  if o["kind"] in ("conv2d", "dense"))
    eval_step = core_step * forward / device["step"]["macs"]
    eval_batches = math.ceil(EVAL_IMAGES / args.global_batch)
    train_seconds = steps * pod_step
    eval_seconds = evals * eval_batches * eval_step
    minutes = (train_seconds + eval_seconds) / 60
    figures = {
        "cores": args.cores, "batch_per_core": batch,
        "global_batch": args.global_batch, "epochs": args.epochs,
        "steps": steps, "evaluations": evals,
        "core_step_seconds": core_step,
        "core_images_per_second": batch / core_step,
        "mxu_utilization": device["step"]["mxu_utilization"],
        "exposed_allreduce_seconds": exposed,
        "pod_step_seconds": pod_step,
        "pod_images_per_second": args.global_batch / pod_step,
        "eval_step_seconds": eval_step,
        "train_seconds": train_seconds, "eval_seconds": eval_seconds,
        "minutes_to_train": minutes,
        "reference_minutes": REFERENCE_MINUTES,
        "versus_reference": minutes / REFERENCE_MINUTES - 1,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    print("| per-core step (batch {}) | allreduce exposed | pod step | "
          "images/s (per core) | time to train | against 3.51 min |"
          .format(batch))
    print("|---|---|---|---|---|---|")
    print(f"| {1e3 * core_step:.1f} ms ({batch / core_step:.0f} images/s, "
          f"MXU {100 * device['step']['mxu_utilization']:.1f}%) "
          f"| {1e3 * exposed:.2f} ms | {1e3 * pod_step:.1f} ms "
          f"| {args.global_batch / pod_step:,.0f} "
          f"({batch / pod_step:.0f}) "
          f"| {minutes:.2f} min ({steps} steps: {train_seconds:.1f} s; "
          f"{evals} evaluations: {eval_seconds:.1f} s) "
          f"| {100 * (minutes / REFERENCE_MINUTES - 1):+.0f}% |")


if __name__ == "__main__":
    main()
