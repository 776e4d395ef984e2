#!/usr/bin/env python3
"""Interrupts a training run the way a scheduler preempts a job.

  interrupt.py METRICS STEP LOG -- COMMAND...

Starts COMMAND (typically `mpirun ... EXE ... --model-dir DIR`) with its
stdout and stderr in LOG, waits until rank 0 has logged STEP in METRICS
(DIR/metrics.jsonl, one JSON object per line), then sends SIGTERM to the
command itself (mpirun, which forwards it to the ranks) and waits for it to
end. Prints what it did and the newest checkpoint in DIR. Fails if the run
ends before STEP, outlives the signal by a minute, or leaves no checkpoint
of the last step logged before the signal or a later one.
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time


def logged_steps(path):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    steps = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:  # a line being written
            continue
        if row.get("kind") == "train":
            steps.append(row["step"])
    return steps


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit(__doc__)
    metrics, step, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(log, "w") as out:
        run = subprocess.Popen(sys.argv[5:], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while not any(s >= step for s in logged_steps(metrics)):
            if run.poll() is not None:
                sys.exit(f"FAIL: the run ended (status {run.returncode}) before step {step}")
            if time.monotonic() > deadline:
                run.kill()
                sys.exit(f"FAIL: step {step} not logged within 300 s")
            time.sleep(0.05)
        last = max(logged_steps(metrics))
        run.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        try:
            status = run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            sys.exit("FAIL: the run outlived SIGTERM by 60 s")
    print(f"SIGTERM after step {last}: the run ended "
          f"{time.monotonic() - sent:.1f} s later with status {status}")
    names = glob.glob(os.path.join(os.path.dirname(metrics), "ckpt-*.safetensors"))
    steps = [int(re.search(r"ckpt-(\d+)", n).group(1)) for n in names]
    newest = max(steps, default=-1)
    print(f"newest checkpoint: step {newest}")
    if newest < last:
        sys.exit(f"FAIL: step {last} was complete when the signal was sent, "
                 f"the newest checkpoint is of step {newest}")


if __name__ == "__main__":
    main()
