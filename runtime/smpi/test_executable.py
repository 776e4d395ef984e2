#!/usr/bin/env python3
"""ctest smpi-executable: a training executable linked for SimGrid's SMPI
(the kilnc --smpi link line) trains on 2 and 4 simulated ranks with real
computation, against mpirun of the same model linked as usual.

The test model (test/unit/exec/test_model.cpp) trains 20 steps with Kiln's
ring allreduce on a star platform of 10 Mbit/s links. The simulated run must
leave the same checkpoint, byte for byte, and the same loss at every step as
`mpirun` does: the gradients are summed by the same communicator code in the
same order. Its --comm-trace is in simulated time: each step waits at least
for the ring of its last bucket over those links, and kiln-comm-replay of
that trace (the skeleton: compute replayed as smpi_execute) predicts the
simulated step and its exposed communication. The same with shards read by
the input pipeline's threads, evaluation and --verify-replicas on 2 ranks.
Errors: the shared object started by hand, and --threads 2.
"""

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402

STEPS = 20
BANDWIDTH = 10e6 / 8  # bytes/s
LATENCY = 10e-6  # per link
LAST_BUCKET = 396  # f32 values in the test model's last bucket (fc, conv2)
FLAGS = ["--synthetic", "--steps", str(STEPS), "--log-every", "1",
         "--allreduce", "ring"]


def check(condition, message):
    if not condition:
        raise SystemExit("smpi-executable: FAIL: " + message)


def run(command, what, expect_ok=True):
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=120)
    if expect_ok:
        check(done.returncode == 0,
              f"{what} failed (exit {done.returncode}):\n"
              f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def losses(model_dir):
    with open(os.path.join(model_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    return [(r["step"], r["loss"]) for r in rows if r.get("kind") == "train"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smpi-exe", required=True)
    parser.add_argument("--exe", required=True)
    parser.add_argument("--replay", required=True)
    parser.add_argument("--smpirun", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--make-shards", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        platform = os.path.join(tmp, "star")
        subprocess.run([sys.executable, cluster.__file__, "platform", "star",
                        platform, "--hosts", "4", "--bandwidth", "10Mbps",
                        "--latency", "10us"], check=True,
                       stdout=subprocess.DEVNULL)

        # Started without smpirun, it says how to run it.
        done = run([args.smpi_exe, "--help"], "direct start", expect_ok=False)
        check(done.returncode == 2 and
              "built for SimGrid's smpirun (kilnc --smpi)" in done.stderr,
              f"a direct start must refuse (exit {done.returncode}): "
              f"{done.stderr[-500:]}")
        # A thread pool's work would go untimed.
        done = run(cluster.run_command(platform, 2, args.smpi_exe,
                                       FLAGS + ["--threads", "2"],
                                       args.smpirun),
                   "--threads 2", expect_ok=False)
        check(done.returncode != 0 and
              "--threads 2: an executable built for SMPI" in done.stderr,
              f"--threads 2 must be refused: {done.stderr[-1000:]}")

        for ranks in (2, 4):
            sim = os.path.join(tmp, f"smpi-{ranks}")
            real = os.path.join(tmp, f"mpirun-{ranks}")
            os.makedirs(sim)
            trace = os.path.join(sim, "trace-{rank}.jsonl")
            # --comm auto: built for SMPI, it knows it runs under smpirun.
            out = run(cluster.run_command(platform, ranks, args.smpi_exe,
                                          FLAGS + ["--model-dir", sim,
                                                   "--comm-trace", trace],
                                          args.smpirun),
                      f"smpirun -np {ranks}")
            check(f"x {ranks} ranks (mpi)" in out.stderr + out.stdout,
                  f"the simulated run is not on {ranks} MPI ranks:\n"
                  f"{out.stderr[-1000:]}")
            run([args.mpirun, "-np", str(ranks), "--oversubscribe",
                 "--allow-run-as-root", args.exe] + FLAGS +
                ["--threads", "1", "--model-dir", real],
                f"mpirun -np {ranks}")
            ckpt = f"ckpt-{STEPS:010d}.safetensors"
            check(filecmp.cmp(os.path.join(sim, ckpt),
                              os.path.join(real, ckpt), shallow=False),
                  f"{ranks} ranks: the simulated run's checkpoint differs "
                  "from mpirun's")
            got, want = losses(sim), losses(real)
            check(len(got) == STEPS and got == want,
                  f"{ranks} ranks: losses differ:\n{got}\n{want}")

            # Simulated time: the last bucket's ring, 2(N-1) rounds of a
            # chunk over the sender's link up and the receiver's down, is
            # exposed at the end of every step.
            traces = [trace.replace("{rank}", str(r)) for r in range(ranks)]
            chunk = 4 * LAST_BUCKET / ranks
            ring = 2 * (ranks - 1) * (
                chunk / (BANDWIDTH * cluster.TCP_OVER_ETHERNET) + 2 * LATENCY)
            replayed = cluster.replay(
                platform, ranks, sum((["--trace", t] for t in traces), []),
                replay=args.replay, smpirun=args.smpirun)
            step = replayed["traced_step_seconds"]
            exposed = replayed["traced_exposed_seconds"]
            check(exposed > ring,
                  f"{ranks} ranks: {exposed * 1e3:.3f} ms of communication "
                  f"per simulated step, less than the last bucket's ring "
                  f"({ring * 1e3:.3f} ms): the trace is not in simulated time")
            # The skeleton against the run it was traced from (measured:
            # within 1%).
            for name, traced, predicted in (
                    ("step", step, replayed["step_seconds"]),
                    ("exposed", exposed, replayed["exposed_seconds"])):
                error = abs(predicted - traced) / traced
                check(error < 0.1,
                      f"{ranks} ranks: kiln-comm-replay's {name} "
                      f"{predicted * 1e3:.3f} ms against the simulated run's "
                      f"{traced * 1e3:.3f} ms")
            print(f"{ranks} ranks: checkpoint and {STEPS} losses identical to "
                  f"mpirun; simulated step {step * 1e3:.3f} ms, exposed "
                  f"{exposed * 1e3:.3f} ms (last ring {ring * 1e3:.3f} ms); "
                  f"replayed {replayed['step_seconds'] * 1e3:.3f} ms, "
                  f"{replayed['exposed_seconds'] * 1e3:.3f} ms")
        # Records from shards through the input pipeline's threads (which
        # SMPI does not time), and the evaluation.
        shards = os.path.join(tmp, "shards")
        run([args.make_shards, shards], "writing shards")
        data = ["--data", shards, "--augment", "none", "--epochs", "2",
                "--eval", "--verify-replicas", "--allreduce", "ring"]
        sim, real = os.path.join(tmp, "smpi-data"), os.path.join(tmp, "data")
        out = run(cluster.run_command(platform, 2, args.smpi_exe,
                                      data + ["--model-dir", sim],
                                      args.smpirun), "smpirun --data")
        check("parameters identical on all 2 ranks" in out.stderr + out.stdout,
              f"--verify-replicas under smpirun:\n{out.stderr[-1000:]}")
        run([args.mpirun, "-np", "2", "--oversubscribe", "--allow-run-as-root",
             args.exe] + data + ["--threads", "1", "--model-dir", real],
            "mpirun --data")
        ckpt = "ckpt-0000000008.safetensors"
        check(filecmp.cmp(os.path.join(sim, ckpt), os.path.join(real, ckpt),
                          shallow=False),
              "--data: the simulated run's checkpoint differs from mpirun's")
        print("2 ranks, --data and --eval: checkpoint identical to mpirun")
    print("smpi-executable: all checks passed")


if __name__ == "__main__":
    main()
