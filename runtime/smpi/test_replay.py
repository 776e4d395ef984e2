#!/usr/bin/env python3
"""ctest smpi-replay: kiln-comm-replay on 2 and 4 simulated ranks against
what the platform gives by hand, and its errors on bad traces.

A step computes 10 ms, starts the reduction of one 4 MB bucket, computes
2 ms more, waits for it and computes 3 ms. Kiln's ring takes 2(N-1) rounds,
each one chunk of 4 MB/N over two links (the sender's up, the receiver's
down) of bandwidth B times the platform's TCP payload share, after the two
links' latency; the step is 10 ms + max(2 ms, ring) + 3 ms.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402

COUNT = 1_000_000  # f32 values in the bucket
BANDWIDTH = 1e9 / 8  # 1 Gbit/s in bytes/s
LATENCY = 0.5e-3  # per link


def write_trace(path, buckets, steps=3):
    with open(path, "w") as f:
        f.write(json.dumps({"kiln_comm_trace": 1, "rank": 0, "ranks": 1,
                            "backend": "local",
                            "buckets": [[c, "f32"] for c in buckets]}) + "\n")
        for s in range(steps):
            f.write(json.dumps({"step": s, "seconds": 0.02, "tail": 0.003,
                                "events": [["s", 0.010, 0, 0],
                                           ["p", 0.001, 0, -1],
                                           ["w", 0.001, 0, 0],
                                           ["r", 0, 0, 3]]}) + "\n")


def write_computes(path, computes):
    """A trace of steps that only compute (--jitter's input)."""
    with open(path, "w") as f:
        f.write(json.dumps({"kiln_comm_trace": 1, "rank": 0, "ranks": 1,
                            "backend": "local", "buckets": []}) + "\n")
        for s, seconds in enumerate(computes):
            f.write(json.dumps({"step": s, "seconds": seconds,
                                "tail": seconds, "events": []}) + "\n")


def check(condition, message):
    if not condition:
        raise SystemExit("smpi-replay: FAIL: " + message)


def run_fails(args, ranks, platform, replay_args, expect):
    stderr = cluster.replay_failure(platform, ranks, replay_args,
                                    replay=args.replay, smpirun=args.smpirun)
    check(stderr is not None, f"{replay_args} should fail")
    check(expect in stderr,
          f"{replay_args}: expected '{expect}' in:\n{stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replay", required=True)
    parser.add_argument("--smpirun", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        write_trace(trace, [COUNT])
        platform = os.path.join(tmp, "star")
        subprocess.run([sys.executable, cluster.__file__, "platform", "star",
                        platform, "--hosts", "4", "--bandwidth", "1Gbps",
                        "--latency", "0.5ms"], check=True,
                       stdout=subprocess.DEVNULL)
        for ranks in (2, 4):
            got = cluster.replay(platform, ranks, ["--trace", trace],
                                 replay=args.replay, smpirun=args.smpirun)
            chunk = 4 * COUNT / ranks
            ring = 2 * (ranks - 1) * (
                2 * LATENCY + chunk / (BANDWIDTH * cluster.TCP_OVER_ETHERNET))
            # The step's one reduction of 3 doubles: a few latencies more.
            step = 0.010 + 0.001 + max(0.001, ring) + 0.003
            check(got["steps"] == 2, f"{got}: 2 steps after --skip 1")
            check(abs(got["compute_seconds"] - 0.015) < 1e-9, f"{got}")
            small = got["step_seconds"] - step
            check(0 <= small < 8 * 2 * LATENCY,
                  f"{ranks} ranks: step {got['step_seconds']:.6f} s, by hand "
                  f"{step:.6f} s plus the step's small reduction")
            print(f"smpi-replay: {ranks} ranks: {got['step_seconds']:.6f} s "
                  f"per step, ring {ring:.6f} s by hand")

        # Scaling the compute 10x keeps the calls where they were in the
        # step: the progress call 10 ms after the start comes before the
        # first of the two rounds has arrived (18 ms), so the second round
        # starts only at the wait, 20 ms after the start, and one round is
        # exposed. Without a progress thread that is what the real run does.
        got = cluster.replay(platform, 2, ["--trace", trace,
                                           "--step-compute", "0.15"],
                             replay=args.replay, smpirun=args.smpirun)
        check(abs(got["compute_seconds"] - 0.15) < 1e-9, f"{got}")
        round_ = 2 * LATENCY + 2 * COUNT / (BANDWIDTH *
                                            cluster.TCP_OVER_ETHERNET)
        small = got["exposed_seconds"] - round_
        check(0 <= small < 8 * 2 * LATENCY,
              f"10x the compute exposes one ring round ({round_:.6f} s): "
              f"{got}")

        # Stragglers: the --jitter trace's steps after the first computed
        # 10, 10 and 30 ms, so each rank draws factor 1, 1 or 3 per step.
        # The slowest rank then computes 15 or 45 ms in each of the two
        # steps, and no step can end before its slowest rank.
        jitter = os.path.join(tmp, "jitter.jsonl")
        write_computes(jitter, [0.02, 0.010, 0.010, 0.030])
        jittered = ["--trace", trace, "--jitter", jitter, "--seed", "3"]
        got = cluster.replay(platform, 4, jittered, replay=args.replay,
                             smpirun=args.smpirun)
        drawn_threes = (got["compute_seconds"] / 0.015 - 1) * 8 / 2
        check(abs(drawn_threes - round(drawn_threes)) < 1e-6
              and 1 <= round(drawn_threes) <= 8,
              f"--jitter: the mean compute is not 15 ms times a mean of "
              f"eight factors 1 or 3 (at least one 3 with --seed 3): {got}")
        slowest = got["slowest_compute_seconds"]
        check(min(abs(slowest - s) for s in (0.030, 0.045)) < 1e-6,
              f"--jitter: the slowest rank's compute, averaged over 2 "
              f"steps, should be 30 or 45 ms: {got}")
        check(got["step_seconds"] >= slowest - 1e-9,
              f"--jitter: a step shorter than its slowest rank: {got}")
        again = cluster.replay(platform, 4, jittered, replay=args.replay,
                               smpirun=args.smpirun)
        check(again == got, f"--jitter with one --seed differs: {again}")
        print(f"smpi-replay: --jitter: step {got['step_seconds']:.6f} s, "
              f"slowest rank's compute {slowest:.6f} s")
        short = os.path.join(tmp, "short.jsonl")
        write_computes(short, [0.02, 0.010])
        run_fails(args, 2, platform, ["--trace", trace, "--jitter", short],
                  f"{short}: --jitter needs at least 2 steps after --skip 1 "
                  "(it has 2)")

        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"kiln_comm_trace":1,"rank":0,"ranks":1,'
                    '"backend":"local","buckets":[[10,"f32"]]}\n')
            f.write('{"step":0,"seconds":1,"tail":0,'
                    '"events":[["s",0,0,7]]}\n')
        run_fails(args, 2, platform, ["--trace", bad],
                  f"{bad}:2: event 0 names bucket 7, but the trace has 1 "
                  "buckets")
        other = os.path.join(tmp, "other.jsonl")
        write_trace(other, [COUNT // 2])
        run_fails(args, 2, platform, ["--trace", trace, "--trace", other],
                  "differ in their buckets or in the collectives")
        run_fails(args, 2, platform, ["--trace", trace, "--skip", "3"],
                  "no step left to replay after --skip 3")
    print("smpi-replay: PASS")


if __name__ == "__main__":
    main()
