#!/usr/bin/env python3
"""ctest smpi-torus: the torus allreduce on simulated pods (torus.py)
against its time worked out by hand, a systolic program replayed with
--program, and the errors.

A step computes 10 ms, starts the reduction of one 4 MB bucket and waits
for it at once, so the exposed time is the whole reduction. The torus
allreduce cuts the bucket into two halves (lanes) that go round each ring
in opposite directions; along a dimension of d ranks a lane makes d - 1
rounds of reduce-scatter, each one chunk of its part over one link (a
torus's neighbours are one hop apart), and leaves 1/d of the part for the
next dimension; the allgathers take the same time back.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
import torus  # noqa: E402

COUNT = 1_000_000  # f32 values in the bucket
BYTES = 4 * COUNT
LINK = 1e9  # bytes/s per link and direction
LATENCY = 10e-6  # per link
CHIP = 4e9  # the loopback between the cores of a chip
CHIP_LATENCY = 2e-6


def write_trace(path, computeBefore=0.010, wait_after=0.0):
    with open(path, "w") as f:
        f.write(json.dumps({"kiln_comm_trace": 1, "rank": 0, "ranks": 1,
                            "backend": "local",
                            "buckets": [[COUNT, "f32"]]}) + "\n")
        for s in range(3):
            f.write(json.dumps({"step": s, "seconds": 0.02, "tail": 0.003,
                                "events": [["s", computeBefore, 0, 0],
                                           ["w", wait_after, 0, 0]]}) + "\n")


def check(condition, message):
    if not condition:
        raise SystemExit("smpi-torus: FAIL: " + message)


def by_hand(grid, flows_per_link):
    """Seconds of the torus allreduce: per dimension, (d - 1) rounds of a
    lane's chunk, as many chunks sharing each link direction as
    `flows_per_link` says, twice (reduce-scatter and allgather)."""
    part = BYTES / 2  # a lane's half
    total = 0
    for d, (bandwidth, latency), flows in zip(grid["dims"], grid["links"],
                                              flows_per_link):
        chunk = part / d
        total += 2 * (d - 1) * (latency + flows * chunk / bandwidth)
        part = chunk
    return total


def platform(tmp, name, shape, cores):
    directory = os.path.join(tmp, name)
    torus.write_platform(directory, shape, cores, f"{LINK / 1e9}GBps",
                         f"{LATENCY * 1e6}us", f"{CHIP / 1e9}GBps",
                         f"{CHIP_LATENCY * 1e6}us")
    return directory


def run_fails(args, platform_dir, ranks, replay_args, expect):
    stderr = cluster.replay_failure(platform_dir, ranks, replay_args,
                                    replay=args.replay, smpirun=args.smpirun)
    check(stderr is not None, f"{replay_args} should fail")
    check(expect in stderr,
          f"{replay_args}: expected '{expect}' in:\n{stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replay", required=True)
    parser.add_argument("--smpirun", required=True)
    parser.add_argument("--bin", required=True,
                        help="directory of kiln-opt, kiln-translate, kiln-sim")
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    tool = dict(replay=args.replay, smpirun=args.smpirun)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        write_trace(trace)

        # 3x3 chips of one core: every ring is three chips round, each
        # lane's chunk alone on its link direction.
        pod = platform(tmp, "3x3", (3, 3), 1)
        got = torus.replay(pod, ["--trace", trace], **tool)
        want = by_hand({"dims": [3, 3], "links": [(LINK, LATENCY)] * 2},
                       [1, 1])
        check(got["allreduce"] == "torus" and got["ranks"] == 9, f"{got}")
        check(abs(got["compute_seconds"] - 0.013) < 1e-9, f"{got}")
        check(abs(got["exposed_seconds"] - want) < 0.01 * want,
              f"3x3: exposed {got['exposed_seconds']:.6f} s, by hand "
              f"{want:.6f} s")
        print(f"smpi-torus: 3x3: {got['exposed_seconds']:.6f} s, by hand "
              f"{want:.6f} s")
        # Kiln's ring on the same pod: 2 (N - 1) rounds of 1/N of the bucket,
        # its neighbours up to two hops apart.
        ring = cluster.replay(pod, 9, ["--trace", trace], **tool)
        check(ring["exposed_seconds"] > 1.5 * got["exposed_seconds"],
              f"the ring ({ring['exposed_seconds']:.6f} s) should be much "
              f"slower than the torus ({got['exposed_seconds']:.6f} s)")

        # 2x2 chips of two cores: the cores first, through the chip
        # (the loopback gives each flow its bandwidth); then, along a ring
        # of two chips, both lanes of both cores share one direction of the
        # one link between them (four flows).
        pod = platform(tmp, "2x2x2", (2, 2), 2)
        got = torus.replay(pod, ["--trace", trace], **tool)
        want = by_hand({"dims": [2, 2, 2],
                        "links": [(CHIP, CHIP_LATENCY)] + [(LINK, LATENCY)] * 2},
                       [1, 4, 4])
        check(got["ranks"] == 8, f"{got}")
        check(abs(got["exposed_seconds"] - want) < 0.01 * want,
              f"2x2x2: exposed {got['exposed_seconds']:.6f} s, by hand "
              f"{want:.6f} s")
        print(f"smpi-torus: 2x2 chips of 2 cores: {got['exposed_seconds']:.6f} "
              f"s, by hand {want:.6f} s")

        # A systolic training step (--program): the compute is the timed
        # simulator's step, and a reduction over slow links is exposed by
        # at most its own time and at least what is left of it after the
        # step's last instruction.
        step = os.path.join(tmp, "step.mlir")
        subprocess.run([os.path.join(args.bin, "kiln-opt"), args.model,
                        "--kiln-bf16", "--kiln-build-train-step",
                        "--kiln-specialize-batch=batch=8", "-o", step],
                       check=True)
        subprocess.run([os.path.join(args.bin, "kiln-opt"), step,
                        "--kiln-convert-to-sa", "-o", step + ".sa"],
                       check=True)
        ksap = os.path.join(tmp, "step.ksap")
        subprocess.run([os.path.join(args.bin, "kiln-translate"),
                        "--export-sa-program", step + ".sa", "-o", ksap],
                       check=True)
        report = os.path.join(tmp, "report.json")
        subprocess.run([os.path.join(args.bin, "kiln-sim"), ksap,
                        "--report=none", "--json=" + report], check=True)
        with open(report) as f:
            device = json.load(f)
        seconds = device["step"]["seconds"]
        starts = [o["start"] / device["step"]["clock_hz"]
                  for o in device["ops"] if o["kind"] == "allreduce"]
        check(len(starts) == 1, f"one bucket expected, got {starts}")
        pod = platform(tmp, "3x1", (3,), 1)
        got = torus.replay(pod, ["--program", ksap, "--batch", "8"], **tool)
        # The replay prints microseconds.
        check(abs(got["device_step_seconds"] - seconds) < 1e-6 and
              abs(got["compute_seconds"] - seconds) < 1e-6,
              f"compute {got['compute_seconds']} s, kiln-sim's step "
              f"{seconds} s")
        params = got["bucket_bytes"]
        own = 2 * 2 * (LATENCY + params / 2 / 3 / LINK)
        exposed = got["exposed_seconds"]
        check(max(0, own - (seconds - starts[0])) - 1e-6 <= exposed <= own + 1e-4,
              f"--program: exposed {exposed:.6f} s, the reduction alone "
              f"{own:.6f} s, started {seconds - starts[0]:.6f} s before the "
              "step's end")
        print(f"smpi-torus: --program: step {got['step_seconds']:.6f} s, "
              f"kiln-sim {seconds:.6f} s, exposed {exposed:.6f} s")

        # Errors.
        pod = platform(tmp, "2x2", (2, 2), 1)
        run_fails(args, pod, 4, ["--trace", trace, "--allreduce", "torus",
                                 "--torus-dims", "2x3"],
                  "the torus allreduce's grid 2x3 has 6 ranks, the job 4")
        run_fails(args, pod, 4, ["--trace", trace, "--allreduce", "torus"],
                  "--allreduce torus and --torus-dims go together")
        run_fails(args, pod, 4, ["--trace", trace, "--allreduce", "torus",
                                 "--torus-dims", "2x0"],
                  "--torus-dims")
        run_fails(args, pod, 4, ["--trace", trace, "--program", ksap],
                  "give --trace or --program (one of them)")
        missing = os.path.join(tmp, "missing.ksap")
        run_fails(args, pod, 4, ["--program", missing], missing)
        run_fails(args, pod, 4, ["--program", ksap, "--set", "no_such=1"],
                  ksap + ": ")
    print("smpi-torus: PASS")


if __name__ == "__main__":
    main()
